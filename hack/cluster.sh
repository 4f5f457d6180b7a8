#!/usr/bin/env bash
# A real, local Kubernetes control plane as plain processes on loopback:
#   etcd -> kube-apiserver -> kube-controller-manager -> kube-scheduler -> kwok -> fake Nodes
#
# Usage: hack/cluster.sh up [--mode reference|replace] [--sharded-list-watch] | down | status | env | logs [component]
#                        | restart <component> [--kill] | compact | mode reference|replace|bare [KCM-FLAG...]
#                        | sharding on|off [--audit-writes]   (kube-apiserver restarted with/without
#                          ShardedListAndWatch; --audit-writes: and logging kcm-rs's writes)
#
#   --mode reference  upstream kube-controller-manager runs every controller (the behaviour to compare with)
#   --mode replace    upstream KCM runs without the deployment, replicaset, replicationcontroller, job,
#                     ttl-after-finished and cronjob controllers (or those $KCM_RS_REPLACED_CONTROLLERS names) so that kcm-rs can take them over (default)
#
# Everything lives in one run directory ($KCM_RS_RUN_DIR, default /tmp/kcm-rs-cluster): pids/, logs/,
# pki/, kubeconfig, cluster.env. Binaries come from hack/build.sh's cache and are built on first use.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${KCM_RS_CACHE:-$HOME/.cache/kcm-rs}
run=${KCM_RS_RUN_DIR:-/tmp/kcm-rs-cluster}
kube_bin=$cache/bin/kube-$KUBE_VERSION
etcd_bin=$cache/bin/etcd-$ETCD_VERSION
kwok_bin=$cache/bin/kwok-$KWOK_VERSION
# How many fake nodes to register, and how many pods each may hold (the scheduler honours it).
nodes=${KCM_RS_NODES:-3}
node_pods=${KCM_RS_NODE_PODS:-5000}
# Client rate limits for the upstream components. kube-controller-manager's own default is 20/30; it is
# raised here so that 500-pod scenarios measure controllers rather than client throttling. kcm-rs is
# started with the same figures by the e2e harness, so comparisons stay fair.
kcm_qps=${KCM_RS_KCM_QPS:-100}
kcm_burst=${KCM_RS_KCM_BURST:-200}
# Controllers kcm-rs takes over in replace mode (KCM's names).
replaced_controllers=${KCM_RS_REPLACED_CONTROLLERS:-deployment-controller replicaset-controller replicationcontroller-controller job-controller ttl-after-finished-controller cronjob-controller}
ready_timeout=${KCM_RS_READY_TIMEOUT:-120}

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] ERROR: %s\n' "$*" >&2; exit 1; }

# Prints the last lines of a component's log under a header, for error messages.
tail_log() {
  local c=$1
  if [[ -f $run/logs/$c.log ]]; then
    printf '%s\n' "----- last 40 lines of $run/logs/$c.log -----" >&2
    tail -n 40 "$run/logs/$c.log" >&2
    printf '%s\n' "-----" >&2
  fi
}

alive() { local pid; pid=$(cat "$run/pids/$1.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

# Picks n free TCP ports on 127.0.0.1, below the kernel's ephemeral range
# (/proc/sys/net/ipv4/ip_local_port_range). A port taken from that range is only free until someone
# connects: any outgoing connection, or another lane's `bind(0)`, may take it as its own before the
# component binds it. Such a collision once left a kube-scheduler unstarted while the process that
# held its port answered the /healthz probe, and every spec of a conformance run waited out its
# timeouts on Pending pods. Below the range only another explicit pick can collide; the probes check
# the listener's PID, and `up` starts again with new ports if a component finds its port taken.
free_ports() {
  python3 - "$1" <<'PY'
import random, socket, sys
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except OSError:
    low = 32768
picked = []
while len(picked) < int(sys.argv[1]):
    port = random.randrange(10000, low) if low > 11000 else 0
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    port = port or s.getsockname()[1]
    if port not in picked:
        picked.append(port)
print(" ".join(map(str, picked)))
PY
}

# listens NAME PORT: the component's own process listens on PORT (not someone who took it first).
# Without ss (iproute2) it cannot tell and says yes.
listens() {
  local pid; pid=$(cat "$run/pids/$1.pid" 2>/dev/null) || return 1
  command -v ss >/dev/null || return 0
  ss -Hltnp "sport = :$2" 2>/dev/null | grep -q "pid=$pid,"
}

# start NAME BINARY ARGS...: runs a component in its own session (so `down` can stop its whole process
# group), output to logs/NAME.log, PID to pids/NAME.pid.
start() {
  local name=$1; shift
  mkdir -p "$run/cmd"
  printf '%q ' "$@" >"$run/cmd/$name"
  setsid "$@" >>"$run/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$run/pids/$name.pid"
}

# Stops one component's process group (TERM, then KILL after 10 s) and waits until it is gone.
stop() {
  local pid i
  pid=$(cat "$run/pids/$1.pid" 2>/dev/null) || return 0
  kill -TERM -- "-$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
}

# wait_until NAME DESCRIPTION COMMAND...: polls COMMAND every 250 ms until it succeeds; fails with the
# component's log tail if the process dies or the timeout passes.
wait_until() {
  local name=$1 what=$2; shift 2
  local deadline=$((SECONDS + ready_timeout))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then
      tail_log "$name"
      die "$name exited before it was ready ($what); its log is $run/logs/$name.log"
    fi
    if ((SECONDS >= deadline)); then
      tail_log "$name"
      die "$name was not ready ($what) within ${ready_timeout}s; its log is $run/logs/$name.log"
    fi
    sleep 0.25
  done
  log "$name ready ($what) after $((SECONDS - phase_start))s"
}

# probe NAME PORT CURL_ARGS...: the health endpoint answers, and from the component itself.
probe() { local name=$1 port=$2; shift 2; curl "$@" && listens "$name" "$port"; }

# ready COMPONENT: waits for the component's health endpoint (ports from cluster.env).
ready() {
  case $1 in
    etcd) wait_until etcd "/health" probe etcd "$ETCD_PORT" -fs "http://127.0.0.1:$ETCD_PORT/health" ;;
    kube-apiserver) wait_until kube-apiserver "/readyz" probe kube-apiserver "$API_PORT" -fs --cacert "$run/pki/ca.crt" \
      -H "Authorization: Bearer $(cat "$run/pki/admin.token")" "https://127.0.0.1:$API_PORT/readyz" ;;
    kube-controller-manager) wait_until kube-controller-manager "/healthz" probe kube-controller-manager "$KCM_PORT" \
      -fsk "https://127.0.0.1:$KCM_PORT/healthz" ;;
    kube-scheduler) wait_until kube-scheduler "/healthz" probe kube-scheduler "$SCHED_PORT" \
      -fsk "https://127.0.0.1:$SCHED_PORT/healthz" ;;
    kwok) wait_until kwok "/healthz" probe kwok "$KWOK_PORT" -fs "http://127.0.0.1:$KWOK_PORT/healthz" ;;
    *) die "unknown component $1" ;;
  esac
}

# The --controllers value for upstream KCM in a mode.
kcm_controllers() {
  local controllers="*" c
  if [[ $1 == replace ]]; then
    for c in $replaced_controllers; do controllers+=",-$c"; done
  fi
  echo "$controllers"
}

kubectl_() { "$kube_bin/kubectl" --kubeconfig "$run/kubeconfig" "$@"; }

make_pki() {
  local p=$run/pki
  mkdir -p "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=kcm-rs-local-ca \
    -keyout "$p/ca.key" -out "$p/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout "$p/apiserver.key" \
    -out "$p/apiserver.csr" 2>/dev/null
  cat >"$p/apiserver.ext" <<'EOF'
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth
keyUsage=digitalSignature,keyEncipherment
EOF
  openssl x509 -req -in "$p/apiserver.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 30 \
    -extfile "$p/apiserver.ext" -out "$p/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  # One static token in system:masters: the admin user that tests, kcm-rs and the upstream components use.
  openssl rand -hex 24 >"$p/admin.token"
  printf '%s,admin,admin,system:masters\n' "$(cat "$p/admin.token")" >"$p/tokens.csv"
  # A second one, for the controller process hack/bench.sh measures, so that the audit log tells its
  # requests from everyone else's (kubeconfig-bench).
  openssl rand -hex 24 >"$p/bench.token"
  printf '%s,bench,bench,system:masters\n' "$(cat "$p/bench.token")" >>"$p/tokens.csv"
  # With KCM_RS_AUDIT=1 the API server logs (metadata only) every request of that user: hack/bench.sh
  # counts a controller's API requests from it.
  cat >"$p/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [bench]
- level: None
EOF
}

write_kubeconfig() {
  cat >"$run/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kcm-rs-local
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $run/pki/ca.crt
users:
- name: admin
  user:
    token: $(cat "$run/pki/admin.token")
contexts:
- name: kcm-rs-local
  context: {cluster: kcm-rs-local, user: admin}
current-context: kcm-rs-local
EOF
  sed "s/token: .*/token: $(cat "$run/pki/bench.token")/; s/user: admin}/user: bench}/; s/- name: admin/- name: bench/" \
    "$run/kubeconfig" >"$run/kubeconfig-bench"
}

write_nodes() {
  local i
  for ((i = 0; i < nodes; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: kwok-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
status:
  allocatable: {cpu: "1000", memory: 1Ti, pods: "$node_pods"}
  capacity: {cpu: "1000", memory: 1Ti, pods: "$node_pods"}
EOF
  done
}

cmd_up() {
  local mode=replace
  while (($#)); do
    case $1 in
      --mode) mode=${2:-}; shift 2 ;;
      --mode=*) mode=${1#--mode=}; shift ;;
      # Kubernetes 1.36's server-side sharded list and watch (alpha), for kcm-rs --shards.
      --sharded-list-watch) KCM_RS_SHARDED_LIST_WATCH=1; shift ;;
      *) die "unknown argument to up: $1" ;;
    esac
  done
  [[ $mode == reference || $mode == replace ]] || die "--mode must be reference or replace, not '$mode'"
  if [[ -f $run/cluster.env ]]; then
    if alive kube-apiserver; then
      # shellcheck disable=SC1091
      local running; running=$(sed -n 's/^KCM_RS_MODE=//p' "$run/cluster.env")
      die "a cluster is already running in $run (mode $running); run 'hack/cluster.sh down' first"
    fi
    log "removing the remains of a cluster that is no longer running in $run"
    cmd_down >/dev/null 2>&1 || true
  fi
  "$here/build.sh"
  command -v openssl >/dev/null || die "openssl is required (apt-get install openssl)"
  command -v python3 >/dev/null || die "python3 is required to pick free ports"
  # A component that found its port taken (see free_ports) fails the attempt; the next one picks
  # other ports. Any other failure ends `up`.
  local attempt
  for attempt in 1 2 3; do
    (start_plane "$mode") && return 0
    grep -qs "address already in use" "$run"/logs/*.log || exit 1
    log "attempt $attempt: a component found its port taken; starting again on other ports"
    cmd_down >/dev/null 2>&1 || true
  done
  die "the control plane did not start in 3 attempts"
}

# start_plane MODE: one attempt at starting the control plane (run in a subshell: `die` ends it).
start_plane() {
  local mode=$1 t0=$SECONDS phase_start
  rm -rf "$run" && mkdir -p "$run/pids" "$run/logs" "$run/kwok"
  local etcd_data
  if [[ -d /dev/shm && -w /dev/shm ]]; then
    etcd_data=$(mktemp -d /dev/shm/kcm-rs-etcd.XXXXXX)
  else
    etcd_data=$run/etcd
  fi
  read -r ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT SCHED_PORT KWOK_PORT <<<"$(free_ports 6)"
  cat >"$run/cluster.env" <<EOF
KCM_RS_MODE=$mode
KCM_RS_RUN_DIR=$run
KCM_RS_KUBE_BIN=$kube_bin
KCM_RS_ETCD_DATA=$etcd_data
ETCD_PORT=$ETCD_PORT
API_PORT=$API_PORT
KCM_PORT=$KCM_PORT
SCHED_PORT=$SCHED_PORT
KWOK_PORT=$KWOK_PORT
EOF
  make_pki
  write_kubeconfig

  phase_start=$SECONDS
  start etcd "$etcd_bin/etcd" --name=n0 --data-dir="$etcd_data" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="n0=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --quota-backend-bytes=4294967296 --log-level=warn
  ready etcd

  phase_start=$SECONDS
  local p=$run/pki
  start kube-apiserver "$kube_bin/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" --client-ca-file="$p/ca.crt" \
    --token-auth-file="$p/tokens.csv" --authorization-mode=Node,RBAC \
    ${KCM_RS_SHARDED_LIST_WATCH:+--feature-gates=ShardedListAndWatch=true} \
    ${KCM_RS_AUDIT:+--audit-policy-file="$p/audit-policy.yaml" --audit-log-path="$run/logs/audit.log" --audit-log-format=json --audit-log-mode=batch} \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 --endpoint-reconciler-type=none --allow-privileged=true \
    --max-requests-inflight=1000 --max-mutating-requests-inflight=500 \
    --v=1
  ready kube-apiserver

  phase_start=$SECONDS
  local controllers; controllers=$(kcm_controllers "$mode")
  start kube-controller-manager "$kube_bin/kube-controller-manager" \
    --kubeconfig="$run/kubeconfig" --leader-elect=false \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
    --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics \
    --root-ca-file="$p/ca.crt" --service-account-private-key-file="$p/sa.key" \
    --controllers="$controllers" --kube-api-qps="$kcm_qps" --kube-api-burst="$kcm_burst" \
    --v=2
  ready kube-controller-manager

  phase_start=$SECONDS
  cat >"$run/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: $run/kubeconfig, qps: 500, burst: 1000}
leaderElection: {leaderElect: false}
EOF
  start kube-scheduler "$kube_bin/kube-scheduler" --config="$run/scheduler.yaml" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" \
    --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics --v=1
  ready kube-scheduler

  phase_start=$SECONDS
  # KWOK_WORKDIR keeps kwok from loading a stray ~/.kwok/kwok.yaml in front of our stages.
  start kwok env KWOK_WORKDIR="$run/kwok" "$kwok_bin/kwok" --kubeconfig="$run/kubeconfig" \
    --config="$here/kwok/stages.yaml" --manage-all-nodes=true --node-lease-duration-seconds=40 \
    --cidr=10.244.0.0/16 --server-address="127.0.0.1:$KWOK_PORT" --node-ip=127.0.0.1
  ready kwok

  phase_start=$SECONDS
  write_nodes | kubectl_ apply -f - >/dev/null
  local deadline=$((SECONDS + ready_timeout))
  until kubectl_ wait --for=condition=Ready node --all --timeout=5s >/dev/null 2>&1; do
    alive kwok || { tail_log kwok; die "kwok exited while the nodes were initialising"; }
    ((SECONDS < deadline)) || { tail_log kwok; die "nodes were not Ready within ${ready_timeout}s"; }
  done
  log "$nodes nodes Ready after $((SECONDS - phase_start))s"
  phase_start=$SECONDS
  wait_until kube-controller-manager "default ServiceAccount" kubectl_ -n default get serviceaccount default
  log "cluster up in $((SECONDS - t0))s (mode $mode); run: eval \"\$(hack/cluster.sh env)\""
}

cmd_down() {
  [[ -d $run ]] || { log "no cluster in $run"; return 0; }
  local c pid
  # Reverse start order; each component is the leader of its own session, so its group is signalled.
  for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    pid=$(cat "$run/pids/$c.pid" 2>/dev/null) || continue
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$c"; done
  local data; data=$(sed -n 's/^KCM_RS_ETCD_DATA=//p' "$run/cluster.env" 2>/dev/null || true)
  [[ -n $data && -d $data ]] && rm -rf "$data"
  rm -rf "$run"
  log "cluster stopped and $run removed"
}

cmd_status() {
  [[ -f $run/cluster.env ]] || { echo "no cluster (run dir $run)"; return 1; }
  local c rc=0 mode; mode=$(sed -n 's/^KCM_RS_MODE=//p' "$run/cluster.env")
  echo "cluster in $run, mode $mode"
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
    if alive "$c"; then
      printf '  %-24s running (pid %s)\n' "$c" "$(cat "$run/pids/$c.pid")"
    else
      printf '  %-24s NOT RUNNING (log %s)\n' "$c" "$run/logs/$c.log"; rc=1
    fi
  done
  return $rc
}

cmd_env() {
  [[ -f $run/cluster.env ]] || die "no cluster in $run; run 'hack/cluster.sh up' first"
  echo "export KUBECONFIG=$run/kubeconfig"
  echo "export PATH=$kube_bin:\$PATH"
  echo "export KCM_RS_RUN_DIR=$run"
}

load_env() {
  [[ -f $run/cluster.env ]] || die "no cluster in $run; run 'hack/cluster.sh up' first"
  # shellcheck disable=SC1091
  source "$run/cluster.env"
}

# Kills one component (kill -9 when --kill is given, as a crash would) and starts it again with the
# same command line, then waits until it is ready. Used by tests of reconnection and relisting.
cmd_restart() {
  local c=${1:-} sig=TERM
  [[ ${2:-} == --kill ]] && sig=KILL
  load_env
  [[ -f $run/cmd/$c ]] || die "unknown component '$c'"
  local pid; pid=$(cat "$run/pids/$c.pid")
  kill "-$sig" -- "-$pid" 2>/dev/null || true
  stop "$c"
  local -a argv; eval "argv=($(cat "$run/cmd/$c"))"
  local phase_start=$SECONDS
  start "$c" "${argv[@]}"
  ready "$c"
}

# Switches upstream KCM to another mode by restarting it with that mode's --controllers. `bare` stops
# kube-controller-manager and kube-scheduler instead: etcd, kube-apiserver and kwok are left, what
# envtest runs plus KWOK (the embedded-controllers suite); leaving it starts both again. KCM-FLAGs
# are added to kube-controller-manager's command line until the next switch or `restart` (a test
# that compares a flag such as --terminated-pod-gc-threshold with upstream's).
cmd_mode() {
  local mode=${1:-}
  [[ $mode == reference || $mode == replace || $mode == bare ]] ||
    die "mode must be reference, replace or bare, not '$mode'"
  shift
  local -a extra=("$@")
  [[ $mode != bare || ${#extra[@]} -eq 0 ]] || die "bare mode runs no kube-controller-manager to give flags to"
  load_env
  stop kube-controller-manager
  local phase_start=$SECONDS argv
  if [[ $mode == bare ]]; then
    stop kube-scheduler
  else
    if ! alive kube-scheduler; then
      eval "argv=($(cat "$run/cmd/kube-scheduler"))"
      start kube-scheduler "${argv[@]}"
      ready kube-scheduler
    fi
    eval "argv=($(cat "$run/cmd/kube-controller-manager"))"
    local i
    for i in "${!argv[@]}"; do
      [[ ${argv[$i]} == --controllers=* ]] && argv[$i]="--controllers=$(kcm_controllers "$mode")"
    done
    start kube-controller-manager "${argv[@]}" ${extra[@]+"${extra[@]}"}
    # The next switch starts from the command line without them.
    printf '%q ' "${argv[@]}" >"$run/cmd/kube-controller-manager"
    ready kube-controller-manager
  fi
  sed -i "s/^KCM_RS_MODE=.*/KCM_RS_MODE=$mode/" "$run/cluster.env"
  log "upstream kube-controller-manager now in $mode mode"
}

# Restarts kube-apiserver with (on) or without (off) the ShardedListAndWatch feature gate. With
# --audit-writes it also logs every write of the admin user (what kcm-rs, the tests and kwok use; the
# User-Agent tells them apart) and of the shipped kcm-rs ServiceAccount to logs/audit-writes.log, Lease writes in kube-system with their
# request body: the sharding e2e checks from it that no two replicas wrote to one shard in one
# Lease term. Without it, such logging from an earlier restart is dropped again.
cmd_sharding() {
  local want=${1:-} audit=${2:-}
  [[ $want == on || $want == off ]] || die "sharding must be on or off, not '$want'"
  [[ -z $audit || $audit == --audit-writes ]] || die "unknown option '$audit' (--audit-writes)"
  load_env
  local -a argv kept=(); eval "argv=($(cat "$run/cmd/kube-apiserver"))"
  local policy=$run/pki/audit-writes.yaml a ours=
  for a in "${argv[@]}"; do [[ $a == --audit-policy-file="$policy" ]] && ours=1; done
  for a in "${argv[@]}"; do
    [[ $a == --feature-gates=ShardedListAndWatch=true ]] && continue
    [[ -n $ours && $a == --audit-* ]] && continue
    [[ -n $audit && $a == --audit-* ]] && die "kube-apiserver audits already (KCM_RS_AUDIT): --audit-writes cannot be added"
    kept+=("$a")
  done
  [[ $want == on ]] && kept+=(--feature-gates=ShardedListAndWatch=true)
  if [[ -n $audit ]]; then
    cat >"$policy" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  users: [admin, "system:serviceaccount:kcm-rs:kcm-rs"]
  verbs: [create, update, patch]
  namespaces: [kube-system]
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: None
  namespaces: [kube-node-lease]
- level: Metadata
  users: [admin, "system:serviceaccount:kcm-rs:kcm-rs"]
  verbs: [create, update, patch, delete, deletecollection]
- level: None
EOF
    # Blocking: an event is in the file once its request has been answered, so a test reads them all.
    kept+=(--audit-policy-file="$policy" --audit-log-path="$run/logs/audit-writes.log"
      --audit-log-format=json --audit-log-mode=blocking)
  fi
  stop kube-apiserver
  local phase_start=$SECONDS
  start kube-apiserver "${kept[@]}"
  ready kube-apiserver
}

# Compacts etcd at its current revision through its gRPC gateway, so that every older resourceVersion
# is gone from etcd (the apiserver answers 410 Gone for it once its watch cache no longer has it).
cmd_compact() {
  load_env
  local rev
  rev=$(curl -fs -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d '{"key":"AA==","limit":1}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])') || die "cannot read etcd's revision"
  curl -fs -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null \
    || die "etcd compaction failed"
  echo "$rev"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  restart) shift; cmd_restart "$@" ;;
  compact) cmd_compact ;;
  mode) shift; cmd_mode "$@" ;;
  sharding) shift; cmd_sharding "$@" ;;
  logs) [[ -n ${2:-} ]] && tail -n 100 "$run/logs/$2.log" || ls "$run/logs" ;;
  *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
