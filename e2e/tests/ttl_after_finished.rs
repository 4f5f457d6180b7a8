//! The TTL-after-finished controller, differential: each scenario (`kcm_rs_e2e::ttl_scenarios`) runs
//! under upstream's controllers, then under kcm-rs's Job and TTL-after-finished controllers, and the
//! outcomes must match. Restarts kube-controller-manager (mode switches), so the test is named
//! disruptive_* and its suite runs alone on its control plane (hack/e2e.sh). `KCM_RS_SCENARIOS=a,b`
//! runs only the scenarios named.

use kcm_rs_e2e::{
    Cluster,
    differential::{run_differential, selected},
    ttl_scenarios::scenarios,
};

#[tokio::test]
async fn disruptive_ttl_after_finished_matches_upstream() {
    let cluster = Cluster::connect().await;
    run_differential(
        &cluster,
        "ttl-after-finished",
        &["--controllers=job-controller,ttl-after-finished-controller"],
        &selected(scenarios()),
    )
    .await;
}
