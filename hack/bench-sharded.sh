#!/usr/bin/env bash
# kcm-rs replicas sharing the work (--shards), measured per replica over idle pods spread across
# namespaces, beside one upstream kube-controller-manager over the same pods; then the failover time
# after kill -9 of one replica (hack/bench/sharded.py). The control plane of its own (hack/bench.sh's)
# runs kube-apiserver with ShardedListAndWatch on (KCM_RS_SHARDED_LIST_WATCH=0: off, every replica
# filtering on its side).
#
#   hack/bench-sharded.sh [--pods 20000] [--namespaces 40] [--shards 12] [--replicas 1,2,4] [--out FILE]
#
# Not part of `make test`: `make bench-sharded` writes benches/results/<date>-sharded.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ${KCM_RS_SHARDED_LIST_WATCH:-1} == 1 ]]; then
  export KCM_RS_SHARDED_LIST_WATCH=1
else
  unset KCM_RS_SHARDED_LIST_WATCH
fi
exec "$here/bench.sh" --runner sharded "$@"
