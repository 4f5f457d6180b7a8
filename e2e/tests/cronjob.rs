//! The CronJob controller, differential: each scenario (`kcm_rs_e2e::cronjob_scenarios`) runs under
//! upstream's controllers, then under kcm-rs's Job and CronJob controllers, and the outcomes must
//! match. Restarts kube-controller-manager (mode switches), so the test is named disruptive_* and
//! its suite runs alone on its control plane (hack/e2e.sh). `KCM_RS_SCENARIOS=a,b` runs only the
//! scenarios named.

use kcm_rs_e2e::{
    Cluster,
    cronjob_scenarios::scenarios,
    differential::{run_differential, selected},
};

#[tokio::test]
async fn disruptive_cronjob_matches_upstream() {
    let cluster = Cluster::connect().await;
    run_differential(
        &cluster,
        "cronjob",
        &["--controllers=job-controller,cronjob-controller"],
        &selected(scenarios()),
    )
    .await;
}
