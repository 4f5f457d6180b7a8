#!/usr/bin/env bash
# Runs the e2e suites in lanes: each lane starts a local control plane of its own (reference mode),
# runs its items one after the other on it, and always stops it.
#
# Usage: hack/e2e.sh [--lanes N] [--no-build | --build-only] [ITEM...]
#
#   ITEM            a suite: a file of e2e/tests with disruptive_* tests (`job`, `replicaset_soak`, ...;
#                   the lists below), or
#                     parallel        every test not named disruptive_*, 4 at a time
#                     conformance-ci  hack/conformance.sh's CI run, judging target/debug/kcm-rs
#                     bench-smoke     hack/bench.sh --scale tiny --qps 100/200
#                     kwokctl         hack/kwokctl.sh: the kwokctl recipe on a kwokctl cluster of its own
#                     envtest-go      hack/envtest.sh go: the Go envtest example on envtest's own plane
#                     envtest-rs      hack/envtest.sh rust: the envtest crate and the embedded controllers
#                     all             parallel and every suite of the e2e and soak lists (`make e2e`)
#                   Without ITEM: all. conformance-ci and bench-smoke start control planes of their own
#                   (/tmp/kcm-rs-conformance, /tmp/kcm-rs-bench); their lane stops its own first.
#   --lanes N       N lanes at once ($KCM_RS_E2E_LANES; default 3 for `all`, else 1: named items then
#                   run one at a time, in the order given). The items wait in one queue, longest first
#                   (durations: known_seconds below), and a lane takes the next as its last one ends.
#   --no-build      the binaries are built already (hack/test.sh builds them in stages of their own)
#   --build-only    only build what the items need
#   --plan          print the lanes the items would run in if each took its known seconds, and exit
#   --lane N ITEM...  run the items in order as lane N, on its control plane
#   --lane N --queue FILE  the same, taking items from the shared queue FILE (what each lane runs)
#   --item ITEM     run one item's command on the current control plane (what a lane runs, under
#                   `timeout`: see item_limit)
#
# Lane N's control plane lives in ${KCM_RS_E2E_RUN_BASE:-/tmp/kcm-rs-lane}-N (KCM_RS_RUN_DIR is set
# per lane; a cluster in /tmp/kcm-rs-cluster is left alone). With one lane the output goes to the
# terminal; with more, to ${KCM_RS_E2E_LOGS:-target/e2e-logs}/lane-N.log, printed with a [lane N]
# prefix if something in the lane failed (with the components' logs copied beside it). Every item
# runs even after a failure; the end is a table of items, seconds and test counts (appended to
# $KCM_RS_TIMINGS instead if set: hack/test.sh prints it). Soak lengths pass through the environment, e.g.
# `KCM_RS_SOAK_SECONDS=600 hack/e2e.sh replicaset_soak` (60 s by default; `make soak`).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
cargo=${CARGO:-cargo}
run_base=${KCM_RS_E2E_RUN_BASE:-/tmp/kcm-rs-lane}
logs=${KCM_RS_E2E_LOGS:-$root/target/e2e-logs}
kcm_rs_bin=${KCM_RS_BIN:-$root/target/debug/kcm-rs}

# Every e2e/tests file with disruptive_* tests (they restart or switch control-plane components, so
# their suite runs alone on its lane's control plane) must be in exactly one list: a file in none
# fails the run instead of being skipped.
e2e_suites=(informer_disruptive secure_serving replicaset deployment job shadow shadow_collectors rbac
  leader_election leader_election_load sharding layout_change shard_faults embedded ttl_after_finished cronjob
  namespace_controller serviceaccount_controller garbage_collector pod_garbage_collector)
# Randomized, with short seeds unless KCM_RS_SOAK_SECONDS / KCM_RS_RANDOM_SECONDS say otherwise.
soak_suites=(replicaset_soak deployment_soak job_soak random_differential)
# Need the kcm-rs:dev image (hack/image.sh) and podman: `make image-e2e`, `make test`. static_pod is
# the kubeadm recipe's static pod (deploy/kubeadm) under `podman kube play`.
image_suites=(image static_pod)
# Seconds each item took in its lane on the 2-core machine (cold `make test` of 2026-11-29, three
# lanes, on a day the machine built at half its usual speed; envtest-go with its Go build cached, as CI
# has it): they order the queue and set each item's time limit. conformance-ci and bench-smoke
# without their builds.
declare -A known_seconds=(
  [parallel]=305 [informer_disruptive]=35 [secure_serving]=117 [replicaset]=210 [deployment]=171
  [job]=265 [shadow]=258 [shadow_collectors]=150 [rbac]=219 [leader_election]=63 [leader_election_load]=99 [sharding]=377
  [layout_change]=108 [shard_faults]=256 [embedded]=33 [ttl_after_finished]=63 [cronjob]=274
  [namespace_controller]=60 [serviceaccount_controller]=60 [garbage_collector]=105 [pod_garbage_collector]=235
  [replicaset_soak]=175 [deployment_soak]=88 [job_soak]=144 [random_differential]=224 [image]=21
  [static_pod]=25 [conformance-ci]=320 [bench-smoke]=226 [kwokctl]=15 [envtest-go]=28 [envtest-rs]=14
)

die() { printf '[e2e] ERROR: %s\n' "$*" >&2; exit 2; }
log() { printf '[e2e] %s\n' "$*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

contains() {
  local want=$1 x; shift
  for x in "$@"; do [[ $x == "$want" ]] && return 0; done
  return 1
}

# Fails when a test file has disruptive_* tests but is in no list, or a list names no test file.
check_suite_lists() {
  local listed=("${e2e_suites[@]}" "${soak_suites[@]}" "${image_suites[@]}") found=() f s
  for f in $(grep -l 'fn disruptive_' e2e/tests/*.rs); do found+=("$(basename "$f" .rs)"); done
  for s in "${found[@]}"; do
    contains "$s" "${listed[@]}" || die "e2e/tests/$s.rs has disruptive_* tests but is in no suite" \
      "list of hack/e2e.sh: add it to one (and to known_seconds)"
  done
  for s in "${listed[@]}"; do
    contains "$s" "${found[@]}" ||
      die "hack/e2e.sh lists suite $s, but e2e/tests/$s.rs has no disruptive_* test"
  done
}

# Sets `items` to the arguments with `all` expanded; dies on an unknown name.
expand_items() {
  local item
  items=()
  for item in "$@"; do
    case $item in
      all) items+=(parallel "${e2e_suites[@]}" "${soak_suites[@]}") ;;
      parallel | conformance-ci | bench-smoke | kwokctl | envtest-go | envtest-rs) items+=("$item") ;;
      *)
        contains "$item" "${e2e_suites[@]}" "${soak_suites[@]}" "${image_suites[@]}" || die "unknown item" \
          "'$item' (a suite of the lists in hack/e2e.sh, parallel, conformance-ci, bench-smoke, kwokctl, envtest-go, envtest-rs or all)"
        items+=("$item")
        ;;
    esac
  done
}

# Builds what the items need, each binary once.
build() {
  # With the crash points the Job suite switches on through FAILPOINTS (job::failpoints); inert
  # without it, so conformance-ci judges this binary too.
  $cargo build -p kcm-rs --features failpoints
  $cargo test -p kcm-rs-e2e --no-run
  local needs_image=false
  if contains image "$@" || contains static_pod "$@"; then needs_image=true; fi
  if contains bench-smoke "$@" || $needs_image; then $cargo build --profile image -p kcm-rs; fi
  if $needs_image; then "$here/image.sh"; fi
  # Once here, so that lanes starting together do not build the control plane side by side.
  "$here/build.sh" >/dev/null
  if contains conformance-ci "$@"; then "$here/conformance.sh" --build-only >/dev/null; fi
  if contains envtest-go "$@"; then "$here/envtest.sh" go --build-only; fi
  if contains envtest-rs "$@"; then "$here/envtest.sh" rust --build-only; fi
}

# The items longest first (known_seconds; 60 for an item without a figure), one per line.
longest_first() {
  local item
  for item in "$@"; do echo "${known_seconds[$item]:-60} $item"; done | sort -s -k1,1nr | cut -d' ' -f2
}

# What the queue comes to if every item takes its known seconds: each to the lane that is free first.
# Prints one line per lane.
split_lanes() {
  local lanes=$1; shift
  local -a load=() lines=()
  local n item best
  for ((n = 0; n < lanes; n++)); do load[n]=0; lines[n]=""; done
  while read -r item; do
    best=0
    for ((n = 1; n < lanes; n++)); do ((load[n] < load[best])) && best=$n; done
    load[best]=$((load[best] + ${known_seconds[$item]:-60}))
    lines[best]+=" $item"
  done < <(longest_first "$@")
  for ((n = 0; n < lanes; n++)); do echo "${lines[n]# }"; done
}

print_plan() {
  local lanes=$1 n=0 line item secs; shift
  while read -r line; do
    n=$((n + 1)) secs=0
    for item in $line; do secs=$((secs + ${known_seconds[$item]:-60})); done
    printf 'lane %s (~%ss): %s\n' "$n" "$secs" "$line"
  done < <(if ((lanes == 1)); then echo "$*"; else split_lanes "$lanes" "$@"; fi)
}

# ---- one lane ----------------------------------------------------------------------------------

# Progress lines for the terminal (fd 3 is the caller's stdout; with one lane, the terminal).
say() { printf '[lane %s] %s\n' "$lane" "$*" >&3; }

# Appends a row of the timing table: item, lane, seconds, result, tests passed, failed.
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$KCM_RS_E2E_ROWS"; }

cluster_up=false

cluster_start() {
  $cluster_up && return 0
  # The remains of an interrupted run in this lane's directory (the lock says no live run owns it).
  "$here/cluster.sh" down >/dev/null 2>&1 3>&- 9>&- || true
  # Sharded differential runs (KCM_RS_E2E_SHARDS > 1) get an API server that shards list and watch.
  local gate=()
  ((${KCM_RS_E2E_SHARDS:-1} > 1)) && gate=(--sharded-list-watch)
  "$here/cluster.sh" up --mode reference "${gate[@]}" 3>&- 9>&- || return 1
  cluster_up=true
}

# Waits, at most $settle_timeout seconds, while the previous suite's pods and namespaces are still
# going away. Suites delete their namespaces in the background as they end; one that leaves a
# thousand pods behind (leader_election_load) keeps upstream's controllers and the API server busy
# well into the next suite, whose upstream half then lags behind what its differential expects. A
# namespace still terminating is as bad: a suite that restarts kube-controller-manager (ModeGuard)
# makes it resync the leftover ReplicaSets, and the new process's replicaset-controller spends its
# token bucket and its event stream on them (rejected Events for namespaces just gone) while the
# suite's upstream half runs; a replicaset differential once saw none of upstream's events that way.
# The wait ends when neither count has changed over three polls (6 s): a namespace that never
# finishes deleting (a failed pod kept by its finalizer under both controllers) holds a few pods that
# do not change.
settle_timeout=${KCM_RS_E2E_SETTLE_SECONDS:-180}
settle() {
  $cluster_up || return 0
  local t0=$SECONDS kubectl pod_lines namespace_lines pods terminating previous="" still=0
  kubectl=$(source "$KCM_RS_RUN_DIR/cluster.env" && echo "$KCM_RS_KUBE_BIN/kubectl")
  local -a k=("$kubectl" --kubeconfig "$KCM_RS_RUN_DIR/kubeconfig")
  while ((SECONDS - t0 < settle_timeout)); do
    # An answer kubectl did not get (the API server timing out in a burst) counts as nothing known,
    # not as nothing left: it neither ends the wait nor counts towards the stillness.
    if ! pod_lines=$("${k[@]}" get pods --all-namespaces --no-headers 2>/dev/null) ||
      ! namespace_lines=$("${k[@]}" get namespaces --no-headers 2>/dev/null); then
      sleep 3
      continue
    fi
    pods=$(awk 'NF {n++} END {print n + 0}' <<<"$pod_lines")
    terminating=$(awk '$2 == "Terminating" {n++} END {print n + 0}' <<<"$namespace_lines")
    ((pods == 0 && terminating == 0)) && break
    if [[ "$pods $terminating" == "$previous" ]]; then still=$((still + 1)); else still=0; fi
    ((still >= 2)) && break
    previous="$pods $terminating"
    sleep 3
  done
  ((SECONDS - t0 < 4)) || say "waited $((SECONDS - t0))s for the previous suite's pods and namespaces to go"
}

cluster_stop() {
  $cluster_up || return 0
  if ((lane_failed)); then
    rm -rf "$logs/lane-$lane-cluster"
    cp -r "$KCM_RS_RUN_DIR/logs" "$logs/lane-$lane-cluster" 2>/dev/null || true
  fi
  "$here/cluster.sh" down 3>&- 9>&- || true
  cluster_up=false
}

# The command of one item.
item_command() {
  case $1 in
    # own_plane_* tests start a control plane of their own: items of their own (envtest-rs).
    parallel) $cargo test -p kcm-rs-e2e -- --test-threads=4 --skip disruptive_ --skip own_plane_ ;;
    conformance-ci)
      env -u KCM_RS_RUN_DIR "$here/conformance.sh" --mode replace --implemented-only --conformance-only \
        --kcm-rs "$kcm_rs_bin"
      ;;
    bench-smoke) env -u KCM_RS_RUN_DIR "$here/bench.sh" --scale tiny --qps 100/200 ;;
    kwokctl) KCM_RS_BIN=$kcm_rs_bin "$here/kwokctl.sh" ;;
    envtest-go) KCM_RS_BIN=$kcm_rs_bin "$here/envtest.sh" go ;;
    envtest-rs) "$here/envtest.sh" rust ;;
    *) $cargo test -p kcm-rs-e2e --test "$1" -- --test-threads=1 ;;
  esac
}

# The seconds an item may take before it is stopped: a hung item fails on its own with its output,
# instead of holding its lane until CI's own limit ends the whole run without a report. Five times
# what it takes, at least 10 minutes, plus any longer soak the environment asks for.
item_limit() {
  local known=${known_seconds[$1]:-60}
  local limit=$((known * 5 > 600 ? known * 5 : 600))
  echo $((limit + ${KCM_RS_SOAK_SECONDS:-0} + ${KCM_RS_RANDOM_SECONDS:-0}))
}

# Sums cargo's "test result:" lines of an item's output: "PASSED FAILED", or "- -" without any.
test_counts() {
  awk '/^test result:/ {
         seen = 1
         for (i = 2; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i-1); if ($i ~ /^failed;?$/) f += $(i-1) }
       }
       END { if (seen) print p + 0, f + 0; else print "-", "-" }' "$1"
}

run_item() {
  local item=$1 t0=$SECONDS rc out counts
  case $item in
    conformance-ci | bench-smoke) cluster_stop ;;
    # Planes of their own, for seconds: the lane's may stay up beside them.
    kwokctl | envtest-go | envtest-rs) ;;
    *) cluster_start || { record "$item" "$lane" 0 NO-CLUSTER - -; no_cluster=true; return 1; }
       settle ;;
  esac
  say "$item: started"
  printf '\n===== %s (lane %s) =====\n' "$item" "$lane"
  out=$(mktemp)
  set +e
  # Without the lock and the terminal: a process left behind must not hold either. `timeout` runs the
  # item in a process group of its own and signals all of it.
  local limit; limit=$(item_limit "$item")
  timeout --kill-after=30 "$limit" "$0" --item "$item" 2>&1 3>&- 9>&- | tee "$out"
  rc=${PIPESTATUS[0]}
  set -e
  ((rc != 124 && rc != 137)) || echo "[e2e] $item: stopped after its limit of ${limit}s" | tee -a "$out"
  read -r -a counts < <(test_counts "$out")
  rm -f "$out"
  local secs=$((SECONDS - t0)) result=ok
  ((rc == 0)) || result=FAILED
  record "$item" "$lane" "$secs" "$result" "${counts[@]}"
  say "$item: $result after ${secs}s"
  return "$rc"
}

# The next item of a queue file (one item per line) that lanes share: "$1.next" holds how many are
# taken, under the lock "$1.lock". Fails when none is left.
take_item() {
  local queue=$1 taken
  {
    flock 8
    taken=$(cat "$queue.next" 2>/dev/null || echo 0)
    echo $((taken + 1)) >"$queue.next"
  } 8>"$queue.lock"
  sed -n "$((taken + 1))p" "$queue" | grep .
}

# hack/e2e.sh --lane N ITEM... | --queue FILE: runs the items in order on lane N's control plane.
lane_main() {
  lane=$1; shift
  export KCM_RS_RUN_DIR=$run_base-$lane
  { true >&3; } 2>/dev/null || exec 3>&1
  KCM_RS_E2E_ROWS=${KCM_RS_E2E_ROWS:-/dev/null}
  mkdir -p "$(dirname "$KCM_RS_RUN_DIR")"
  exec 9>"$KCM_RS_RUN_DIR.lock"
  flock -n 9 || die "lane $lane: $KCM_RS_RUN_DIR is in use by another hack/e2e.sh (lock $KCM_RS_RUN_DIR.lock)"
  lane_failed=0 no_cluster=false
  trap cluster_stop EXIT
  local item
  if [[ ${1:-} == --queue ]]; then
    # A lane whose control plane does not start leaves the rest of the queue to the others.
    while ! $no_cluster && item=$(take_item "$2"); do run_item "$item" || lane_failed=1; done
  else
    for item in "$@"; do run_item "$item" || lane_failed=1; done
  fi
  exit "$lane_failed"
}

# ---- the lanes together --------------------------------------------------------------------

# The rows by lane, in the order they ran, and each lane's total.
print_table() {
  printf '\n%-22s %4s %8s  %-8s %s\n' item lane seconds result "tests passed/failed"
  sort -t$'\t' -k2,2n -s "$1" | awk -F'\t' '{ printf "%-22s %4s %8s  %-8s %s/%s\n", $1, $2, $3, $4, $5, $6 }'
  awk -F'\t' '{ s[$2] += $3 } END { for (l in s) printf "lane %s: %ds\n", l, s[l] }' "$1" | sort -n -k2
}

# "PASSED FAILED" over every row.
total_counts() {
  awk -F'\t' '{ p += ($5 == "-" ? 0 : $5); f += ($6 == "-" ? 0 : $6) } END { print p + 0, f + 0 }' "$1"
}

lane_pids=()

# Stops every lane's session: its items, and through its exit trap, its control plane.
stop_lanes() {
  local pid
  for pid in "${lane_pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${lane_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# Starts every lane in a session of its own (so that it can be stopped as a group, and stops its
# control plane on the way out), each taking items from one queue, longest first: a lane whose items
# ran short of their known seconds takes more, so the lanes end close together. Waits for all, prints
# the logs of those that failed.
run_lanes() {
  local lanes=$1; shift
  local queue=$logs/queue n rc=0
  local -a failed=()
  rm -f "$queue" "$queue.next" "$queue.lock"
  longest_first "$@" >"$queue"
  log "$lanes lanes (${run_base}-N, logs $logs/lane-N.log), items longest first: $(tr '\n' ' ' <"$queue")"
  trap 'stop_lanes; exit 130' INT TERM
  for ((n = 1; n <= lanes && n <= $#; n++)); do
    setsid "$0" --lane "$n" --queue "$queue" >"$logs/lane-$n.log" 2>&1 &
    lane_pids[n]=$!
  done
  for n in "${!lane_pids[@]}"; do
    wait "${lane_pids[n]}" || { rc=1; failed+=("$n"); }
  done
  trap - INT TERM
  # Items no lane took (no lane's control plane started): rows of the table, and a failed run.
  local item taken
  taken=$(cat "$queue.next" 2>/dev/null || echo 0)
  while read -r item; do
    record "$item" - 0 NOT-RUN - -
    rc=1
  done < <(tail -n +"$((taken + 1))" "$queue")
  for n in "${failed[@]}"; do
    printf '\n----- lane %s failed: %s -----\n' "$n" "$logs/lane-$n.log"
    sed "s/^/[lane $n] /" "$logs/lane-$n.log"
  done
  return "$rc"
}

main() {
  local lanes=${KCM_RS_E2E_LANES:-} do_build=true build_only=false plan_only=false
  local -a args=()
  while (($#)); do
    case $1 in
      --lane) shift; lane_main "$@" ;;
      --item) item_command "$2"; exit ;;
      --lanes) lanes=${2:-}; shift 2 ;;
      --lanes=*) lanes=${1#--lanes=}; shift ;;
      --no-build) do_build=false; shift ;;
      --build-only) build_only=true; shift ;;
      --plan) plan_only=true; shift ;;
      -h | --help) usage; exit 0 ;;
      -*) die "unknown option $1 (see --help)" ;;
      *) args+=("$1"); shift ;;
    esac
  done
  ((${#args[@]})) || args=(all)
  [[ -n $lanes ]] || { if [[ ${args[*]} == all ]]; then lanes=3; else lanes=1; fi; }
  [[ $lanes =~ ^[1-9][0-9]*$ ]] || die "--lanes must be a positive number, not '$lanes'"
  check_suite_lists
  local -a items
  expand_items "${args[@]}"
  if $plan_only; then print_plan "$lanes" "${items[@]}"; exit 0; fi
  if $do_build || $build_only; then build "${items[@]}"; fi
  $build_only && exit 0

  mkdir -p "$logs"
  export KCM_RS_E2E_ROWS
  KCM_RS_E2E_ROWS=$(mktemp)
  exec 3>&1
  local rc=0
  if ((lanes == 1)); then
    log "1 lane: ${items[*]}"
    "$0" --lane 1 "${items[@]}" || rc=$?
  else
    run_lanes "$lanes" "${items[@]}" || rc=$?
  fi
  # hack/test.sh prints the rows in its own table.
  if [[ -n ${KCM_RS_TIMINGS:-} ]]; then
    cat "$KCM_RS_E2E_ROWS" >>"$KCM_RS_TIMINGS"
  else
    print_table "$KCM_RS_E2E_ROWS"
  fi
  if ((lanes > 1)); then
    # One line in cargo's format, for .ci/run's count of every test (the lanes' output is in logs).
    local p f result=ok
    read -r p f < <(total_counts "$KCM_RS_E2E_ROWS")
    ((rc == 0)) || result=FAILED
    printf 'test result: %s. %d passed; %d failed; (e2e: the sum over %d lanes)\n' \
      "$result" "$p" "$f" "$lanes"
  fi
  rm -f "$KCM_RS_E2E_ROWS"
  exit "$rc"
}

main "$@"
