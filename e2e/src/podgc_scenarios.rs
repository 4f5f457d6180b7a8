//! The pod garbage collector's scenarios: a pod bound to a node that never existed is marked
//! Failed with a `DisruptionTarget` condition and deleted with no grace period once its node's
//! quarantine is over; a terminating pod that was never scheduled is marked Failed and deleted.
//! Each pod carries the test's finalizer, so that the state the collector left is read before the
//! scenario lets it go. Upstream's collector runs them in reference mode (KCM runs it by default);
//! kcm-rs's in bare mode, with no kube-controller-manager and no scheduler.
//!
//! Left out, covered by the unit tables of `crates/podgc`: the terminated-pod threshold (12,500 in
//! the plane's KCM, which the test cannot lower) and pods of a node tainted out of service (KWOK
//! keeps every node of the plane Ready).

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

use crate::{
    TestNamespace,
    differential::{Outcome, Scenario},
    namespace_scenarios::{HOLD, release},
    wait_for,
};

/// Liveness bound: a pass every 20 s, a missing node looked up 40 s after it was first missed, on a
/// control plane that three lanes share.
const WAIT: Duration = Duration::from_secs(240);
/// How long a missing node waits before it is looked up (upstream `quarantineTime`).
const QUARANTINE: i64 = 40;

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("orphaned", |ns| orphaned(ns).boxed()),
        Scenario::new("unscheduled-terminating", |ns| {
            unscheduled_terminating(ns).boxed()
        }),
    ]
}

/// A held pod of one pause container, with `spec` merged in; no scheduler picks it up
/// (`schedulerName`), so that reference mode's scheduler writes nothing bare mode's lacks.
async fn held_pod(ns: &TestNamespace, spec: serde_json::Value) -> Pod {
    let mut pod = json!({
        "metadata": {"name": "p", "finalizers": [HOLD]},
        "spec": {
            "schedulerName": "kcm-rs-test-no-scheduler",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    });
    crate::json::merge(&mut pod["spec"], spec);
    let pod: Pod = serde_json::from_value(pod).unwrap();
    ns.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod")
}

/// What the collector left on the pod: its phase, its conditions, and how it is being deleted.
fn left(pod: &Pod) -> Outcome {
    let status = pod.status.clone().unwrap_or_default();
    let generation = pod.metadata.generation;
    let conditions: Vec<String> = status
        .conditions
        .unwrap_or_default()
        .iter()
        .map(|c| {
            format!(
                "{}={} {} {:?} observedGeneration is generation: {}",
                c.type_,
                c.status,
                c.reason.as_deref().unwrap_or_default(),
                c.message.as_deref().unwrap_or_default(),
                c.observed_generation == generation
            )
        })
        .collect();
    Outcome::from([
        ("phase".into(), status.phase.unwrap_or_default()),
        (
            "status observedGeneration is generation".into(),
            (status.observed_generation == generation).to_string(),
        ),
        ("conditions".into(), conditions.join("; ")),
        // The grace period is left out: the API server makes it 0 for a pod that has ended or was
        // never scheduled, whatever the DELETE asked (`force_delete`'s unit test checks the request).
        (
            "deleting".into(),
            pod.metadata.deletion_timestamp.is_some().to_string(),
        ),
        (
            "deleted after its node's quarantine".into(),
            quarantined(pod).to_string(),
        ),
    ])
}

/// Whether the pod's deletion came at least a quarantine after its creation (a pod held for no
/// node, or deleted by the test, says `false` under both).
fn quarantined(pod: &Pod) -> bool {
    let (Some(created), Some(deleted)) = (
        pod.metadata.creation_timestamp.as_ref(),
        pod.metadata.deletion_timestamp.as_ref(),
    ) else {
        return false;
    };
    deleted.0.as_second() - created.0.as_second() >= QUARANTINE
}

/// Waits until `done` holds for pod `p`, then lets it go and waits until it is gone.
async fn settle_and_release(ns: &TestNamespace, what: &str, done: impl Fn(&Pod) -> bool) -> Outcome {
    let api = ns.api::<Pod>();
    let pod = wait_for(what, WAIT, || async {
        let pod = api.get("p").await.map_err(|e| e.to_string())?;
        if done(&pod) {
            Ok(pod)
        } else {
            Err(format!("{:?}", left(&pod)))
        }
    })
    .await;
    let out = left(&pod);
    release(&api, "p").await;
    wait_for("the pod gone", WAIT, || async {
        match api.get_opt("p").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    out
}

async fn orphaned(ns: TestNamespace) -> Outcome {
    // A node name of this scenario's own: nothing else may create it or bind to it.
    held_pod(&ns, json!({"nodeName": format!("gone-{}", ns.name)})).await;
    settle_and_release(&ns, "the orphan force-deleted", |p| {
        p.metadata.deletion_timestamp.is_some()
    })
    .await
}

async fn unscheduled_terminating(ns: TestNamespace) -> Outcome {
    held_pod(&ns, json!({})).await;
    ns.api::<Pod>()
        .delete("p", &DeleteParams::default())
        .await
        .expect("delete the pod");
    settle_and_release(&ns, "the unscheduled pod marked Failed", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed")
    })
    .await
}
