#!/usr/bin/env bash
# Whole-process profiles of a side-by-side pass with Linux perf, which sees what the processes' own
# /debug/pprof does not: time in libc and the kernel (system calls, scheduling, TCP), and a binary
# without symbols by address at least. Run it beside hack/bench.sh; it attaches to each measured
# process as it starts (kcm-rs, and upstream's second KCM, started with only the workload's controllers)
# and stops with Ctrl-C.
#
#   hack/bench/perf-attach.sh OUTDIR [dwarf]
#
# Per process, OUTDIR/<comm>_<pid>_<controllers>.stat (task-clock, context switches, migrations,
# page faults) and .data (perf record at PERF_HZ, default 997; frame-pointer call graphs, or with
# `dwarf` DWARF unwinding at 499 Hz: kcm-rs's release build has no frame pointers). Then, e.g.:
#   perf report -i FILE.data --no-children -g none --sort dso
#   perf script -i FILE.data | inferno-collapse-perf | inferno-flamegraph > flame.svg
set -euo pipefail
out=$1 unwind=${2:-fp}
mkdir -p "$out"
seen=" "
while true; do
  for pid in $(pgrep -x kcm-rs || true) $(pgrep -f 'kube-controller-manager .*--controllers=' || true); do
    [[ $seen == *" $pid "* ]] && continue
    seen+="$pid "
    controllers=$(tr '\0' '\n' < "/proc/$pid/cmdline" | sed -n 's/^--controllers=//p')
    # The cluster's own KCM (`--controllers=*,-…`) runs beside both and is not measured.
    [[ $controllers == '*'* ]] && continue
    controllers=$(tr -c 'a-z0-9\n' _ <<< "$controllers")
    tag="$(cat "/proc/$pid/comm")_${pid}_${controllers}"
    perf stat -e task-clock,context-switches,cpu-migrations,page-faults -p "$pid" -o "$out/$tag.stat" &
    if [[ $unwind == dwarf ]]; then
      perf record -q -F "${PERF_HZ:-499}" --call-graph dwarf,32768 -p "$pid" -o "$out/$tag.data" >/dev/null &
    else
      perf record -q -F "${PERF_HZ:-997}" -g -p "$pid" -o "$out/$tag.data" >/dev/null &
    fi
    echo "attached to $tag"
  done
  sleep 0.2
done
