#!/usr/bin/env bash
# Checks the kubeadm, kind, k3d and k3s recipes (deploy/kubeadm, deploy/kind, deploy/k3s) as far as this
# machine can without a kubelet, a container engine or k3s: every step up to the static pods.
#
#   1. deploy/kubeadm/cluster-configuration.yaml passes the pinned kubeadm's `config validate`, and
#      kubeadm turns it into a kube-controller-manager static pod with the --controllers we document.
#   2. deploy/kind/cluster.yaml goes through kind's own loader, validation, kubeadm template and
#      patching (hack/recipes/kindcheck.go, built inside a copy of the pinned kind module because those
#      are kind's internal packages); the kubeadm configuration kind would write passes the same two
#      checks, and the node mounts deploy/kubeadm/kcm-rs.yaml into /etc/kubernetes/manifests.
#   3. deploy/kubeadm/kcm-rs.yaml mounts the kubeconfig KCM's static pod uses, at the same path.
#   4. deploy/k3s/k3d.yaml goes through k3d's own loader (schema, environment expansion), processing
#      and transformation into nodes (hack/recipes/k3dcheck.go, built against the pinned k3d module):
#      the server's kube-controller-manager gets k3s's own --controllers without the six, a value the
#      pinned kube-controller-manager (the one k3s embeds at this version) accepts, and the server gets
#      deploy/k3s/kcm-rs.yaml as a static pod, which differs from the kubeadm one in paths only.
# The static pod itself runs in the image suite (e2e/tests/static_pod.rs, podman kube play) and its RBAC
# there too. Usage: hack/recipes.sh (needs hack/build.sh's kubeadm and kube-controller-manager; builds
# kindcheck once, ~20 s, and k3dcheck once, ~85 s).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
# shellcheck source=versions.env
source "$here/versions.env"
cache=${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}
kubeadm=$cache/bin/kubeadm-$KUBE_VERSION/kubeadm
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
# The value both recipes must give kube-controller-manager: kubeadm's own plus kcm-rs's six off.
want_controllers='*,bootstrapsigner,tokencleaner,-deployment-controller,-replicaset-controller,-replicationcontroller-controller,-job-controller,-cronjob-controller,-ttl-after-finished-controller'

log() { printf '[recipes] %s\n' "$*" >&2; }
fail() { printf '[recipes] FAILED: %s\n' "$*" >&2; exit 1; }
[[ -x $kubeadm ]] || fail "no $kubeadm: run hack/build.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# checker NAME VERSION: the binary of hack/recipes/NAME.go against that version of its tool, built by
# build_NAME OUT the first time (and again when the source or the version changes).
checker() {
  local name=$1 version=$2 sum out
  sum=$(sha256sum "$here/recipes/$name.go" | cut -c1-12)
  out=$cache/bin/$name-$version-$sum/$name
  if [[ ! -x $out ]]; then
    log "$name: building against $version (first time only)"
    mkdir -p "$(dirname "$out")"
    "build_$name" "$out" >&2 || fail "building $name"
  fi
  printf '%s\n' "$out"
}

# Inside a copy of the kind module, under pkg/cluster/ so that Go lets it import
# pkg/cluster/internal/kubeadm.
build_kindcheck() {
  local dir
  dir=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [[ -d $dir ]] || { log "could not download sigs.k8s.io/kind@$KIND_VERSION"; return 1; }
  cp -r "$dir" "$tmp/kind" && chmod -R u+w "$tmp/kind"
  mkdir -p "$tmp/kind/pkg/cluster/kcmrskindcheck"
  cp "$here/recipes/kindcheck.go" "$tmp/kind/pkg/cluster/kcmrskindcheck/main.go"
  (cd "$tmp/kind" && go build -trimpath -o "$1" ./pkg/cluster/kcmrskindcheck)
}

# A module of its own that requires the pinned k3d (its packages are public).
build_k3dcheck() {
  mkdir -p "$tmp/k3dcheck"
  cp "$here/recipes/k3dcheck.go" "$tmp/k3dcheck/main.go"
  (cd "$tmp/k3dcheck" && go mod init kcm-rs.local/k3dcheck >/dev/null 2>&1 &&
    go get "github.com/k3d-io/k3d/v5@$K3D_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 &&
    go build -trimpath -o "$1" .)
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

mounts=$("$(checker kindcheck "$KIND_VERSION")" deploy/kind/cluster.yaml "$KUBE_VERSION" "$tmp/kind-kubeadm.yaml") || fail "kind rejects deploy/kind/cluster.yaml"
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

# k3d and k3s. k3s gives its embedded KCM `*,tokencleaner` and, with its cloud controller manager on
# (the default), `-service,-route,-cloud-node-lifecycle`; the recipe must keep all that.
k3s_controllers='*,tokencleaner,-service,-route,-cloud-node-lifecycle,-deployment-controller,-replicaset-controller,-replicationcontroller-controller,-job-controller,-cronjob-controller,-ttl-after-finished-controller'
k3d_out=$("$(checker k3dcheck "$K3D_VERSION")" deploy/k3s/k3d.yaml) || fail "k3d rejects deploy/k3s/k3d.yaml"
got=$(sed -n 's/^arg\t--kube-controller-manager-arg=controllers=//p' <<<"$k3d_out")
[[ $got == "$k3s_controllers" ]] || fail "k3d: the server's kube-controller-manager gets controllers='$got', want '$k3s_controllers'"
want_sum=$(sha256sum deploy/k3s/kcm-rs.yaml | cut -d' ' -f1)
grep -qx $'file\t/var/lib/rancher/k3s/agent/pod-manifests/kcm-rs.yaml\t'"$want_sum" <<<"$k3d_out" ||
  fail "k3d: the server does not get deploy/k3s/kcm-rs.yaml as a static pod (got: $k3d_out)"
log "k3d: the server's kube-controller-manager gets controllers=$got and the static pod deploy/k3s/kcm-rs.yaml"
# kube-controller-manager checks --controllers before it reads its kubeconfig: a known name gets as far
# as the missing file, an unknown one stops at the list (the second run proves the check can fail).
kcm=$cache/bin/kube-$KUBE_VERSION/kube-controller-manager
kcm_accepts() {
  local err
  err=$("$kcm" --controllers="$1" --kubeconfig="$tmp/no-such-kubeconfig" --secure-port=0 2>&1) && return 1
  [[ $err == *no-such-kubeconfig* && $err != *"known controllers"* ]]
}
kcm_accepts "$k3s_controllers" || fail "kube-controller-manager $KUBE_VERSION rejects --controllers=$k3s_controllers"
! kcm_accepts "${k3s_controllers/-job-controller/-jobs-controller}" || fail "kube-controller-manager accepts a controller it does not know"
log "k3s: kube-controller-manager $KUBE_VERSION accepts it"
# The k3s static pod is the kubeadm one with k3s's paths, and nothing else.
k3s_paths() {
  sed -n '/^apiVersion:/,$p' "$1" | sed \
    -e 's#/etc/kubernetes/controller-manager.conf#/var/lib/rancher/k3s/server/cred/controller.kubeconfig#' \
    -e 's#--client-ca-file=/etc/kubernetes/pki/ca.crt#--client-ca-file=/var/lib/rancher/k3s/server/tls/client-ca.crt#' \
    -e 's#/etc/kubernetes/pki#/var/lib/rancher/k3s/server/tls#'
}
diff <(k3s_paths deploy/kubeadm/kcm-rs.yaml) <(sed -n '/^apiVersion:/,$p' deploy/k3s/kcm-rs.yaml) >&2 ||
  fail "deploy/k3s/kcm-rs.yaml differs from deploy/kubeadm/kcm-rs.yaml in more than k3s's paths"
log "k3s: kcm-rs.yaml is the kubeadm static pod with k3s's paths"
log "ok"
