//! The Deployment controller, differential: each scenario runs under upstream's Deployment and
//! ReplicaSet controllers, then under kcm-rs's (both), and the outcomes must match. Restarts
//! kube-controller-manager (mode switches), so the test is named disruptive_* and its suite runs
//! alone on its control plane (hack/e2e.sh). `KCM_RS_SCENARIOS=rollback,quota` runs only the scenarios named.

use kcm_rs_e2e::{Cluster, deployment_scenarios::scenarios, differential::run_differential};

#[tokio::test]
async fn disruptive_deployment_matches_upstream() {
    let cluster = Cluster::connect().await;
    run_differential(
        &cluster,
        "deployment",
        &["--controllers=deployment-controller,replicaset-controller"],
        &kcm_rs_e2e::differential::selected(scenarios()),
    )
    .await;
}
