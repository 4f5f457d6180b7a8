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
#   recipes            the kubeadm, kind, k3d and k3s recipes up to the static pods (hack/recipes.sh)
#   e2e-build          kcm-rs with its crash points and the e2e test binaries (hack/e2e.sh --build-only)
#   dist               hack/dist.sh --profile dev --arch amd64: the static linux amd64 release binary
#                      cross-built into target/dist-check and run (`make dist` builds arm64 as well)
#   image              the kcm-rs:dev image from dist's amd64 binary (hack/image.sh --binary, buildah)
#   conformance-build  upstream's e2e.test (hack/conformance.sh --build-only; nothing when cached)
#   e2e                hack/e2e.sh --no-build in $KCM_RS_E2E_LANES lanes (2): the parallel tests, every
#                      e2e and soak suite (short seeds), the image suites, the kwokctl and envtest
#                      recipes, conformance-ci and bench-smoke (on dist's amd64 binary too)
#                      ($KCM_RS_E2E_ITEMS, hack/e2e.sh's items, to run fewer)
#
# The builds come first, one at a time, each binary once: they are what the CPU is for. The e2e work,
# which mostly waits on control planes, runs after them, in lanes side by side.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}
lanes=${KCM_RS_E2E_LANES:-2}
read -r -a e2e_items <<<"${KCM_RS_E2E_ITEMS:-all image static_pod kwokctl envtest-go envtest-rs conformance-ci bench-smoke}"
all_stages=(fmt-check clippy unit control-plane recipes e2e-build dist image conformance-build e2e)
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

stage_command() {
  case $1 in
    fmt-check) $cargo fmt --all -- --check ;;
    clippy) $cargo clippy --workspace --all-targets -- -D warnings ;;
    unit) $cargo test --workspace --exclude kcm-rs-e2e && python3 -m unittest discover -s hack/bench ;;
    control-plane) "$here/build.sh" ;;
    recipes) "$here/recipes.sh" ;;
    e2e-build) "$here/e2e.sh" --build-only ;;
    dist) "$here/dist.sh" --profile dev --arch amd64 --out "$dist_dir" ;;
    image) "$here/image.sh" --binary "$(release_bin)" ;;
    conformance-build) "$here/conformance.sh" --build-only ;;
    e2e) KCM_RS_BENCH_BIN=$(release_bin) "$here/e2e.sh" --no-build --lanes "$lanes" "${e2e_items[@]}" ;;
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
    [[ " ${all_stages[*]} " == *" $s "* ]] || die "unknown stage '$s' (stages: ${all_stages[*]})"
  done
  trap finish EXIT
  for s in "${stages[@]}"; do run_stage "$s"; done
}

main "$@"
