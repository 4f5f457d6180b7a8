#!/usr/bin/env bash
# Builds the kcm-rs OCI image without pulling anything: `buildah from scratch`, the release (profile image: LTO, stripped)
# binary, exactly the shared libraries it links (from ldd: glibc, libm, libgcc_s, the loader), an
# /etc/passwd entry for uid 65532, and the CA bundle of Debian's ca-certificates. Tags it kcm-rs:dev
# (KCM_RS_IMAGE overrides) in rootful podman's storage and prints its size.
#
# The Dockerfile builds the same layout for users with a registry; this script is what CI runs
# (no Docker daemon, no registry access here). Needs podman and buildah: apt-get install -y podman buildah runc.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}
tag=${KCM_RS_IMAGE:-kcm-rs:dev}
die() { echo "[image] $*" >&2; exit 1; }
for c in buildah podman; do
  command -v "$c" >/dev/null || die "$c is missing: apt-get install -y podman buildah runc"
done
[ -f /etc/ssl/certs/ca-certificates.crt ] || die "no CA bundle: apt-get install -y ca-certificates"

$cargo build --profile image -p kcm-rs
bin=target/image/kcm-rs
stage=$(mktemp -d)
ctr=
cleanup() { rm -rf "$stage"; [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT
root=$stage/rootfs
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"
install -m 0755 "$bin" "$root/usr/local/bin/kcm-rs"
# Every library the binary loads, at the path the loader looks for it (symlinks resolved).
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
  install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$root/tmp"

ctr=$(buildah from scratch)
buildah copy "$ctr" "$root" / >/dev/null
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
buildah config --user 65532:65532 --port 10257 --entrypoint '["/usr/local/bin/kcm-rs"]' \
  --label org.opencontainers.image.title=kcm-rs --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$ctr"
buildah commit --quiet --rm "$ctr" "$tag" >/dev/null
ctr=
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "[image] $tag: $size bytes ($((size / 1024 / 1024)) MiB)"
