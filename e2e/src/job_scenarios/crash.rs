//! The Job controller killed inside the finalizer-tracking protocol, at the two crash points of
//! `job::failpoints` in turn, then started afresh: the new process must count every pod once and
//! leave none holding the tracking finalizer, as upstream's uninterrupted run does.

use std::{collections::HashSet, time::Duration};

use k8s_openapi::api::batch::v1::Job;
use serde_json::json;

use super::helpers::*;
use crate::{KcmRs, TestNamespace, differential::Outcome, wait_for};

const JOB: &str = "job";
const COMPLETIONS: i32 = 3;
/// How long a crash point may take to be reached: the pods must be created, run and finish first.
const CRASH_WAIT: Duration = Duration::from_secs(120);

/// The run both controllers are judged on: three pods that succeed, all at once.
async fn create_job(ns: &TestNamespace) {
    let spec = json!({"completions": COMPLETIONS, "parallelism": COMPLETIONS});
    create(ns, JOB, SUCCEED, spec).await;
}

/// Under upstream's controller: the uninterrupted run.
pub async fn uninterrupted(ns: TestNamespace) -> Outcome {
    create_job(&ns).await;
    wait_finished(&ns, JOB, "Complete", "CompletionsReached").await;
    wait_pods_settled(&ns).await;
    outcome(&ns, JOB).await
}

/// Under kcm-rs: `spawn(name, FAILPOINTS)` starts a kcm-rs running the Job controller with those
/// crash points switched on.
pub async fn killed_between_tracking_writes(
    ns: TestNamespace,
    spawn: impl Fn(&str, &str) -> KcmRs,
) -> Outcome {
    // 1. Killed after recording finished pods as uncounted, before removing any finalizer.
    let first = spawn("job-crash-1", "job-after-uncounted-status=return");
    first.wait_log("caches synced", Duration::from_secs(60)).await;
    create_job(&ns).await;
    let first = crashed(first).await;
    let (uncounted, pods) = state(&ns).await;
    assert!(!uncounted.is_empty(), "the crash left pods uncounted");
    for p in pods.iter().filter(|p| uncounted.contains(uid(p))) {
        assert!(tracked(p), "no finalizer was removed before the crash: {p:?}");
    }
    drop(first);

    // 2. Killed after removing finalizers, before moving the pods into the counters.
    let second = spawn("job-crash-2", "job-after-finalizer-removal=return");
    let second = crashed(second).await;
    let (uncounted, pods) = state(&ns).await;
    assert!(
        pods.iter().any(|p| uncounted.contains(uid(p)) && !tracked(p)),
        "the crash left a pod without its finalizer but not counted yet"
    );
    drop(second);

    // 3. A process without crash points finishes the Job from what the API server kept.
    let third = spawn("job-crash-3", "");
    wait_finished(&ns, JOB, "Complete", "CompletionsReached").await;
    wait_pods_settled(&ns).await;
    let o = outcome(&ns, JOB).await;
    assert!(third.stop().success());
    o
}

/// Waits for the process to abort at its crash point.
async fn crashed(mut kcm_rs: KcmRs) -> KcmRs {
    let deadline = tokio::time::Instant::now() + CRASH_WAIT;
    while kcm_rs.is_running() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "kcm-rs never reached its crash point; its log:\n{}",
            kcm_rs.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        kcm_rs.log_text().contains("crash point reached"),
        "kcm-rs exited, but not at its crash point:\n{}",
        kcm_rs.log_tail()
    );
    kcm_rs
}

/// The UIDs the Job lists as uncounted, and its pods.
async fn state(ns: &TestNamespace) -> (HashSet<String>, Vec<k8s_openapi::api::core::v1::Pod>) {
    let job = wait_for("the Job", Duration::from_secs(10), || async {
        ns.api::<Job>().get(JOB).await.map_err(|e| e.to_string())
    })
    .await;
    let uncounted = job
        .status
        .and_then(|s| s.uncounted_terminated_pods)
        .map(|u| {
            u.succeeded
                .into_iter()
                .chain(u.failed)
                .flatten()
                .collect::<HashSet<_>>()
        })
        .unwrap_or_default();
    (uncounted, pods(ns).await)
}

fn uid(p: &k8s_openapi::api::core::v1::Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or_default()
}
