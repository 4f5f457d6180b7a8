#!/usr/bin/env bash
# The envtest recipe (examples/envtest-go), end to end: controller-runtime's envtest starts etcd and
# kube-apiserver from the binaries hack/build.sh builds (KUBEBUILDER_ASSETS: a directory of links to
# them), and the example's kcmrs package starts kcm-rs, KWOK and kube-scheduler beside them; a
# Deployment must roll out and a Job complete. Prints envtest's start to each.
#
# Usage: hack/envtest-go.sh [--build-only | go test flags]
#   --build-only  vet and compile the example's test, run nothing (hack/e2e.sh's build phase)
#   KCM_RS_BIN    the kcm-rs binary, default target/debug/kcm-rs
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
export KUBE_SCHEDULER_BIN=$kube/kube-scheduler
cd examples/envtest-go
if [[ ${1:-} == --build-only ]]; then
  go vet ./... && go test -count=1 -run '^$' ./... >/dev/null
  exit
fi
go test -count=1 -v "$@" ./...
