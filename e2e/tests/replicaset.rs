//! The ReplicaSet controller, and over ReplicationControllers the replication manager, differential:
//! each scenario runs under upstream's controller and under kcm-rs's, and the outcomes must match.
//! Restarts kube-controller-manager (mode switches), so the tests are named disruptive_* and their
//! suite runs alone on its control plane (hack/e2e.sh).

use kcm_rs_e2e::{
    Cluster,
    differential::run_differential,
    replicaset_scenarios::{replication_controller_scenarios, scenarios},
};

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

/// The same scenarios on ReplicationControllers: upstream's replication manager and kcm-rs's (both
/// the ReplicaSet controller over the other kind).
#[tokio::test]
async fn disruptive_replication_controller_matches_upstream() {
    let cluster = Cluster::connect().await;
    run_differential(
        &cluster,
        "replicationcontroller",
        &["--controllers=replicationcontroller-controller"],
        &kcm_rs_e2e::differential::selected(replication_controller_scenarios()),
    )
    .await;
}
