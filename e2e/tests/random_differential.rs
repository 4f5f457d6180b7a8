//! Seeded random programs over Deployments and Jobs (`kcm_rs_e2e::random_differential`), each run
//! under upstream's controllers and then under kcm-rs's, compared step by step, with invariants
//! checked on every watch event under both. `KCM_RS_RANDOM_SEED` replays a run,
//! `KCM_RS_RANDOM_PROGRAMS` and `KCM_RS_RANDOM_STEPS` size it, `KCM_RS_RANDOM_SECONDS` repeats
//! rounds for that long (`make soak`: 1800). Switches kube-controller-manager's mode, so the test is
//! named disruptive_* and its suite runs alone on its control plane (hack/e2e.sh).

use kcm_rs_e2e::{Cluster, random_differential};

#[tokio::test]
async fn disruptive_random_differential() {
    let cluster = Cluster::connect().await;
    random_differential::run(&cluster).await;
}
