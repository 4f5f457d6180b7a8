#!/usr/bin/env bash
# The kwokctl recipe (deploy/kwokctl/kcm-rs.yaml), end to end, on a real kwokctl cluster:
#   1. binaries: hack/build.sh builds whichever is missing (kwokctl from the pinned KWOK module, once);
#   2. a cluster with the binary runtime from those binaries only (the script fails if kwokctl
#      downloaded anything), kcm-rs as one of its components, kube-controller-manager without the
#      deployment, replicaset and job controllers;
#   3. one fake node, a Deployment of 2 replicas rolled out, a Job of 2 completions Complete, and
#      proof that kcm-rs, not KCM, did both;
#   4. the cluster and its directory deleted however the script ends.
# Prints the seconds to a running cluster, from each object's creation to its goal, and from nothing
# to each goal. On failure, the tail of every component's log (`kwokctl logs`).
#
# Usage: hack/kwokctl.sh
#   KCM_RS_BIN=path   the kcm-rs binary (default target/debug/kcm-rs)
#   KWOKCTL_KEEP=1    keep the cluster; the script prints how to use and delete it
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
# shellcheck source=versions.env
source "$here/versions.env"
bin=${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}/bin
kwokctl_bin=$bin/kwokctl-$KWOK_VERSION/kwokctl
kube=$bin/kube-$KUBE_VERSION
name=kcm-rs-e2e-$$
wait=120s

log() { printf '[kwokctl] %s\n' "$*" >&2; }
fail() { printf '[kwokctl] FAILED: %s\n' "$*" >&2; exit 1; }
# Milliseconds since the epoch, and milliseconds as seconds with one decimal.
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

kcm_rs=$(realpath "${KCM_RS_BIN:-target/debug/kcm-rs}")
[[ -x $kcm_rs ]] || fail "no kcm-rs binary at $kcm_rs (cargo build, or set KCM_RS_BIN)"
for b in "$kwokctl_bin" "$bin/etcd-$ETCD_VERSION/etcd" "$bin/kwok-$KWOK_VERSION/kwok" \
  "$kube"/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}; do
  [[ -x $b ]] || { log "no $b: hack/build.sh builds what is missing"; "$here/build.sh" >&2; break; }
done

# A workdir of its own: kwokctl reads nothing from ~/.kwok and leaves nothing there, and two runs
# never see each other's clusters.
export KWOK_WORKDIR
KWOK_WORKDIR=$(mktemp -d /tmp/kcm-rs-kwokctl.XXXXXX)
cluster_dir=$KWOK_WORKDIR/clusters/$name
# kwokctl adds the cluster to --kubeconfig (default ~/.kube/config) and makes it the current context:
# a file of the run's own instead. (An empty value is refused by `delete cluster`.)
user_kubeconfig=$KWOK_WORKDIR/kubeconfig
# kwokctl runs `kubectl` from PATH for its readiness probe and uses its kubectlBinary option only when
# there is none: the pinned kubectl goes first.
export PATH=$kube:$PATH
kwokctl() { "$kwokctl_bin" --name "$name" "$@"; }
kubectl() { command kubectl --kubeconfig "$cluster_dir/kubeconfig.yaml" "$@"; }

finish() {
  local rc=$? c
  if ((rc != 0)) && [[ -d $cluster_dir ]]; then
    for c in $(kwokctl get components 2>/dev/null); do
      printf '\n[kwokctl] --- kwokctl logs %s (last 30 lines) ---\n' "$c" >&2
      kwokctl logs "$c" 2>&1 | tail -n 30 >&2 || true
    done
  fi
  if [[ ${KWOKCTL_KEEP:-} == 1 ]]; then
    log "kept: export KWOK_WORKDIR=$KWOK_WORKDIR KUBECONFIG=$cluster_dir/kubeconfig.yaml"
    log "      then: $kwokctl_bin delete cluster --name $name --kubeconfig $user_kubeconfig && rm -rf $KWOK_WORKDIR"
  else
    kwokctl delete cluster --kubeconfig "$user_kubeconfig" >/dev/null 2>&1 || true
    rm -rf "$KWOK_WORKDIR"
  fi
  exit "$rc"
}
trap finish EXIT

# kwokctl names a binary component's log and pid files after the binary's file name (up to its last
# dot), not after the component: the binary goes in as `kcm-rs`, so that `kwokctl logs kcm-rs` works
# for dist/kcm-rs-v0.1.0-linux-amd64 too.
mkdir -p "$KWOK_WORKDIR/bin"
ln -s "$kcm_rs" "$KWOK_WORKDIR/bin/kcm-rs"
config=$KWOK_WORKDIR/kcm-rs.yaml
# shellcheck disable=SC2016 # envsubst's list of the variables it may replace, unexpanded on purpose
KCM_RS_BIN=$KWOK_WORKDIR/bin/kcm-rs CLUSTER_DIR=$cluster_dir \
  envsubst '$KCM_RS_BIN $CLUSTER_DIR' <deploy/kwokctl/kcm-rs.yaml >"$config"
# kwokctl picks ports counting down from 32767 and knows only the clusters of its own workdir, so two
# runs at once took the same ones (the second's kube-apiserver found its port taken, and kwokctl waited
# 4 min before giving up). Random ports instead, free now, below the ephemeral range, where only another
# explicit pick can take them; the components bind 0.0.0.0.
read -r -a ports <<<"$(python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
picked = set()
while len(picked) < 6:
    port = random.randrange(10000, max(low, 20000))
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            continue
    picked.add(port)
print(*picked)
PY
)"
printf 'options:\n' >>"$config"
printf '  %s: %s\n' etcdPort "${ports[0]}" etcdPeerPort "${ports[1]}" kubeApiserverPort "${ports[2]}" \
  kubeControllerManagerPort "${ports[3]}" kubeSchedulerPort "${ports[4]}" kwokControllerPort "${ports[5]}" >>"$config"

t0=$(now_ms)
# --advertise-address: kube-apiserver otherwise takes the address of the default route's interface and
# does not start on a host without one (a sandbox with its network closed).
kwokctl create cluster --runtime binary --config "$config" --kubeconfig "$user_kubeconfig" --wait "$wait" \
  --extra-args kube-apiserver=advertise-address=127.0.0.1 \
  --etcd-binary "$bin/etcd-$ETCD_VERSION/etcd" \
  --kube-apiserver-binary "$kube/kube-apiserver" \
  --kube-controller-manager-binary "$kube/kube-controller-manager" \
  --kube-scheduler-binary "$kube/kube-scheduler" \
  --kwok-controller-binary "$bin/kwok-$KWOK_VERSION/kwok" >"$KWOK_WORKDIR/create.log" 2>&1 ||
  { cat "$KWOK_WORKDIR/create.log" >&2; fail "kwokctl create cluster"; }
# `create --wait` only logs it when the cluster never got ready, and exits 0.
kubectl get --raw /readyz --request-timeout=5s >/dev/null 2>&1 ||
  { cat "$KWOK_WORKDIR/create.log" >&2; fail "the cluster is not ready after kwokctl create cluster"; }
up=$(($(now_ms) - t0))

# Nothing downloaded: kwokctl links every binary it runs into the cluster's bin/ from wherever it got
# it, and downloads into its cache directory ($KWOK_WORKDIR/cache) first.
[[ ! -e $KWOK_WORKDIR/cache ]] || fail "kwokctl downloaded: $(find "$KWOK_WORKDIR/cache" -type f | head -3)"
for l in "$cluster_dir"/bin/*; do
  [[ $(readlink "$l") == "$bin"/* ]] || fail "kwokctl runs $l from $(readlink "$l"), not from $bin"
done
# kwokctl forks every component at once and restarts none: if kcm-rs has exited (the recipe elects, so
# it waits for the API server as long as it takes; any other reason), say so plainly.
# (/proc, not kill -0: an exited component stays a zombie until whoever inherited it reaps it.)
state=$(sed 's/.*) //' "/proc/$(cat "$cluster_dir/pids/kcm-rs.pid")/stat" 2>/dev/null | cut -d' ' -f1 || true)
[[ -n $state && $state != Z ]] ||
  fail "kcm-rs exited: $(kwokctl logs kcm-rs | tail -n 1)"
# kube-controller-manager really runs without the six.
grep -q -- '--controllers=\*,-deployment-controller,-replicaset-controller,-replicationcontroller-controller,-job-controller,-cronjob-controller,-ttl-after-finished-controller' \
  <(tr '\0' ' ' </proc/"$(cat "$cluster_dir/pids/kube-controller-manager.pid")"/cmdline) ||
  fail "kube-controller-manager does not run with the recipe's --controllers"

kwokctl scale node --replicas 1 >/dev/null 2>&1 || fail "kwokctl scale node"
kubectl wait --for=condition=Ready node --all --timeout="$wait" >/dev/null || fail "the node is not Ready"
# Pods are refused until KCM's serviceaccount controller has made `default`: without this wait kcm-rs's
# first pod creations fail and back off, and "created -> rolled out" measures that backoff.
kubectl wait --for=create serviceaccount/default --timeout="$wait" >/dev/null || fail "no default ServiceAccount"

t1=$(now_ms)
kubectl create deployment web --image=registry.k8s.io/pause:3.10 --replicas=2 >/dev/null
kubectl rollout status deployment/web --timeout="$wait" >/dev/null || fail "the Deployment did not roll out"
t2=$(now_ms)
# Two completions, one pod at a time; kwokctl's default pod stages end a running Job pod as Succeeded.
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: work}
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox, command: ["true"]}]
EOF
kubectl wait --for=condition=Complete job/work --timeout="$wait" >/dev/null || fail "the Job did not complete"
t3=$(now_ms)
[[ $(kubectl get job work -o jsonpath='{.status.succeeded}') == 2 ]] || fail "the Job has not 2 succeeded pods"

# kcm-rs did both: KCM reports the six controllers disabled, and every pod creation event of the Job
# and of the ReplicaSet names kcm-rs's identity as its reporting instance.
# (Logs are read whole into variables: `kwokctl logs | grep -q` could end kwokctl with SIGPIPE, which
# pipefail would count as a failure.)
kcm_log=$(kwokctl logs kube-controller-manager)
rs_log=$(kwokctl logs kcm-rs)
for c in deployment-controller replicaset-controller replicationcontroller-controller job-controller \
  cronjob-controller ttl-after-finished-controller; do
  grep -q "controller is disabled\" controller=\"$c\"" <<<"$kcm_log" ||
    fail "kube-controller-manager did not leave $c out"
done
identity=$(sed -n '/ identity identity=/{s/.*identity=\([^ ]*\).*/\1/p;q}' <<<"$rs_log")
[[ -n $identity ]] || fail "kcm-rs's log names no identity"
for kind in Job ReplicaSet; do
  instances=$(kubectl get events --field-selector "involvedObject.kind=$kind,reason=SuccessfulCreate" \
    -o jsonpath='{range .items[*]}{.reportingInstance}{"\n"}{end}' | sort -u)
  [[ $instances == "$identity" ]] || fail "$kind events reported by '$instances', not kcm-rs ($identity)"
done
started=$(head -n 1 <<<"$rs_log" | cut -d' ' -f1)
connected=$(grep -m 1 ' connected ' <<<"$rs_log" | cut -d' ' -f1)
log "kcm-rs waited $(secs $(($(date -d "$connected" +%s%3N) - $(date -d "$started" +%s%3N))))s for the" \
  "API server's /healthz"
log "cluster up $(secs "$up")s; Deployment created -> rolled out $(secs $((t2 - t1)))s;" \
  "Job created -> Complete $(secs $((t3 - t2)))s"
log "nothing to a rolled-out Deployment: $(secs $((t2 - t0)))s; to a completed Job: $(secs $((t3 - t0)))s"
log "ok"
