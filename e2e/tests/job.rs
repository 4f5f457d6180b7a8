//! The Job controller, differential: each scenario runs under upstream's Job controller, then under
//! kcm-rs's, and the outcomes must match (counters, index strings, conditions with reasons, pods by
//! index and phase, pods ever created, event reasons; no pod may keep the tracking finalizer).
//! Restarts kube-controller-manager (mode switches), so the test is named disruptive_* and runs in
//! the last, serial phase of `make e2e`. `KCM_RS_SCENARIOS=a,b` runs only the scenarios named.

use kcm_rs_e2e::{
    Cluster,
    differential::{run_differential, selected},
    job_scenarios::scenarios,
};

#[tokio::test]
async fn disruptive_job_matches_upstream() {
    let cluster = Cluster::connect().await;
    run_differential(
        &cluster,
        "job",
        &["--controllers=job-controller"],
        &selected(scenarios()),
    )
    .await;
}
