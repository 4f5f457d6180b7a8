#!/usr/bin/env bash
# The envtest recipe (examples/envtest-go), end to end: controller-runtime's envtest starts etcd and
# kube-apiserver from the binaries hack/build.sh builds (KUBEBUILDER_ASSETS: a directory of links to
# them), and the example's kcmrs package starts kcm-rs, KWOK and kube-scheduler beside them; a
# Deployment must roll out and a Job complete. Prints the time from nothing to each.
#
# Usage: hack/envtest-go.sh [--build-only | go test flags]
#   --build-only        vet and compile the example's test, run nothing (hack/e2e.sh's build phase)
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

assets=$cache/envtest-assets-$KUBE_VERSION-$ETCD_VERSION
mkdir -p "$assets"
ln -sf "$bin/etcd-$ETCD_VERSION/etcd" "$assets/etcd"
ln -sf "$kube/kube-apiserver" "$assets/kube-apiserver"
ln -sf "$kube/kubectl" "$assets/kubectl"
for f in etcd kube-apiserver kubectl; do
  [[ -x $assets/$f ]] || { echo "[envtest-go] no $f: run hack/build.sh" >&2; exit 1; }
done
export KUBEBUILDER_ASSETS=$assets
KCM_RS_BIN=$(realpath "${KCM_RS_BIN:-target/debug/kcm-rs}")
export KCM_RS_BIN KWOK_BIN=$bin/kwok-$KWOK_VERSION/kwok KWOK_CONFIG=$PWD/hack/kwok/stages.yaml
export KUBE_SCHEDULER_BIN=${KUBE_SCHEDULER_BIN-$kube/kube-scheduler}
[[ -x $KWOK_BIN ]] || { echo "[envtest-go] no $KWOK_BIN: run hack/build.sh" >&2; exit 1; }
if [[ ${1:-} != --build-only && ! -x $KCM_RS_BIN ]]; then
  echo "[envtest-go] no kcm-rs at $KCM_RS_BIN: cargo build -p kcm-rs, or set KCM_RS_BIN" >&2
  exit 1
fi
cd examples/envtest-go
if [[ ${1:-} == --build-only ]]; then
  go vet ./... && go test -count=1 -run '^$' ./... >/dev/null
  exit
fi
go test -count=1 -v "$@" ./...
