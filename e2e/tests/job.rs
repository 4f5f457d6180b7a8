//! The Job controller, differential: each scenario runs under upstream's Job controller, then under
//! kcm-rs's, and the outcomes must match (counters, index strings, conditions with reasons, pods by
//! index and phase, pods ever created, event reasons; no pod may keep the tracking finalizer).
//! Restarts kube-controller-manager (mode switches), so the test is named disruptive_* and runs in
//! the last, serial phase of `make e2e`. `KCM_RS_SCENARIOS=a,b` runs only the scenarios named.

use std::sync::Arc;

use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    differential::{Outcome, run_differential, selected},
    job_scenarios::{crash, scenarios},
    with_namespace,
};
use parking_lot::Mutex;

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

/// kcm-rs killed between the status write that records finished pods as uncounted and the removal
/// of their finalizers, then between that removal and the counting (the crash points of
/// `job::failpoints`; `hack/e2e.sh` builds kcm-rs with them): a fresh process counts each pod once
/// and leaves no finalizer, the same outcome as upstream's uninterrupted run.
#[tokio::test]
async fn disruptive_job_killed_between_tracking_writes_converges() {
    let cluster = Cluster::connect().await;
    let reference: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let slot = reference.clone();
    {
        let _mode = ModeGuard::enter(&cluster, Mode::Reference);
        with_namespace(cluster.clone(), "job-crash-upstream", |ns| async move {
            *slot.lock() = Some(crash::uninterrupted(ns).await);
        })
        .await;
    }
    let ours: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let slot = ours.clone();
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let c = cluster.clone();
    with_namespace(cluster.clone(), "job-crash-kcm-rs", |ns| async move {
        let spawn = |name: &str, failpoints: &str| {
            let env: &[(&str, &str)] = if failpoints.is_empty() {
                &[]
            } else {
                &[("FAILPOINTS", failpoints)]
            };
            KcmRs::spawn_env(&c, name, &["--controllers=job-controller"], None, env)
        };
        *slot.lock() = Some(crash::killed_between_tracking_writes(ns, spawn).await);
    })
    .await;
    assert_eq!(ours.lock().take(), reference.lock().take());
}
