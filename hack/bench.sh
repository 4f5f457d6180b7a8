#!/usr/bin/env bash
# Upstream kube-controller-manager vs kcm-rs, side by side on one local control plane of its own:
# converge time, event -> action latency, CPU, peak RSS and API requests against the targets in
# benches/README.md. For each workload and each --kube-api-qps/--kube-api-burst pair, a second
# upstream KCM running only the workload's controllers, then kcm-rs running them; the cluster's own
# KCM runs everything else (garbage collector, service accounts, namespaces) in both runs. Prints one
# markdown table per workload; `--out benches/results/<date>-<topic>.md` writes them to a new file
# there (what `make bench-e2e` does), `--append FILE` adds them to an existing one.
#
#   hack/bench.sh [--scale tiny|small|full] [--qps 20/30,100/200] [--workloads rs,scale,deploy,jobs,batch,rollout,idle,gc]
#                 [--cpu-profiles] [--out FILE] [--append FILE]
#
# The runner is hack/bench/run.py (workloads in hack/bench/workloads.py; unit tests:
# `python3 -m unittest discover -s hack/bench`).
#
# kcm-rs is the binary the container image ships: the `image` profile (fat LTO, one codegen unit,
# stripped), which uses less CPU and RSS than `--release`
# (benches/results/2026-11-24-image-profile.md); KCM_RS_PROFILE=release measures the plain release
# build instead; KCM_RS_BENCH_BIN=path runs that binary, unbuilt (make test's smoke run passes the
# static amd64 binary of hack/dist.sh).
#
# Not part of `make test` (`make bench-e2e`; CI runs `--scale tiny` once to see it start). The API
# server writes an audit log of the measured process's requests (KCM_RS_AUDIT=1, user `bench`).
#
# `--runner sharded` (first argument; hack/bench-sharded.sh) runs hack/bench/sharded.py instead of
# hack/bench/run.py on the same control plane set-up.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
runner=run
if [[ ${1:-} == --runner ]]; then runner=$2; shift 2; fi
cd "$here/.."
cargo=${CARGO:-cargo}
export KCM_RS_RUN_DIR=${KCM_RS_RUN_DIR:-/tmp/kcm-rs-bench}
export KCM_RS_AUDIT=1

if [[ -n ${KCM_RS_BENCH_BIN:-} ]]; then
  binary=$KCM_RS_BENCH_BIN profile=${KCM_RS_PROFILE:-given}
else
  profile=${KCM_RS_PROFILE:-image} binary=target/${KCM_RS_PROFILE:-image}/kcm-rs
  [[ $profile == dev ]] && binary=target/debug/kcm-rs
  $cargo build --profile "$profile" -p kcm-rs
fi
# The pass's charts (hack/bench/plots.py).
python3 -c 'import matplotlib' 2>/dev/null || {
  echo "hack/bench.sh: the charts need matplotlib: python3 -m pip install matplotlib" >&2
  exit 1
}
# --cpu-profiles (hack/bench/profiles.py): go tool pprof reads the profiles, inferno draws their flame
# graphs (pinned: the version of the first profiled pass, 2026-11-28).
INFERNO_VERSION=0.12.8
if [[ " $* " == *" --cpu-profiles "* ]] && ! command -v inferno-flamegraph >/dev/null; then
  echo "[bench] installing inferno $INFERNO_VERSION (flame graphs)" >&2
  $cargo install -q --locked "inferno@$INFERNO_VERSION" >&2
fi
"$here/cluster.sh" down >/dev/null 2>&1 || true
logs=${KCM_RS_RUN_DIR}.logs # kept after the control plane is gone
trap 'rm -rf "$logs"; cp -r "$KCM_RS_RUN_DIR/logs" "$logs" 2>/dev/null; "$here/cluster.sh" down; echo "logs: $logs"' EXIT
# The gc workload measures one garbage collector against another: the plane's own KCM then runs
# without its own for the whole pass (the other workloads' namespaces are still emptied by its
# namespace controller).
for ((i = 1; i <= $#; i++)); do
  if [[ ${!i} == --workloads ]]; then
    j=$((i + 1))
    if [[ ",${!j:-}," == *,gc,* ]]; then
      export KCM_RS_REPLACED_CONTROLLERS="deployment-controller replicaset-controller \
replicationcontroller-controller job-controller ttl-after-finished-controller cronjob-controller \
garbage-collector-controller"
    fi
  fi
done
"$here/cluster.sh" up --mode replace
eval "$("$here/cluster.sh" env)"
set -a; source "$KCM_RS_RUN_DIR/cluster.env"; set +a
KCM_RS_PROFILE=$profile KCM_RS_BINARY=$binary python3 "$here/bench/$runner.py" "$@"
