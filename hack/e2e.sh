#!/usr/bin/env bash
# Runs the e2e suites against a local control plane that this script starts (reference mode) and
# always stops. Suites named disruptive_* restart control-plane components, so they run after the
# others, one at a time.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
cargo=${CARGO:-cargo}

$cargo build -p kcm-rs
$cargo test -p kcm-rs-e2e --no-run
"$here/cluster.sh" down >/dev/null 2>&1 || true
trap '"$here/cluster.sh" down' EXIT
"$here/cluster.sh" up --mode reference
eval "$("$here/cluster.sh" env)"
$cargo test -p kcm-rs-e2e -- --test-threads=4 --skip disruptive_
for suite in informer_disruptive replicaset shadow rbac leader_election; do
  $cargo test -p kcm-rs-e2e --test "$suite" -- --test-threads=1
done
