#!/usr/bin/env bash
# Release binaries: kcm-rs for linux amd64 and arm64, statically linked (musl), cross-compiled with
# cargo-zigbuild (zig compiles ring's C and assembly and links, for both targets, from this amd64
# machine), into dist/ with a SHA256SUMS file. Then checks them: the amd64 binary runs here and its
# `--version` names this version and commit; the arm64 one is a static aarch64 executable.
#
# Usage: hack/dist.sh [--profile PROFILE] [--arch ARCHS] [--out DIR]
#   --profile  cargo profile (default `image`: fat LTO, one codegen unit, no debug info; what the image ships).
#              make test passes `dev`: it checks the cross build and the static link, not the
#              optimiser, in a quarter of the time (see hack/test.sh).
#   --arch     which of them, comma-separated (default amd64,arm64). make test builds amd64 only: the
#              one its image and bench smoke run (arm64 was almost half of the stage's time).
#   --out      where the binaries go (default dist/)
# Installs what it lacks: the two rustup targets, zig (PyPI's ziglang) and cargo-zigbuild (crates.io),
# at the versions below.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}
profile=image out=dist archs=amd64,arm64
while (($#)); do
  case $1 in
    --profile) profile=$2; shift 2 ;;
    --arch) archs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: hack/dist.sh [--profile PROFILE] [--arch ARCHS] [--out DIR]" >&2; exit 2 ;;
  esac
done
# Pinned so that a release is rebuilt with the same linker: zig 0.17.1 and cargo-zigbuild 0.24.1
# built kcm-rs v0.1.0's first binaries (2026-11-26).
ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.1
declare -A targets=([amd64]=x86_64-unknown-linux-musl [arm64]=aarch64-unknown-linux-musl)
IFS=, read -r -a arches <<<"$archs"
for arch in "${arches[@]}"; do
  [[ -n ${targets[$arch]:-} ]] || { echo "hack/dist.sh: unknown --arch '$arch' (amd64, arm64)" >&2; exit 2; }
done

log() { printf '[dist] %s\n' "$*" >&2; }
fail() { printf '[dist] FAILED: %s\n' "$*" >&2; exit 1; }

installed=$(rustup target list --installed)
for arch in "${arches[@]}"; do
  t=${targets[$arch]}
  grep -qx "$t" <<<"$installed" || { log "adding rustup target $t"; rustup target add "$t" >&2; }
done
python3 -m ziglang version >/dev/null 2>&1 ||
  { log "installing zig (ziglang $ZIGLANG_VERSION)"; python3 -m pip install -q "ziglang==$ZIGLANG_VERSION" >&2; }
command -v cargo-zigbuild >/dev/null ||
  { log "installing cargo-zigbuild $CARGO_ZIGBUILD_VERSION"; $cargo install -q --locked "cargo-zigbuild@$CARGO_ZIGBUILD_VERSION" >&2; }

version=v$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# cargo names the dev profile's directory `debug`.
dir=$profile; [[ $profile == dev ]] && dir=debug
mkdir -p "$out"
rm -f "$out"/kcm-rs-* "$out/SHA256SUMS"
for arch in "${arches[@]}"; do
  t=${targets[$arch]}
  log "$arch: building ($t, profile $profile)"
  KCM_RS_GIT_COMMIT=$commit $cargo zigbuild --locked --profile "$profile" --target "$t" -p kcm-rs --bin kcm-rs >&2
  cp "target/$t/$dir/kcm-rs" "$out/kcm-rs-$version-linux-$arch"
done
(cd "$out" && sha256sum kcm-rs-"$version"-linux-* >SHA256SUMS)

# The checks: a static executable for the right machine each, and the amd64 one runs here.
for arch in "${arches[@]}"; do
  bin=$out/kcm-rs-$version-linux-$arch
  desc=$(file -b "$bin")
  case $arch in amd64) machine="x86-64" ;; arm64) machine="ARM aarch64" ;; esac
  [[ $desc == *"$machine"* ]] || fail "$bin is not an $machine executable: $desc"
  [[ $desc == *"statically linked"* || $desc == *"static-pie linked"* ]] || fail "$bin is not static: $desc"
  log "$arch: $(stat -c %s "$bin") bytes, $desc"
done
if [[ " ${arches[*]} " == *" amd64 "* ]]; then
  got=$("$out/kcm-rs-$version-linux-amd64" --version)
  [[ $got == "kcm-rs $version (commit $commit)" ]] || fail "--version printed '$got', want 'kcm-rs $version (commit $commit)'"
  log "amd64 runs: $got"
fi
(cd "$out" && sha256sum -c --quiet SHA256SUMS) || fail "SHA256SUMS does not match"
cat "$out/SHA256SUMS"
