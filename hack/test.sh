#!/usr/bin/env bash
# `make test`, what CI runs (.ci/run): every check, as stages, then a table of how long each stage and
# each e2e item took, printed also when a stage fails (the exit status is then the stage's, non-zero).
#
# Usage: hack/test.sh [STAGE...]     (default: every stage, in this order)
#
#   fmt-check          cargo fmt --check
#   unit               cargo test of every crate but the e2e one (every target built, benches too), and
#                      hack/bench's Python tests
#   control-plane      etcd, kube-apiserver, ... from Go sources (hack/build.sh; nothing when cached)
#   recipes            the kubeadm, kind, k3d and k3s recipes up to the static pods (hack/recipes.sh)
#   e2e-build          kcm-rs with its crash points and the e2e test binaries (hack/e2e.sh --build-only)
#   dist               hack/dist.sh --profile dev --arch amd64: the static linux amd64 release binary
#                      cross-built into target/dist-check and run (`make dist` builds arm64 as well)
#   image              the kcm-rs:dev image from dist's amd64 binary (hack/image.sh --binary, buildah)
#   conformance-build  upstream's e2e.test (hack/conformance.sh --build-only; nothing when cached)
#   e2e                hack/e2e.sh --no-build in $KCM_RS_E2E_LANES lanes (3): the parallel tests, every
#                      e2e and soak suite (short seeds), the image suites, the kwokctl and envtest
#                      recipes, conformance-ci and bench-smoke (on dist's amd64 binary too)
#                      ($KCM_RS_E2E_ITEMS, hack/e2e.sh's items, to run fewer)
#
#   clippy             cargo clippy, every target, warnings denied (not in the default list: see below)
#
# The builds come first, one at a time, each binary once: they are what the CPU is for. The e2e work,
# which mostly waits on control planes, runs after them, in lanes side by side.
#
# Clippy lints inside the builds instead of in a stage of its own. `cargo clippy` is `cargo check` with
# clippy-driver wrapping rustc for the workspace's crates, so a separate stage compiled every crate a
# second time for its lints alone. Here the unit, e2e-build and e2e
# stages' cargo runs with the same two variables cargo clippy sets (RUSTC_WORKSPACE_WRAPPER and
# CLIPPY_ARGS, warnings denied), so the builds the tests need also lint every target `cargo clippy
# --workspace --all-targets` does, plus the kcm-rs binary with its crash points. Dependencies are
# built by rustc as before. CLIPPY_ARGS's format is clippy's own, so a probe first checks that
# clippy-driver denies a lint through it: a format change fails the run instead of silencing the lints.
# The benches, which clippy only checked, are now compiled and linked, so the saving is smaller than
# the stage was (the figures: the commit that made this change). A plain `cargo build` after
# `make test` rebuilds the workspace's crates once (not their dependencies).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}
lanes=${KCM_RS_E2E_LANES:-3}
read -r -a e2e_items <<<"${KCM_RS_E2E_ITEMS:-all image static_pod kwokctl envtest-go envtest-rs conformance-ci bench-smoke}"
all_stages=(fmt-check unit control-plane recipes e2e-build dist image conformance-build e2e)
known_stages=("${all_stages[@]}" clippy)
# The image and the bench smoke run take the release binary that dist cross-builds for amd64, in the
# dev profile: the tests prove the code and the static link that users download, not the optimiser.
# One build then serves three checks; the `image` profile's release build they took before was the
# longest stage of a cold run (602 s, against 330 s for both dist targets). `make image`, `make dist`
# and `make bench` build what ships.
dist_dir=target/dist-check
release_bin() {
  local bins=("$dist_dir"/kcm-rs-v*-linux-amd64)
  [[ -x ${bins[0]} ]] || die "no amd64 binary in $dist_dir: run the dist stage first"
  printf '%s\n' "${bins[0]}"
}

die() { printf '[test] ERROR: %s\n' "$*" >&2; exit 2; }

clippy_driver=$(rustc --print sysroot)/bin/clippy-driver
# `cargo clippy -- -D warnings` passes its arguments to clippy-driver this way.
clippy_args=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__

# Runs a command with clippy-driver linting the workspace's crates as they compile.
linted() { RUSTC_WORKSPACE_WRAPPER=$clippy_driver CLIPPY_ARGS=$clippy_args "$@"; }

# Fails unless clippy-driver, given CLIPPY_ARGS as above, denies a clippy lint (needless_return).
lint_probe() {
  [[ -x $clippy_driver ]] || die "no clippy-driver at $clippy_driver: rustup component add clippy"
  local dir rc=0
  dir=$(mktemp -d)
  printf 'pub fn probe() -> i32 {\n    return 3;\n}\n' >"$dir/probe.rs"
  CLIPPY_ARGS=$clippy_args "$clippy_driver" rustc --edition 2021 --crate-type lib --emit metadata \
    --out-dir "$dir" "$dir/probe.rs" 2>/dev/null || rc=$?
  rm -rf "$dir"
  ((rc != 0)) || die "clippy-driver did not deny a lint through CLIPPY_ARGS=$clippy_args: has its format" \
    "changed? The builds would not lint; run the clippy stage (hack/test.sh clippy) instead"
}

stage_command() {
  case $1 in
    fmt-check) $cargo fmt --all -- --check ;;
    clippy) $cargo clippy --workspace --all-targets -- -D warnings ;;
    unit)
      lint_probe
      linted $cargo test --workspace --exclude kcm-rs-e2e --all-targets --no-run &&
        linted $cargo test --workspace --exclude kcm-rs-e2e && python3 -m unittest discover -s hack/bench
      ;;
    control-plane) "$here/build.sh" ;;
    recipes) "$here/recipes.sh" ;;
    e2e-build) linted "$here/e2e.sh" --build-only ;;
    dist) "$here/dist.sh" --profile dev --arch amd64 --out "$dist_dir" ;;
    image) "$here/image.sh" --binary "$(release_bin)" ;;
    conformance-build) "$here/conformance.sh" --build-only ;;
    e2e) KCM_RS_BENCH_BIN=$(release_bin) linted "$here/e2e.sh" --no-build --lanes "$lanes" "${e2e_items[@]}" ;;
  esac
}

# Rows: stage, seconds, result. The e2e items' rows (hack/e2e.sh's format) go to their own file.
stages_tsv=$(mktemp)
export KCM_RS_TIMINGS
KCM_RS_TIMINGS=$(mktemp)
started=$SECONDS

run_stage() {
  local name=$1 t0=$SECONDS rc=0
  printf '\n[test] ===== %s =====\n' "$name"
  stage_command "$name" || rc=$?
  local result=ok
  ((rc == 0)) || result="FAILED (exit $rc)"
  printf '%s\t%s\t%s\n' "$name" $((SECONDS - t0)) "$result" >>"$stages_tsv"
  return "$rc"
}

print_table() {
  printf '\n[test] wall time by stage\n'
  printf '%-34s %8s  %s\n' stage seconds result
  local name secs result
  while IFS=$'\t' read -r name secs result; do
    printf '%-34s %8s  %s\n' "$name" "$secs" "$result"
    [[ $name == e2e ]] || continue
    # Each lane's items in the order they ran, then the lane's total.
    sort -t$'\t' -k2,2n -s "$KCM_RS_TIMINGS" | awk -F'\t' '
      function total() { if (lane != "") printf "  %-32s %8s\n", "lane " lane " total", sum }
      $2 != lane { total(); lane = $2; sum = 0 }
      { sum += $3; tests = ($5 == "-") ? "" : sprintf("  (%s passed, %s failed)", $5, $6)
        printf "  %-32s %8s  %s%s\n", "lane " $2 ": " $1, $3, $4, tests }
      END { total() }'
  done <"$stages_tsv"
  printf '%-34s %8s\n' total $((SECONDS - started))
}

finish() {
  local rc=$?
  print_table
  rm -f "$stages_tsv" "$KCM_RS_TIMINGS"
  exit "$rc"
}

main() {
  local stages=("$@") s
  ((${#stages[@]})) || stages=("${all_stages[@]}")
  for s in "${stages[@]}"; do
    [[ " ${known_stages[*]} " == *" $s "* ]] || die "unknown stage '$s' (stages: ${known_stages[*]})"
  done
  trap finish EXIT
  for s in "${stages[@]}"; do run_stage "$s"; done
}

main "$@"
