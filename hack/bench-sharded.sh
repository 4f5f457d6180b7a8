#!/usr/bin/env bash
# kcm-rs replicas sharing the work (--shards), measured per replica over idle pods spread across
# namespaces, beside one upstream kube-controller-manager over the same pods; then the failover time
# after kill -9 of one replica (hack/bench/sharded.py). The control plane of its own runs kube-apiserver
# with ShardedListAndWatch on (KCM_RS_SHARDED_LIST_WATCH=0: off, every replica filtering on its side).
#
#   hack/bench-sharded.sh [--pods 20000] [--namespaces 40] [--shards 12] [--replicas 1,2,4] [--out FILE]
#
# Not part of `make test`: `make bench-sharded` writes benches/results/<date>-sharded.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}
export KCM_RS_RUN_DIR=${KCM_RS_RUN_DIR:-/tmp/kcm-rs-bench}
export KCM_RS_SHARDED_LIST_WATCH=${KCM_RS_SHARDED_LIST_WATCH:-1}
[[ $KCM_RS_SHARDED_LIST_WATCH == 1 ]] || unset KCM_RS_SHARDED_LIST_WATCH

profile=${KCM_RS_PROFILE:-image}
$cargo build --profile "$profile" -p kcm-rs
"$here/cluster.sh" down >/dev/null 2>&1 || true
logs=${KCM_RS_RUN_DIR}.logs # kept after the control plane is gone
trap 'rm -rf "$logs"; cp -r "$KCM_RS_RUN_DIR/logs" "$logs" 2>/dev/null; "$here/cluster.sh" down; echo "logs: $logs"' EXIT
"$here/cluster.sh" up --mode replace
eval "$("$here/cluster.sh" env)"
set -a; source "$KCM_RS_RUN_DIR/cluster.env"; set +a
KCM_RS_PROFILE=$profile KCM_RS_BINARY=target/$profile/kcm-rs python3 "$here/bench/sharded.py" "$@"
