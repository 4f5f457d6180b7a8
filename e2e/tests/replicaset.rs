//! The ReplicaSet controller, differential: each scenario runs under upstream's controller and under
//! kcm-rs's, and the outcomes must match. Restarts kube-controller-manager (mode switches), so the
//! test is named disruptive_* and its suite runs alone on its control plane (hack/e2e.sh).

use kcm_rs_e2e::{Cluster, differential::run_differential, replicaset_scenarios::scenarios};

#[tokio::test]
async fn disruptive_replicaset_matches_upstream() {
    let cluster = Cluster::connect().await;
    run_differential(
        &cluster,
        "replicaset",
        &["--controllers=replicaset-controller"],
        &kcm_rs_e2e::differential::selected(scenarios()),
    )
    .await;
}
