#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, kwokctl and
# kubeadm from pinned Go modules (hack/versions.env) into a cache outside the repo, keyed by version:
#   ${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}/bin/<component>-<version>/
# A second run with the same versions does nothing. Prints the bin directory on stdout's last line.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# shellcheck source=lib/kube-module.sh
source "$here/lib/kube-module.sh"
cache=${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}
bin=$cache/bin
mkdir -p "$bin"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

log() { printf '[build] %s\n' "$*" >&2; }
fail() { printf '[build] FAILED: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go >= 1.26 (https://go.dev/doc/install)"

build_etcd() {
  local out=$bin/etcd-$ETCD_VERSION
  [[ -x $out/etcd ]] && return 0
  log "etcd $ETCD_VERSION: building (first time only)"
  local mod=$cache/src/etcd-$ETCD_VERSION
  rm -rf "$mod" && mkdir -p "$mod" "$out.tmp"
  (
    cd "$mod"
    go mod init kcm-rs.local/etcd-build >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
    go build -trimpath -ldflags '-s -w' -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
  ) || { rm -rf "$out.tmp"; fail "etcd build (see output above)"; }
  mv "$out.tmp" "$out"
}

build_kube() {
  local out=$bin/kube-$KUBE_VERSION
  [[ -x $out/kube-apiserver && -x $out/kube-controller-manager && -x $out/kube-scheduler && -x $out/kubectl ]] && return 0
  log "kubernetes $KUBE_VERSION: building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (first time only; ~15-25 min on 2 cores)"
  local mod=$cache/src/kube-$KUBE_VERSION
  mkdir -p "$out.tmp"
  kube_module_init "$mod" kcm-rs.local/kube-build || { rm -rf "$out.tmp"; fail "preparing the build module $mod (see output above)"; }
  (
    cd "$mod"
    local pkgs="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl"
    # shellcheck disable=SC2086
    go get $(for p in $pkgs; do printf '%s@%s ' "$p" "$KUBE_VERSION"; done) >&2 || exit 1
    local ld; ld=$(kube_ldflags)
    # shellcheck disable=SC2086
    go build -p "$(nproc)" -trimpath -ldflags "$ld" -o "$out.tmp/" $pkgs >&2
  ) || { rm -rf "$out.tmp"; fail "kubernetes build (see output above)"; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# kubeadm, for the kubeadm recipe's check (hack/recipes.sh: `kubeadm config validate`); apart from the
# four above so that adding it did not rebuild them.
build_kubeadm() {
  local out=$bin/kubeadm-$KUBE_VERSION
  [[ -x $out/kubeadm ]] && return 0
  log "kubeadm $KUBE_VERSION: building (first time only)"
  local mod=$cache/src/kubeadm-$KUBE_VERSION
  mkdir -p "$out.tmp"
  kube_module_init "$mod" kcm-rs.local/kubeadm-build || { rm -rf "$out.tmp"; fail "preparing the build module $mod (see output above)"; }
  (
    cd "$mod"
    go get "k8s.io/kubernetes/cmd/kubeadm@$KUBE_VERSION" >&2 || exit 1
    go build -p "$(nproc)" -trimpath -ldflags "$(kube_ldflags)" -o "$out.tmp/" k8s.io/kubernetes/cmd/kubeadm >&2
  ) || { rm -rf "$out.tmp"; fail "kubeadm build (see output above)"; }
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# build_kwok_command NAME: one command of the pinned KWOK module (kwok; kwokctl for the kwokctl
# recipe's suite, hack/kwokctl.sh), each into a directory of its own.
build_kwok_command() {
  local name=$1 out=$bin/$1-$KWOK_VERSION
  [[ -x $out/$name ]] && return 0
  log "$name $KWOK_VERSION: building (first time only)"
  mkdir -p "$out.tmp"
  GOBIN=$out.tmp go install -trimpath -ldflags '-s -w' "sigs.k8s.io/kwok/cmd/$name@$KWOK_VERSION" >&2 \
    || { rm -rf "$out.tmp"; fail "$name build (see output above)"; }
  mv "$out.tmp" "$out"
}

start=$(date +%s)
build_etcd
build_kwok_command kwok
build_kwok_command kwokctl
build_kube
build_kubeadm
log "all components ready in $(( $(date +%s) - start ))s"
