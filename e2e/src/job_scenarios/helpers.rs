//! Helpers of the Job scenarios: manifests, waits and the outcome they compare. Pods are compared by
//! completion index and phase, never by name (generated names differ between runs).

use std::collections::BTreeMap;

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

pub(super) use crate::pods::{list as pods, phase};
use crate::{DEFAULT_WAIT, TestNamespace, differential::Outcome, wait_for};

/// The finalizer with which the Job controller tracks its pods (upstream `batch.kubernetes.io/job-tracking`).
pub(super) const TRACKING: &str = "batch.kubernetes.io/job-tracking";
const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";

/// Container commands the KWOK stages read (hack/README.md, "Simulated pod behaviour").
pub(crate) const SUCCEED: &[&str] = &["sh", "-c", "exit 0"];
pub(crate) const FOREVER: &[&str] = &["sleep", "1000000"];
pub(crate) const FAIL_ODD_INDEXES: &[&str] = &["sh", "-c", "exit $(( ${JOB_COMPLETION_INDEX} % 2 ))"];
pub(super) const TRAP_SIGTERM: &[&str] = &[
    "sh",
    "-c",
    "_term(){ sleep 5; exit 143; }; trap _term SIGTERM; while true; do sleep 1; done",
];

pub(super) fn fail_with(code: u8) -> Vec<String> {
    vec!["sh".into(), "-c".into(), format!("exit {code}")]
}

/// A Job `name` whose pods run `command` with restartPolicy Never; `spec` is merged over it.
pub fn job_manifest(name: &str, command: &[&str], spec: Value) -> Job {
    let mut j = json!({
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": command}]
                }
            }
        }
    });
    crate::json::merge(&mut j["spec"], spec);
    serde_json::from_value(j).unwrap()
}

pub(super) async fn create(ns: &TestNamespace, name: &str, command: &[&str], spec: Value) {
    ns.api::<Job>()
        .create(&PostParams::default(), &job_manifest(name, command, spec))
        .await
        .unwrap();
}

pub(super) async fn patch(ns: &TestNamespace, name: &str, patch: Value) {
    ns.api::<Job>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// "Type=Status (Reason)" of every condition, in the order the controller wrote them.
pub(super) fn conditions(j: &Job) -> String {
    j.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason.as_deref().unwrap_or("")))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn has_condition(j: &Job, type_: &str, reason: &str) -> bool {
    j.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == type_ && c.status == "True" && c.reason.as_deref() == Some(reason))
}

pub(super) async fn wait_job(ns: &TestNamespace, name: &str, what: &str, done: impl Fn(&Job) -> bool) -> Job {
    wait_job_for(ns, name, what, DEFAULT_WAIT, done).await
}

pub async fn wait_job_for(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    timeout: std::time::Duration,
    done: impl Fn(&Job) -> bool,
) -> Job {
    wait_for(&format!("Job {name}: {what}"), timeout, || async {
        let j = ns.api::<Job>().get(name).await.map_err(|e| e.to_string())?;
        if done(&j) {
            Ok(j)
        } else {
            Err(format!("{:?}", j.status))
        }
    })
    .await
}

/// Waits for the Job's terminal condition (`Complete` or `Failed`) with `reason`.
pub(super) async fn wait_finished(ns: &TestNamespace, name: &str, type_: &str, reason: &str) {
    wait_job(ns, name, &format!("{type_} ({reason})"), |j| {
        has_condition(j, type_, reason)
    })
    .await;
}

pub(super) fn tracked(p: &Pod) -> bool {
    p.metadata.finalizers.iter().flatten().any(|f| f == TRACKING)
}

pub(super) async fn wait_pods(ns: &TestNamespace, what: &str, done: impl Fn(&[Pod]) -> bool) -> Vec<Pod> {
    wait_for(what, DEFAULT_WAIT, || async {
        let p = pods(ns).await;
        if done(&p) { Ok(p) } else { Err(describe(&p)) }
    })
    .await
}

/// Waits until no pod runs, waits or is being deleted, and none keeps the tracking finalizer: what a
/// finished Job must leave behind.
pub(super) async fn wait_pods_settled(ns: &TestNamespace) {
    wait_pods(
        ns,
        "every pod terminal, none deleting, no tracking finalizer",
        |p| {
            p.iter().all(|p| {
                matches!(phase(p), "Succeeded" | "Failed")
                    && p.metadata.deletion_timestamp.is_none()
                    && !tracked(p)
            })
        },
    )
    .await;
}

fn describe(pods: &[Pod]) -> String {
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for p in pods {
        let index = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(INDEX_ANNOTATION))
            .map_or(String::new(), |i| format!("index {i} "));
        let deleting = if p.metadata.deletion_timestamp.is_some() {
            " deleting"
        } else {
            ""
        };
        let finalizer = if tracked(p) { " tracked" } else { "" };
        let owner = if p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.controller == Some(true))
        {
            ""
        } else {
            " orphan"
        };
        *by.entry(format!("{index}{}{deleting}{finalizer}{owner}", phase(p)))
            .or_default() += 1;
    }
    by.iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The facts compared: the Job's status (counters, index strings, conditions with reasons, which
/// timestamps are set) and its pods by index and phase.
pub(super) async fn outcome(ns: &TestNamespace, name: &str) -> Outcome {
    let mut o = Outcome::new();
    let j = ns.api::<Job>().get(name).await.unwrap();
    let s = j.status.clone().unwrap_or_default();
    for (k, v) in [
        ("active", s.active),
        ("ready", s.ready),
        ("succeeded", s.succeeded),
        ("failed", s.failed),
        ("terminating", s.terminating),
    ] {
        o.insert(format!("status.{k}"), v.unwrap_or(0).to_string());
    }
    o.insert(
        "status.completedIndexes".into(),
        format!("{:?}", s.completed_indexes),
    );
    o.insert("status.failedIndexes".into(), format!("{:?}", s.failed_indexes));
    let uncounted = s.uncounted_terminated_pods.as_ref().map_or(0, |u| {
        u.succeeded.iter().flatten().count() + u.failed.iter().flatten().count()
    });
    o.insert("status.uncountedTerminatedPods".into(), uncounted.to_string());
    o.insert("status.startTime set".into(), s.start_time.is_some().to_string());
    o.insert(
        "status.completionTime set".into(),
        s.completion_time.is_some().to_string(),
    );
    o.insert("status.conditions".into(), conditions(&j));
    o.insert("pods".into(), describe(&pods(ns).await));
    o
}
