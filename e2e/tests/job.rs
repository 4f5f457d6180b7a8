//! The Job controller, differential: each scenario runs under upstream's Job controller, then under
//! kcm-rs's, and the outcomes must match (counters, index strings, conditions with reasons, pods by
//! index and phase, pods ever created, event reasons; no pod may keep the tracking finalizer).
//! Restarts kube-controller-manager (mode switches), so the test is named disruptive_* and its suite
//! runs alone on its control plane (hack/e2e.sh). `KCM_RS_SCENARIOS=a,b` runs only the scenarios named.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    differential::{Outcome, UnderBoth, assert_agree, run_differential, run_scenarios, selected, under_both},
    job_scenarios::{crash, has_condition, job_manifest, scenarios, wait_job_for},
    pods::replacement_gaps,
    wait_for, with_namespace,
};

/// The Job controller's tracking finalizer.
const TRACKING: &str = "batch.kubernetes.io/job-tracking";
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

/// A scenario whose pods are re-created after failures, and whose outcome does not depend on how
/// long that takes (the backoff scenarios beside a Ready pod compare what comes first within the
/// 10 s wait, so they are left out).
const BACKOFF_SCENARIOS: &[&str] = &["backoff-limit"];

/// The test-speed flags, as upstream's integration tests shorten the same waits.
const TEST_SPEED: &[&str] = &[
    "--controllers=job-controller",
    "--job-pod-failure-backoff=1s",
    "--job-max-pod-failure-backoff=2s",
    "--job-sync-batch-period=100ms",
];

/// kcm-rs with the test-speed flags, against upstream's controller on its own waits: the backoff
/// scenario ends the same, and Jobs whose pods keep failing (one NonIndexed, one Indexed with
/// backoffLimitPerIndex) re-create them after the test's waits, capped, where upstream, measured in
/// the same run, waits its 10 s, then 20 s.
#[tokio::test]
async fn disruptive_job_test_speed_flags_change_only_the_waits() {
    let cluster = Cluster::connect().await;
    let chosen: Vec<_> = scenarios()
        .into_iter()
        .filter(|s| BACKOFF_SCENARIOS.contains(&s.name))
        .collect();
    assert_eq!(chosen.len(), BACKOFF_SCENARIOS.len(), "a scenario was renamed");
    let both = under_both(&cluster, "job-test-speed", TEST_SPEED, None, |actor| {
        let (cluster, chosen) = (cluster.clone(), chosen.clone());
        async move {
            let gaps = re_creation_gaps(&cluster, actor);
            let outcomes = run_scenarios(&cluster, &chosen, actor);
            let (gaps, outcomes) = tokio::join!(gaps, outcomes);
            (outcomes, gaps)
        }
    })
    .await;
    let (upstream, ours) = (both.upstream.1.clone(), both.kcm_rs.1.clone());
    let outcomes = UnderBoth {
        upstream: both.upstream.0,
        kcm_rs: both.kcm_rs.0,
        exit: both.exit,
        log_tail: both.log_tail,
        panics: both.panics,
    };
    assert_agree("job-test-speed", &chosen, &outcomes);
    println!("seconds from a failed pod's end to its replacement: upstream {upstream:?}, kcm-rs {ours:?}");
    // Both sides count from the same whole-second finish time, so a gap never reads below the wait.
    let (global, indexed) = &upstream;
    assert!(
        global.len() == 2 && global[0] >= 10 && global[1] >= 20 && indexed.len() == 1 && indexed[0] >= 10,
        "upstream waits 10 s, then 20 s: {upstream:?}"
    );
    let (global, indexed) = &ours;
    assert!(
        global.len() == 4 && (1..10).contains(&global[0]) && global[1..].iter().all(|g| *g >= 2),
        "kcm-rs with --job-pod-failure-backoff=1s waits 1 s, then 2 s, not upstream's 10 s: {ours:?}"
    );
    assert!(
        global[3] < 8,
        "the fourth wait is capped at --job-max-pod-failure-backoff=2s, not doubled to 8 s: {ours:?}"
    );
    assert!(
        indexed.len() == 1 && (1..10).contains(&indexed[0]),
        "a failed index waits the test's 1 s too: {ours:?}"
    );
}

/// Two Jobs whose pods exit 1: NonIndexed (backoffLimit 4 under kcm-rs; 2 under upstream, whose
/// later waits would be 40 s and 80 s), and Indexed with one index and backoffLimitPerIndex 1. For
/// each, the seconds from each pod's end to the next pod's creation.
async fn re_creation_gaps(cluster: &Cluster, actor: &str) -> (Vec<i64>, Vec<i64>) {
    let gaps: Arc<Mutex<(Vec<i64>, Vec<i64>)>> = Arc::default();
    let slot = gaps.clone();
    let backoff_limit = if actor == "upstream" { 2 } else { 4 };
    with_namespace(cluster.clone(), &format!("job-gaps-{actor}"), |ns| async move {
        let fail = &["sh", "-c", "exit 1"];
        let global = job_manifest("gaps", fail, json!({"backoffLimit": backoff_limit}));
        let indexed = job_manifest(
            "gaps-indexed",
            fail,
            json!({"completionMode": "Indexed", "completions": 1, "backoffLimitPerIndex": 1}),
        );
        for j in [global, indexed] {
            ns.api::<Job>().create(&PostParams::default(), &j).await.unwrap();
        }
        for (name, reason) in [
            ("gaps", "BackoffLimitExceeded"),
            ("gaps-indexed", "FailedIndexes"),
        ] {
            let failed = |j: &Job| has_condition(j, "Failed", reason);
            wait_job_for(&ns, name, "failed", Duration::from_secs(240), failed).await;
        }
        *slot.lock() = (
            replacement_gaps(&ns, "app=gaps").await,
            replacement_gaps(&ns, "app=gaps-indexed").await,
        );
    })
    .await;
    gaps.lock().clone()
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

/// A running pod relabelled out of its Job's selector, then the Job deleted in the foreground before
/// its next sync. Upstream 1.36 neither releases the pod (its Job is being deleted) nor unfinalizes
/// it (no longer selected): the Job waits for the pod and the pod for its finalizer, for good. kcm-rs
/// removes the finalizer and the deletion completes: a deliberate difference (`job` crate docs),
/// found by the Job soak.
#[tokio::test]
async fn disruptive_job_deleted_in_the_foreground_with_a_stray_pod() {
    let cluster = Cluster::connect().await;
    {
        let _mode = ModeGuard::enter(&cluster, Mode::Reference);
        // The premise needs upstream's Job controller not to sync between the relabel and the
        // deletion; on a loaded plane it sometimes does (once in CI, the pod then went). So two tries,
        // and the difference stands if either leaves the pod held by its finalizer.
        let mut seen = Vec::new();
        for _ in 0..2 {
            let slot: Arc<Mutex<Option<String>>> = Arc::default();
            let out = slot.clone();
            with_namespace(cluster.clone(), "job-stray-upstream", |ns| async move {
                stray_then_delete(&ns).await;
                tokio::time::sleep(Duration::from_secs(15)).await;
                *out.lock() = Some(upstream_left(&ns).await);
            })
            .await;
            seen.push(slot.lock().take().unwrap_or_default());
            if seen.last().is_some_and(|s| s == HELD) {
                break;
            }
        }
        assert!(
            seen.iter().any(|s| s == HELD),
            "upstream left the finalizer in neither try (if this fails, upstream fixed it: drop the \
             difference): {seen:?}"
        );
    }
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let kcm_rs = KcmRs::start(&cluster, "job-stray", &["--controllers=job-controller"]).await;
    with_namespace(cluster.clone(), "job-stray-kcm-rs", |ns| async move {
        stray_then_delete(&ns).await;
        wait_for("the Job and its pod gone", Duration::from_secs(60), || async {
            let jobs = ns
                .api::<Job>()
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let pods = ns
                .api::<Pod>()
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            if jobs.items.is_empty() && pods.items.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} Jobs, pods: {:?}",
                    jobs.items.len(),
                    pods.items
                        .iter()
                        .map(|p| (&p.metadata.name, &p.metadata.finalizers))
                        .collect::<Vec<_>>()
                ))
            }
        })
        .await;
    })
    .await;
    assert!(kcm_rs.stop().success());
}

async fn stray_then_delete(ns: &kcm_rs_e2e::TestNamespace) {
    let job = job_manifest(
        "stray",
        &["sleep", "1000000"],
        json!({"parallelism": 1, "completions": 1}),
    );
    ns.api::<Job>()
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    // Not 60 s: in a lane that started this while a sharding suite's 21 namespaces were still
    // terminating, under upstream's controllers, the pod was not running after 60 s (nothing in the
    // scheduler's or KWOK's log named it). Only a pod that never runs should fail here, and the
    // failure says how far each pod got: none, unscheduled, or on which node in which phase.
    let pod = wait_for("the pod running", Duration::from_secs(150), || async {
        let pods = ns
            .api::<Pod>()
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let phase = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.clone());
        let seen: Vec<String> = pods
            .items
            .iter()
            .map(|p| {
                let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
                format!("{:?} on {node:?}, phase {:?}", p.metadata.name, phase(p))
            })
            .collect();
        pods.items
            .into_iter()
            .find(|p| phase(p).as_deref() == Some("Running"))
            .ok_or_else(|| format!("no pod running; pods: {seen:?}"))
    })
    .await;
    let relabel = json!({"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "released"}}});
    let name = pod.metadata.name.clone().unwrap();
    ns.api::<Pod>()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    ns.api::<Job>()
        .delete("stray", &DeleteParams::foreground())
        .await
        .unwrap();
}

/// What [`upstream_left`] says of the premise: the one pod still there, held by its finalizer.
const HELD: &str = "one pod, held by the tracking finalizer";

/// What upstream left of the stray pod; then lets the namespace go (no finalizer is left).
async fn upstream_left(ns: &kcm_rs_e2e::TestNamespace) -> String {
    let pods = ns.api::<Pod>().list(&ListParams::default()).await.unwrap().items;
    let held = |p: &Pod| p.metadata.finalizers.iter().flatten().any(|f| f == TRACKING);
    let seen = match pods.as_slice() {
        [pod] if held(pod) => HELD.to_owned(),
        _ => format!(
            "{} pods, {} held",
            pods.len(),
            pods.iter().filter(|p| held(p)).count()
        ),
    };
    let patch = json!({"metadata": {"finalizers": null}});
    for pod in pods.iter().filter(|p| held(p)) {
        let name = pod.metadata.name.clone().unwrap();
        ns.api::<Pod>()
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    seen
}
