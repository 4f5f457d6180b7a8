#!/usr/bin/env bash
# `make test`, what CI runs (.ci/run): every check, as stages, then a table of how long each stage and
# each e2e item took, printed also when a stage fails (the exit status is then the stage's, non-zero).
#
# Usage: hack/test.sh [STAGE...]     (default: every stage, in this order)
#
#   fmt-check          cargo fmt --check
#   clippy             cargo clippy, every target, warnings denied
#   unit               cargo test of every crate but the e2e one, and hack/bench's Python tests
#   control-plane      etcd, kube-apiserver, ... from Go sources (hack/build.sh; nothing when cached)
#   recipes            the kubeadm and kind recipes up to the static pods kubeadm writes (hack/recipes.sh)
#   e2e-build          kcm-rs with its crash points and the e2e test binaries (hack/e2e.sh --build-only)
#   image-build        kcm-rs in the `image` profile (thin LTO here, see below): the image and the bench
#   image              the kcm-rs:dev image from it (hack/image.sh, buildah)
#   conformance-build  upstream's e2e.test (hack/conformance.sh --build-only; nothing when cached)
#   dist               hack/dist.sh --profile dev: the static linux amd64 and arm64 binaries cross-built,
#                      the amd64 one run, the arm64 one checked (into target/dist-check); by name only
#                      (`hack/test.sh dist`, `make dist-check`): see below
#   e2e                hack/e2e.sh --no-build in $KCM_RS_E2E_LANES lanes (2): the parallel tests, every
#                      e2e and soak suite (short seeds), the image suites, the kwokctl and envtest
#                      recipes, conformance-ci and bench-smoke
#                      ($KCM_RS_E2E_ITEMS, hack/e2e.sh's items, to run fewer)
#
# The builds come first, one at a time, each binary once: they are what the CPU is for. The e2e work,
# which mostly waits on control planes, runs after them, in lanes side by side.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}
lanes=${KCM_RS_E2E_LANES:-2}
read -r -a e2e_items <<<"${KCM_RS_E2E_ITEMS:-all image static_pod kwokctl envtest-go conformance-ci bench-smoke}"
all_stages=(fmt-check clippy unit control-plane recipes e2e-build image-build image conformance-build e2e)
# Stages run only when named. dist's cross builds would take a cold make test past 45 minutes after
# e2e, and beside the e2e lanes (even at nice 19: autogroups make nice count only within a session)
# they slowed the sharding suites by more than half and shard_faults failed its write audit.
named_stages=(dist)
# The tests prove the code, not its link: the image they build and run, and the bench smoke run,
# take the `image` profile with thin LTO over 16 codegen units, which links on both cores. The
# profile's own fat LTO with one codegen unit spends its last six minutes on one core, the longest
# stage of a cold run. `make image` and `make bench` build what ships; set these to measure that here.
export CARGO_PROFILE_IMAGE_LTO=${CARGO_PROFILE_IMAGE_LTO:-thin}
export CARGO_PROFILE_IMAGE_CODEGEN_UNITS=${CARGO_PROFILE_IMAGE_CODEGEN_UNITS:-16}

die() { printf '[test] ERROR: %s\n' "$*" >&2; exit 2; }

stage_command() {
  case $1 in
    fmt-check) $cargo fmt --all -- --check ;;
    clippy) $cargo clippy --workspace --all-targets -- -D warnings ;;
    unit) $cargo test --workspace --exclude kcm-rs-e2e && python3 -m unittest discover -s hack/bench ;;
    control-plane) "$here/build.sh" ;;
    recipes) "$here/recipes.sh" ;;
    e2e-build) "$here/e2e.sh" --build-only ;;
    image-build) $cargo build --profile image -p kcm-rs ;;
    image) "$here/image.sh" ;;
    conformance-build) "$here/conformance.sh" --build-only ;;
    dist) "$here/dist.sh" --profile dev --out target/dist-check ;;
    e2e) "$here/e2e.sh" --no-build --lanes "$lanes" "${e2e_items[@]}" ;;
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
    [[ " ${all_stages[*]} ${named_stages[*]} " == *" $s "* ]] ||
      die "unknown stage '$s' (stages: ${all_stages[*]} ${named_stages[*]})"
  done
  trap finish EXIT
  for s in "${stages[@]}"; do run_stage "$s"; done
}

main "$@"
