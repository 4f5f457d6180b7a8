#!/usr/bin/env bash
# Stages the root filesystem of the kcm-rs image into ROOT: the binary BIN, exactly the shared
# libraries it loads (from ldd: glibc, libm, libgcc_s, the loader; symlinks resolved; none for the static
# binaries of hack/dist.sh), /etc/passwd and
# /etc/group entries for uid 65532, Debian's CA bundle, and a /tmp. One layout for both builds:
# hack/image.sh (buildah, CI) and the Dockerfile (users with a registry).
# Usage: hack/image-rootfs.sh BIN ROOT
set -euo pipefail
bin=$1
root=$2
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"
install -m 0755 "$bin" "$root/usr/local/bin/kcm-rs"
# ldd fails on a static executable: it has nothing to stage.
{ ldd "$bin" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
  install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$root/tmp"
