#!/usr/bin/env bash
# Convergence of many ReplicaSets at once, upstream's ReplicaSet controller vs kcm-rs's, on one control
# plane of its own (the ReplicaSet controller's load check: 50 ReplicaSets x 40 pods with client limits
# out of the way).
#
#   hack/converge.sh [RS_COUNT] [PODS_EACH]       (defaults 50 and 40)
#
# Both controllers get the same --kube-api-qps/--kube-api-burst (KCM_RS_CONVERGE_QPS/_BURST, default
# 1000/2000); kcm-rs is the release build. For each: the ReplicaSets are applied at once, and the time
# is taken from the apply to the moment every one reports all its pods Ready. The components' logs are
# kept in $KCM_RS_RUN_DIR.logs. Not part of `make test`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
count=${1:-50}
pods=${2:-40}
qps=${KCM_RS_CONVERGE_QPS:-1000}
burst=${KCM_RS_CONVERGE_BURST:-2000}
export KCM_RS_RUN_DIR=${KCM_RS_RUN_DIR:-/tmp/kcm-rs-converge}
export KCM_RS_KCM_QPS=$qps KCM_RS_KCM_BURST=$burst

cargo build --release -p kcm-rs
"$here/cluster.sh" down >/dev/null 2>&1 || true
logs=${KCM_RS_RUN_DIR}.logs # kept after the control plane is gone
trap '[[ -n ${kcm_pid:-} ]] && kill "$kcm_pid" 2>/dev/null; rm -rf "$logs"; cp -r "$KCM_RS_RUN_DIR/logs" "$logs"; "$here/cluster.sh" down; echo "logs: $logs"' EXIT
"$here/cluster.sh" up --mode reference
eval "$("$here/cluster.sh" env)"

manifests() { # NAMESPACE
  for i in $(seq 1 "$count"); do
    cat <<EOF
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs-$i, namespace: $1}
spec:
  replicas: $pods
  selector: {matchLabels: {app: rs-$i}}
  template:
    metadata: {labels: {app: rs-$i}}
    spec: {containers: [{name: c, image: nginx}]}
---
EOF
  done
}

# Seconds from the apply until every ReplicaSet in NAMESPACE has $pods Ready pods.
measure() { # NAMESPACE
  kubectl create namespace "$1" >/dev/null
  until kubectl -n "$1" get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
  local t0; t0=$(date +%s.%N)
  manifests "$1" | kubectl apply -f - >/dev/null
  while :; do
    local ready
    ready=$(kubectl -n "$1" get rs -o jsonpath='{range .items[*]}{.status.readyReplicas}{"\n"}{end}' | grep -cx "$pods" || true)
    [[ $ready == "$count" ]] && break
    sleep 0.2
  done
  python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)"
}

upstream=$(measure converge-upstream)
# The first run's 2,000 pods must be gone before the second starts, or their deletion loads the
# API server during it.
kubectl delete namespace converge-upstream --timeout=600s >/dev/null
"$here/cluster.sh" mode replace
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
./target/release/kcm-rs --kubeconfig "$KUBECONFIG" --bind-address=127.0.0.1 --secure-port="$port" \
  --controllers=replicaset-controller --kube-api-qps="$qps" --kube-api-burst="$burst" \
  >"$KCM_RS_RUN_DIR/logs/kcm-rs-converge.log" 2>&1 &
kcm_pid=$!
until grep -q "caches synced" "$KCM_RS_RUN_DIR/logs/kcm-rs-converge.log"; do sleep 0.2; done
ours=$(measure converge-kcm-rs)
echo "| $count ReplicaSets x $pods pods, qps $qps/burst $burst | upstream ${upstream} s | kcm-rs ${ours} s |"
