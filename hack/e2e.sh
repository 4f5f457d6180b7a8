#!/usr/bin/env bash
# Runs the e2e suites against a local control plane that this script starts (reference mode) and
# always stops. Tests named disruptive_* restart or switch control-plane components, so their suites
# run after the others, one at a time. `hack/e2e.sh SUITE...` runs only those suites, one at a time
# (e.g. `KCM_RS_SOAK_SECONDS=600 hack/e2e.sh replicaset_soak`: the soak's length, 120 s by default).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}

# With the crash points the Job suite switches on through FAILPOINTS (job::failpoints).
$cargo build -p kcm-rs --features failpoints
$cargo test -p kcm-rs-e2e --no-run
"$here/cluster.sh" down >/dev/null 2>&1 || true
trap '"$here/cluster.sh" down' EXIT
"$here/cluster.sh" up --mode reference
eval "$("$here/cluster.sh" env)"
if [ $# -gt 0 ]; then
  for suite in "$@"; do
    $cargo test -p kcm-rs-e2e --test "$suite" -- --test-threads=1
  done
  exit 0
fi
$cargo test -p kcm-rs-e2e -- --test-threads=4 --skip disruptive_
for suite in informer_disruptive secure_serving replicaset deployment job shadow rbac leader_election leader_election_load replicaset_soak deployment_soak job_soak random_differential; do
  $cargo test -p kcm-rs-e2e --test "$suite" -- --test-threads=1
done
