#!/usr/bin/env bash
# Builds the kcm-rs OCI image without pulling anything: `buildah from scratch` over the root filesystem
# hack/image-rootfs.sh stages (the binary of the `image` profile: LTO, no debug info; the shared libraries
# it loads; uid 65532; Debian's CA bundle). Tags it kcm-rs:dev
# (KCM_RS_IMAGE overrides) in rootful podman's storage and prints its size.
#
# The Dockerfile builds the same layout for users with a registry; this script is what CI runs
# (no Docker daemon, no registry access here). Needs podman and buildah: apt-get install -y podman buildah runc.
#
# Usage: hack/image.sh [--binary PATH]
#   --binary  put this kcm-rs in the image instead of building the `image` profile (make test passes
#             the static amd64 binary hack/dist.sh cross-builds)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}
tag=${KCM_RS_IMAGE:-kcm-rs:dev}
die() { echo "[image] $*" >&2; exit 1; }
bin=
case ${1:-} in
  --binary) bin=${2:?--binary needs a path} ;;
  "") ;;
  *) die "usage: hack/image.sh [--binary PATH]" ;;
esac
for c in buildah podman; do
  command -v "$c" >/dev/null || die "$c is missing: apt-get install -y podman buildah runc"
done
[ -f /etc/ssl/certs/ca-certificates.crt ] || die "no CA bundle: apt-get install -y ca-certificates"

if [[ -z $bin ]]; then
  $cargo build --profile image -p kcm-rs
  bin=target/image/kcm-rs
fi
[[ -x $bin ]] || die "no kcm-rs binary at $bin"
stage=$(mktemp -d)
ctr=
cleanup() { rm -rf "$stage"; [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT
root=$stage/rootfs
"$here/image-rootfs.sh" "$bin" "$root"

ctr=$(buildah from scratch)
buildah copy "$ctr" "$root" / >/dev/null
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
buildah config --user 65532:65532 --port 10257 --entrypoint '["/usr/local/bin/kcm-rs"]' \
  --label org.opencontainers.image.title=kcm-rs --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$ctr"
previous=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
buildah commit --quiet --rm "$ctr" "$tag" >/dev/null
ctr=
# The image the tag pointed at before is left nameless by the commit: drop it (unless a container still
# uses it) so that rebuilding does not pile up copies.
now=$(podman image inspect --format '{{.Id}}' "$tag")
[ -z "$previous" ] || [ "$previous" = "$now" ] || podman rmi "$previous" >/dev/null 2>&1 || true
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "[image] $tag: $size bytes ($((size / 1024 / 1024)) MiB)"
