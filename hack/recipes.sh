#!/usr/bin/env bash
# Checks the kubeadm and kind recipes (deploy/kubeadm, deploy/kind) as far as this machine can without
# a kubelet or a container engine for kind: every step up to the static pods kubeadm would write.
#
#   1. deploy/kubeadm/cluster-configuration.yaml passes the pinned kubeadm's `config validate`, and
#      kubeadm turns it into a kube-controller-manager static pod with the --controllers we document.
#   2. deploy/kind/cluster.yaml goes through kind's own loader, validation, kubeadm template and
#      patching (hack/recipes/kindcheck.go, built inside a copy of the pinned kind module because those
#      are kind's internal packages); the kubeadm configuration kind would write passes the same two
#      checks, and the node mounts deploy/kubeadm/kcm-rs.yaml into /etc/kubernetes/manifests.
#   3. deploy/kubeadm/kcm-rs.yaml mounts the kubeconfig KCM's static pod uses, at the same path.
# The static pod itself runs in the image suite (e2e/tests/static_pod.rs, podman kube play) and its RBAC
# there too. Usage: hack/recipes.sh (needs hack/build.sh's kubeadm; builds kindcheck once, ~20 s).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
# shellcheck source=versions.env
source "$here/versions.env"
cache=${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}
kubeadm=$cache/bin/kubeadm-$KUBE_VERSION/kubeadm
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
# The value both recipes must give kube-controller-manager: kubeadm's own plus kcm-rs's three off.
want_controllers='*,bootstrapsigner,tokencleaner,-deployment-controller,-replicaset-controller,-job-controller'

log() { printf '[recipes] %s\n' "$*" >&2; }
fail() { printf '[recipes] FAILED: %s\n' "$*" >&2; exit 1; }
[[ -x $kubeadm ]] || fail "no $kubeadm: run hack/build.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# kindcheck, rebuilt when its source or the kind version changes.
kindcheck() {
  local sum out
  sum=$(sha256sum "$here/recipes/kindcheck.go" | cut -c1-12)
  out=$cache/bin/kindcheck-$KIND_VERSION-$sum/kindcheck
  if [[ ! -x $out ]]; then
    log "kindcheck: building against kind $KIND_VERSION (first time only)"
    local dir
    dir=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
    [[ -d $dir ]] || fail "could not download sigs.k8s.io/kind@$KIND_VERSION"
    cp -r "$dir" "$tmp/kind" && chmod -R u+w "$tmp/kind"
    # Under pkg/cluster/ so that Go lets it import pkg/cluster/internal/kubeadm.
    mkdir -p "$tmp/kind/pkg/cluster/kcmrskindcheck" "$(dirname "$out")"
    cp "$here/recipes/kindcheck.go" "$tmp/kind/pkg/cluster/kcmrskindcheck/main.go"
    (cd "$tmp/kind" && go build -trimpath -o "$out" ./pkg/cluster/kcmrskindcheck) >&2 || fail "building kindcheck"
  fi
  printf '%s\n' "$out"
}

# validate LABEL FILE: kubeadm's own validation, then the KCM static pod kubeadm would write from it
# (a dry run into $tmp: nothing under /etc/kubernetes), whose --controllers must be ours.
validate() {
  local label=$1 file=$2 out=$tmp/$1
  "$kubeadm" config validate --config "$file" >"$tmp/validate.log" 2>&1 ||
    { cat "$tmp/validate.log" >&2; fail "$label: kubeadm config validate"; }
  mkdir -p "$out"
  KUBEADM_INIT_DRYRUN_DIR=$out "$kubeadm" init phase control-plane controller-manager --config "$file" \
    --dry-run >"$tmp/phase.log" 2>&1 || { cat "$tmp/phase.log" >&2; fail "$label: kubeadm init phase control-plane"; }
  local manifest=$out/kube-controller-manager.yaml got
  [[ -f $manifest ]] || fail "$label: kubeadm wrote no kube-controller-manager.yaml"
  got=$(sed -n 's/^ *- --controllers=//p' "$manifest")
  [[ $got == "$want_controllers" ]] || fail "$label: kube-controller-manager gets --controllers='$got', want '$want_controllers'"
  log "$label: kubeadm validates it; kube-controller-manager gets --controllers=$got"
  kcm_manifest=$manifest
}

validate kubeadm deploy/kubeadm/cluster-configuration.yaml

mounts=$("$(kindcheck)" deploy/kind/cluster.yaml "$KUBE_VERSION" "$tmp/kind-kubeadm.yaml") || fail "kind rejects deploy/kind/cluster.yaml"
validate kind "$tmp/kind-kubeadm.yaml"
grep -qx $'deploy/kubeadm/kcm-rs.yaml\t/etc/kubernetes/manifests/kcm-rs.yaml' <<<"$mounts" ||
  fail "kind: the control-plane node does not mount deploy/kubeadm/kcm-rs.yaml as a static pod (mounts: $mounts)"
log "kind: the control-plane node mounts deploy/kubeadm/kcm-rs.yaml into /etc/kubernetes/manifests"

# kcm-rs reads the kubeconfig KCM's static pod reads, mounted at the same path from the same host file.
kubeconfig=$(sed -n 's/^ *- --kubeconfig=//p' "$kcm_manifest")
for want in "- --kubeconfig=$kubeconfig" "mountPath: $kubeconfig" "path: $kubeconfig"; do
  grep -qF -- "$want" deploy/kubeadm/kcm-rs.yaml || fail "deploy/kubeadm/kcm-rs.yaml lacks '$want' (KCM's static pod has it)"
done
log "kcm-rs.yaml: reads $kubeconfig as kube-controller-manager does"
log "ok"
