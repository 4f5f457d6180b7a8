//! A pod fails while another pod of its Job runs Ready, and the replacement must wait out the
//! re-creation backoff (10 s). During that wait the status must keep the running pod as active:
//! `active: 0` beside `ready: 1` is a status the API server refuses ("cannot set more ready pods
//! than active"), and a controller that writes it counts nothing until the backoff is over.
//!
//! What is compared is which comes first once the pod has failed: a status showing the survivor
//! alone as active (upstream, within a batch period), or the replacement pod (a controller whose
//! status writes are refused: its first accepted write follows the creation that ends the backoff).
//! Ten seconds separate the two, so the order does not depend on the machine's speed.

use futures::FutureExt as _;
use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::{Run, helpers::*};
use crate::{DEFAULT_WAIT, TestNamespace, differential::Outcome, wait_for};

/// NonIndexed, parallelism 2: one of the two running pods fails.
pub(super) fn global_backoff(ns: TestNamespace) -> Run {
    async move {
        let spec = json!({"completions": 4, "parallelism": 2, "backoffLimit": 6});
        fail_one_beside_a_ready_one(ns, spec, |j| {
            let s = j.status.clone().unwrap_or_default();
            s.failed == Some(1) && s.active == Some(1) && s.ready == Some(1)
        })
        .await
    }
    .boxed()
}

/// Indexed with backoffLimitPerIndex: index 1 fails while index 0 runs Ready. The failed pod keeps
/// its finalizer (and stays uncounted) until its replacement exists, so only `active` shows it.
pub(super) fn per_index_backoff(ns: TestNamespace) -> Run {
    async move {
        let spec = json!({
            "completions": 2, "parallelism": 2, "completionMode": "Indexed",
            "backoffLimitPerIndex": 1
        });
        fail_one_beside_a_ready_one(ns, spec, |j| {
            let s = j.status.clone().unwrap_or_default();
            s.active == Some(1) && s.ready == Some(1)
        })
        .await
    }
    .boxed()
}

async fn fail_one_beside_a_ready_one(
    ns: TestNamespace,
    spec: serde_json::Value,
    survivor_alone: fn(&Job) -> bool,
) -> Outcome {
    create(&ns, "job", FOREVER, spec).await;
    let running = wait_pods(&ns, "two running pods", |p| {
        p.len() == 2 && p.iter().all(|p| phase(p) == "Running")
    })
    .await;
    wait_job(&ns, "job", "two ready", |j| {
        j.status.as_ref().and_then(|s| s.ready) == Some(2)
    })
    .await;
    let victim = running
        .iter()
        .find(|p| index_of(p) != Some("0"))
        .and_then(|p| p.metadata.name.clone())
        .expect("a pod to fail");
    let fail = json!({
        "metadata": {
            "labels": {"kcm-rs.test/outcome": "fail"},
            "annotations": {"kcm-rs.test/terminal": "true", "kcm-rs.test/exit-code": "1",
                            "kcm-rs.test/after": "200ms"}
        }
    });
    ns.api::<Pod>()
        .patch(&victim, &PatchParams::default(), &Patch::Merge(&fail))
        .await
        .unwrap();
    wait_pods(&ns, "the pod failed", |p| {
        p.iter()
            .any(|p| p.metadata.name.as_deref() == Some(victim.as_str()) && phase(p) == "Failed")
    })
    .await;
    let first = wait_for(
        "the survivor alone in the status, or a replacement pod",
        DEFAULT_WAIT,
        || async {
            let j = ns.api::<Job>().get("job").await.map_err(|e| e.to_string())?;
            if survivor_alone(&j) {
                return Ok("status: the survivor alone active");
            }
            let p = pods(&ns).await;
            if p.iter().filter(|p| phase(p) != "Failed").count() > 1 {
                return Ok("a replacement pod");
            }
            Err(format!("{:?}", j.status))
        },
    )
    .await;
    let mut o = Outcome::new();
    o.insert("after the failure, first seen".into(), first.into());
    wait_pods(&ns, "the replacement running", |p| {
        p.iter().filter(|p| phase(p) == "Running").count() == 2
    })
    .await;
    // And the failed pod counted: under load one controller may still list it as uncounted when
    // the other has moved it to `failed` (both end there).
    wait_job(
        &ns,
        "job",
        "two active and ready again, the failure counted",
        |j| {
            let s = j.status.clone().unwrap_or_default();
            let uncounted = s
                .uncounted_terminated_pods
                .as_ref()
                .is_some_and(|u| u.failed.iter().chain(&u.succeeded).flatten().next().is_some());
            s.active == Some(2) && s.ready == Some(2) && s.failed == Some(1) && !uncounted
        },
    )
    .await;
    o.extend(outcome(&ns, "job").await);
    o
}

fn index_of(p: &Pod) -> Option<&str> {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
        .map(String::as_str)
}
