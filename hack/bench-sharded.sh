#!/usr/bin/env bash
# kcm-rs replicas sharing the work (--shards), measured per replica over idle pods spread across
# namespaces, beside one upstream kube-controller-manager over the same pods; then the failover time
# after kill -9 of one replica (hack/bench/sharded.py). The control plane of its own (hack/bench.sh's)
# runs kube-apiserver with ShardedListAndWatch on (KCM_RS_SHARDED_LIST_WATCH=0: off, every replica
# filtering on its side).
#
#   hack/bench-sharded.sh [--pods 20000] [--namespaces 40] [--shards 12] [--replicas 1,2,4]
#                         [--wave-pods N] [--upstream-failover] [--out FILE]
#
# --wave-pods N: then, per replica count, a Deployment of N pods in every namespace created and rolled,
# with each replica's CPU and received bytes during it. --upstream-failover: the failover probe across
# two upstream KCMs with leader election too. The largest pass this machine ran:
# `--pods 100000 --replicas 1,2,4 --upstream-failover`.
#
# Not part of `make test`: `make bench-sharded` writes benches/results/<date>-sharded.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Enough KWOK nodes (5,000 pods each) for the idle pods and the runner's own, so that every pod runs
# and the cluster is quiet before anything is measured.
pods=20000 prev=
for a in "$@"; do [[ $prev == --pods ]] && pods=$a; prev=$a; done
export KCM_RS_NODES=${KCM_RS_NODES:-$(((pods + 5000 + 4999) / 5000))}
if [[ ${KCM_RS_SHARDED_LIST_WATCH:-1} == 1 ]]; then
  export KCM_RS_SHARDED_LIST_WATCH=1
else
  unset KCM_RS_SHARDED_LIST_WATCH
fi
exec "$here/bench.sh" --runner sharded "$@"
