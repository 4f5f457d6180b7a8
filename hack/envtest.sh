#!/usr/bin/env bash
# The envtest recipes, end to end: envtest starts etcd and kube-apiserver from the binaries
# hack/build.sh builds (KUBEBUILDER_ASSETS: a directory of links to them), then a Deployment must roll
# out and a Job complete. Prints the time from nothing to each.
#   go    examples/envtest-go: controller-runtime's envtest; the example's kcmrs package starts
#         kcm-rs, KWOK and kube-scheduler beside it
#   rust  e2e/tests/envtest_rs.rs: the envtest crate (Go's envtest through bindings), KWOK, and
#         kcm_rs::ControllerManager inside the test
#
# Usage: hack/envtest.sh go|rust [--build-only | go test flags]
#   --build-only        compile the test, run nothing (hack/e2e.sh's build phase)
#   KCM_RS_BIN          the kcm-rs binary, default target/debug/kcm-rs
#   KUBE_SCHEDULER_BIN  default build.sh's kube-scheduler; set but empty: no scheduler, and the
#                       test binds its pods to the fake node itself
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
# shellcheck source=versions.env
source "$here/versions.env"
cache=${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}
bin=$cache/bin
kube=$bin/kube-$KUBE_VERSION
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
cargo=${CARGO:-cargo}
lang=${1:-}
[[ $lang == go || $lang == rust ]] || { echo "usage: hack/envtest.sh go|rust [--build-only | go test flags]" >&2; exit 2; }
shift

assets=$cache/envtest-assets-$KUBE_VERSION-$ETCD_VERSION
mkdir -p "$assets"
ln -sf "$bin/etcd-$ETCD_VERSION/etcd" "$assets/etcd"
ln -sf "$kube/kube-apiserver" "$assets/kube-apiserver"
ln -sf "$kube/kubectl" "$assets/kubectl"
for f in etcd kube-apiserver kubectl; do
  [[ -x $assets/$f ]] || { echo "[envtest] no $f: run hack/build.sh" >&2; exit 1; }
done
export KUBEBUILDER_ASSETS=$assets
KCM_RS_BIN=$(realpath "${KCM_RS_BIN:-target/debug/kcm-rs}")
export KCM_RS_BIN KWOK_BIN=$bin/kwok-$KWOK_VERSION/kwok KWOK_CONFIG=$PWD/hack/kwok/stages.yaml
export KUBE_SCHEDULER_BIN=${KUBE_SCHEDULER_BIN-$kube/kube-scheduler}
[[ -x $KWOK_BIN ]] || { echo "[envtest] no $KWOK_BIN: run hack/build.sh" >&2; exit 1; }
if [[ $lang == rust ]]; then
  [[ ${1:-} == --build-only ]] && exec $cargo test -p kcm-rs-e2e --test envtest_rs --no-run
  exec $cargo test -p kcm-rs-e2e --test envtest_rs -- --nocapture
fi
if [[ ${1:-} != --build-only && ! -x $KCM_RS_BIN ]]; then
  echo "[envtest] no kcm-rs at $KCM_RS_BIN: cargo build -p kcm-rs, or set KCM_RS_BIN" >&2
  exit 1
fi
cd examples/envtest-go
if [[ ${1:-} == --build-only ]]; then
  go vet ./... && go test -count=1 -run '^$' ./... >/dev/null
  exit
fi
go test -count=1 -v "$@" ./...
