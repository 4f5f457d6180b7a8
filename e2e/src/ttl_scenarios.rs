//! The TTL-after-finished scenarios the differential suite runs: a finished Job is deleted, with its
//! pods first (foreground), once its TTL after finishing has passed and not before; a TTL raised in
//! time, or never set, keeps it; a TTL set after the Job finished applies. Each returns what it saw,
//! in whole seconds where timing matters (the finish time has a resolution of a second).
//!
//! As in upstream's e2e spec, each Job carries a finalizer of the test's, so that a Job deleted at
//! once (TTL 0) can still be read finished, and its deletion time compared with its finish time;
//! the finalizer is removed at the end. It also tells the propagation apart: with the Job held, only
//! a foreground deletion removes its pods.

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::{api::batch::v1::Job, jiff::Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::{
    TestNamespace,
    differential::{Outcome, Scenario},
    job_scenarios::{SUCCEED, job_manifest},
    wait_for,
};

use crate::differential::ScenarioFuture as Run;

/// How long a Job is watched for a deletion that must not happen.
const KEPT_FOR: Duration = Duration::from_secs(8);
/// Liveness bound: a Job of one or two pods finishes in seconds, and its TTL here is at most 2 s.
const WAIT: Duration = Duration::from_secs(60);
const FAIL: &[&str] = &["sh", "-c", "exit 3"];
/// The test's own finalizer, which holds a deleted Job until the scenario is done with it.
const HOLD: &str = "kcm-rs.test/hold";

async fn create(ns: &TestNamespace, command: &[&str], spec: Value) {
    let mut job = job_manifest("job", command, spec);
    job.metadata.finalizers = Some(vec![HOLD.to_owned()]);
    ns.api::<Job>()
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
}

async fn patch(ns: &TestNamespace, p: Value) {
    ns.api::<Job>()
        .patch("job", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
}

async fn patch_ttl(ns: &TestNamespace, ttl: i32) {
    patch(ns, json!({"spec": {"ttlSecondsAfterFinished": ttl}})).await;
}

/// Lets the held Job go.
async fn release(ns: &TestNamespace) {
    patch(ns, json!({"metadata": {"finalizers": null}})).await;
}

/// Waits for the Job's Complete or Failed condition: its type and time.
async fn finished(ns: &TestNamespace) -> (String, Timestamp) {
    wait_for("the Job to finish", WAIT, || async {
        let j = ns.api::<Job>().get("job").await.map_err(|e| e.to_string())?;
        let conditions = j.status.and_then(|s| s.conditions).unwrap_or_default();
        conditions
            .into_iter()
            .find(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")
            .and_then(|c| Some((c.type_, c.last_transition_time?.0)))
            .ok_or_else(|| "not finished".to_owned())
    })
    .await
}

/// Waits until the Job is being deleted; records whether that was before its TTL ran out and
/// whether its pods went while it was held (a foreground deletion), then lets it go.
async fn deleted(ns: &TestNamespace, finish: Timestamp, ttl: i64, o: &mut Outcome) {
    let at = wait_for("the Job's deletion", WAIT, || async {
        let j = ns.api::<Job>().get("job").await.map_err(|e| e.to_string())?;
        j.metadata
            .deletion_timestamp
            .map(|t| t.0)
            .ok_or_else(|| "not being deleted".to_owned())
    })
    .await;
    let pods_gone = wait_for("the held Job's pods to go", WAIT, || async {
        match crate::pods::list(ns).await.len() {
            0 => Ok(true),
            n => Err(format!("{n} pods")),
        }
    })
    .await;
    o.insert("deletion requested".into(), "true".into());
    o.insert(
        "deleted before its TTL ran out".into(),
        (at.as_second() < finish.as_second() + ttl).to_string(),
    );
    o.insert("pods gone while the Job was held".into(), pods_gone.to_string());
    release(ns).await;
}

async fn kept(ns: &TestNamespace, o: &mut Outcome) {
    tokio::time::sleep(KEPT_FOR).await;
    let j = ns.api::<Job>().get("job").await.unwrap();
    let there = j.metadata.deletion_timestamp.is_none();
    o.insert(
        format!("job not deleted {}s later", KEPT_FOR.as_secs()),
        there.to_string(),
    );
}

/// TTL 2 s on a Job that completes.
fn complete(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(
            &ns,
            SUCCEED,
            json!({"ttlSecondsAfterFinished": 2, "completions": 2}),
        )
        .await;
        let (how, at) = finished(&ns).await;
        o.insert("finished".into(), how);
        deleted(&ns, at, 2, &mut o).await;
        o
    }
    .boxed()
}

/// TTL 0 on a Job that fails: deleted as soon as it is seen finished.
fn failed(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(
            &ns,
            FAIL,
            json!({"ttlSecondsAfterFinished": 0, "backoffLimit": 0}),
        )
        .await;
        let (how, at) = finished(&ns).await;
        o.insert("finished".into(), how);
        deleted(&ns, at, 0, &mut o).await;
        o
    }
    .boxed()
}

/// TTL 5 s raised to 10 minutes as soon as the Job is seen finished: kept.
fn raised(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, SUCCEED, json!({"ttlSecondsAfterFinished": 5})).await;
        let (how, _) = finished(&ns).await;
        patch_ttl(&ns, 600).await;
        o.insert("finished".into(), how);
        kept(&ns, &mut o).await;
        release(&ns).await;
        o
    }
    .boxed()
}

/// No TTL: kept; a TTL of 1 s set afterwards applies at once (its finish is long past).
fn set_later(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, SUCCEED, json!({})).await;
        let (how, at) = finished(&ns).await;
        o.insert("finished".into(), how);
        kept(&ns, &mut o).await;
        patch_ttl(&ns, 1).await;
        deleted(&ns, at, 1, &mut o).await;
        o
    }
    .boxed()
}

/// Every TTL-after-finished scenario.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("ttl-complete", complete),
        Scenario::new("ttl-0-failed", failed),
        Scenario::new("ttl-raised-in-time", raised),
        Scenario::new("ttl-set-after-finish", set_later),
    ]
}
