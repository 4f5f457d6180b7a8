#!/usr/bin/env bash
# The kwokctl recipe (deploy/kwokctl/kcm-rs.yaml), end to end: creates a kwokctl cluster with the
# binary runtime from the locally built binaries only (hack/build.sh's, nothing downloaded), with
# kcm-rs as a component and KCM without its three controllers; adds a node, rolls a Deployment out,
# completes a Job, checks that kcm-rs did both, and deletes the cluster however it ends.
# Prints the seconds from nothing to the rolled-out Deployment and to the completed Job.
#
# Usage: hack/kwokctl.sh   (KCM_RS_BIN: the kcm-rs binary, default target/debug/kcm-rs;
#                           KWOKCTL_KEEP=1 keeps the cluster and its directory)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
# shellcheck source=versions.env
source "$here/versions.env"
cache=${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}
bin=$cache/bin
kwokctl=$bin/kwokctl-$KWOK_VERSION/kwokctl
kube=$bin/kube-$KUBE_VERSION
kcm_rs=$(realpath "${KCM_RS_BIN:-target/debug/kcm-rs}")
name=kcm-rs-e2e-$$
wait=120s

log() { printf '[kwokctl] %s\n' "$*" >&2; }
fail() { printf '[kwokctl] FAILED: %s\n' "$*" >&2; exit 1; }
[[ -x $kwokctl ]] || fail "no $kwokctl: run hack/build.sh"
[[ -x $kcm_rs ]] || fail "no kcm-rs binary at $kcm_rs"

# A workdir of its own: nothing read from or left in ~/.kwok.
export KWOK_WORKDIR
KWOK_WORKDIR=$(mktemp -d /tmp/kcm-rs-kwokctl.XXXXXX)
cluster_dir=$KWOK_WORKDIR/clusters/$name
kubectl() { "$kube/kubectl" --kubeconfig "$cluster_dir/kubeconfig.yaml" "$@"; }
finish() {
  local rc=$?
  if ((rc != 0)); then
    for c in kcm-rs kube-controller-manager kube-apiserver kwok-controller; do
      printf '\n[kwokctl] --- %s log (last 30 lines) ---\n' "$c" >&2
      tail -n 30 "$cluster_dir/logs/$c.log" >&2 2>/dev/null || true
    done
  fi
  if [[ ${KWOKCTL_KEEP:-} == 1 ]]; then
    log "kept: KWOK_WORKDIR=$KWOK_WORKDIR $kwokctl delete cluster --name $name"
  else
    "$kwokctl" delete cluster --name "$name" >/dev/null 2>&1 || true
    rm -rf "$KWOK_WORKDIR"
  fi
  exit "$rc"
}
trap finish EXIT

# The recipe, with its two placeholders filled in, and the local binaries in front of kwokctl's
# download addresses.
config=$KWOK_WORKDIR/kcm-rs.yaml
KCM_RS_BIN=$kcm_rs CLUSTER_DIR=$cluster_dir envsubst <deploy/kwokctl/kcm-rs.yaml >"$config"
# kubectl's binary has no flag of its own.
printf 'options:\n  kubectlBinary: %s\n' "$kube/kubectl" >>"$config"
t0=$SECONDS
"$kwokctl" create cluster --name "$name" --runtime binary --config "$config" --wait "$wait" \
  --etcd-binary "$bin/etcd-$ETCD_VERSION/etcd" \
  --kube-apiserver-binary "$kube/kube-apiserver" \
  --kube-controller-manager-binary "$kube/kube-controller-manager" \
  --kube-scheduler-binary "$kube/kube-scheduler" \
  --kwok-controller-binary "$bin/kwok-$KWOK_VERSION/kwok" >"$KWOK_WORKDIR/create.log" 2>&1 ||
  { cat "$KWOK_WORKDIR/create.log" >&2; fail "kwokctl create cluster"; }
log "cluster $name up in $((SECONDS - t0))s"
# kube-controller-manager really runs without the three.
grep -q -- '--controllers=\*,-deployment-controller,-replicaset-controller,-job-controller' \
  <(tr '\0' ' ' </proc/"$(cat "$cluster_dir/pids/kube-controller-manager.pid")"/cmdline) ||
  fail "kube-controller-manager does not run with the recipe's --controllers"
"$kwokctl" scale node --name "$name" --replicas 1 >/dev/null 2>&1 || fail "kwokctl scale node"
kubectl wait --for=condition=Ready node --all --timeout="$wait" >/dev/null

kubectl create deployment web --image=registry.k8s.io/pause:3.10 --replicas=2 >/dev/null
kubectl rollout status deployment/web --timeout="$wait" >/dev/null || fail "the Deployment did not roll out"
deployed=$((SECONDS - t0))
kubectl create job work --image=busybox -- true >/dev/null
kubectl wait --for=condition=Complete job/work --timeout="$wait" >/dev/null || fail "the Job did not complete"
completed=$((SECONDS - t0))

# kcm-rs did both: KCM reports the three controllers disabled, and the events of the Job's and the
# ReplicaSet's pod creations carry kcm-rs's identity as their reporting instance.
for c in deployment-controller replicaset-controller job-controller; do
  grep -q "controller is disabled\" controller=\"$c\"" "$cluster_dir/logs/kube-controller-manager.log" ||
    fail "kube-controller-manager did not leave $c out"
done
identity=$(sed -n 's/.*identity identity=\([^ ]*\).*/\1/p' "$cluster_dir/logs/kcm-rs.log" | head -1)
[[ -n $identity ]] || fail "kcm-rs's log names no identity"
for kind in Job ReplicaSet; do
  instances=$(kubectl get events --field-selector "involvedObject.kind=$kind,reason=SuccessfulCreate" \
    -o jsonpath='{range .items[*]}{.reportingInstance}{"\n"}{end}' | sort -u)
  [[ $instances == "$identity" ]] || fail "$kind events reported by '$instances', not kcm-rs ($identity)"
done
log "nothing to a rolled-out Deployment: ${deployed}s; to a completed Job: ${completed}s"
log "ok"
