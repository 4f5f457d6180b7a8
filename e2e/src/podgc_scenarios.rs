//! The pod garbage collector's scenarios: a pod bound to a node that never existed is marked
//! Failed with a `DisruptionTarget` condition and deleted with no grace period once its node's
//! quarantine is over; a terminating pod that was never scheduled is marked Failed and deleted.
//! Each pod carries the test's finalizer, so that the state the collector left is read before the
//! scenario lets it go. Upstream's collector runs them in reference mode (KCM runs it by default);
//! kcm-rs's in bare mode, with no kube-controller-manager and no scheduler.
//!
//! A pod being deleted on a node that is not Ready and tainted `node.kubernetes.io/out-of-service` is
//! marked Failed and deleted with no grace period. The node is one of the scenario's own whose
//! kubelet is "stopped" (`kcm-rs.test/kubelet=stopped`, which KWOK's node stages leave alone), its
//! Ready condition False as the test writes it.
//!
//! Beyond the terminated-pod threshold ([`THRESHOLD`] on both sides, run alone), the terminated pods
//! over it are deleted, evicted ones first, then the oldest, ties by name.

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    TestNamespace,
    differential::{Outcome, Scenario},
    namespace_scenarios::{HOLD, release},
    pods::phase,
    wait_for, wait_quiet,
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
        Scenario::new("out-of-service", |ns| out_of_service(ns).boxed()),
        // Alone: the threshold counts the terminated pods of the whole cluster, and another
        // scenario's newer one would be kept in place of this one's.
        Scenario::solo("terminated-threshold", |ns| terminated_threshold(ns).boxed()),
    ]
}

/// The `--terminated-pod-gc-threshold` both collectors run with in this suite (upstream's default,
/// 12,500, is more than a test can make). The other scenarios' pods are being deleted by the time
/// they are terminated, so the threshold deleting them again changes nothing of theirs.
pub const THRESHOLD: usize = 2;

/// Pod `p` held by the test's finalizer ([`unscheduled_pod`]), with `spec` merged in.
async fn held_pod(ns: &TestNamespace, spec: serde_json::Value) -> Pod {
    held_pod_with(ns, json!({}), spec).await
}

/// [`held_pod`] with `metadata` merged in too.
async fn held_pod_with(ns: &TestNamespace, metadata: serde_json::Value, spec: serde_json::Value) -> Pod {
    let mut held = json!({"name": "p", "finalizers": [HOLD]});
    crate::json::merge(&mut held, metadata);
    unscheduled_pod(ns, held, spec).await
}

/// A pod of one pause container, with `metadata` and `spec` merged in; no scheduler picks it up
/// (`schedulerName`), so that reference mode's scheduler writes nothing bare mode's lacks.
async fn unscheduled_pod(ns: &TestNamespace, metadata: serde_json::Value, spec: serde_json::Value) -> Pod {
    let mut pod = json!({
        "metadata": {},
        "spec": {
            "schedulerName": "kcm-rs-test-no-scheduler",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    });
    crate::json::merge(&mut pod["metadata"], metadata);
    crate::json::merge(&mut pod["spec"], spec);
    let pod: Pod = serde_json::from_value(pod).unwrap();
    ns.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod")
}

/// Unscheduled pods ([`unscheduled_pod`]) created in this order and given their phase and status
/// reason, as a kubelet that ran them would have written.
pub async fn ended_pods(ns: &TestNamespace, pods: &[(&str, &str, Option<&str>)]) {
    let api = ns.api::<Pod>();
    for (name, phase, reason) in pods {
        unscheduled_pod(ns, json!({"name": name}), json!({})).await;
        let status = json!({"status": {"phase": phase, "reason": reason}});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("write the pod's phase");
    }
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

/// The out-of-service taint (`v1.TaintNodeOutOfService`).
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

async fn out_of_service(ns: TestNamespace) -> Outcome {
    let nodes: Api<Node> = Api::all(ns.cluster.client.clone());
    let node = format!("out-of-service-{}", ns.name);
    let manifest: Node = serde_json::from_value(json!({
        "metadata": {"name": node, "labels": {"kcm-rs.test/kubelet": "stopped"}},
        "spec": {"taints": [{"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}]},
    }))
    .unwrap();
    nodes
        .create(&PostParams::default(), &manifest)
        .await
        .expect("create the node");
    let _node = NodeGone(&ns.cluster, &node);
    let not_ready = json!({"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "KubeletNotReady",
        "message": "the scenario stopped this node's kubelet",
    }]}});
    nodes
        .patch_status(&node, &PatchParams::default(), &Patch::Merge(&not_ready))
        .await
        .expect("mark the node not ready");
    // The pod tolerates every NoExecute taint for good (the out-of-service one, and the not-ready
    // one upstream's node lifecycle controller adds): upstream's taint-eviction controller, which
    // kcm-rs does not have, would otherwise delete it, with a condition of its own. KWOK runs it never Ready
    // (upstream's node lifecycle controller would mark it so, kcm-rs has none) and keeps it
    // Terminating for an hour once deleted, as a pod whose kubelet is gone stays.
    let pod = held_pod_with(
        &ns,
        json!({
            "labels": {"kcm-rs.test/ready": "never", "kcm-rs.test/termination": "graceful"},
            "annotations": {"kcm-rs.test/termination-delay": "1h"},
        }),
        json!({
            "nodeName": node,
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
        }),
    )
    .await;
    let name = pod.metadata.name.unwrap();
    let api = ns.api::<Pod>();
    wait_for("the pod on the stopped node running", WAIT, || async {
        let pod = api.get(&name).await.map_err(|e| e.to_string())?;
        match pod.status.and_then(|s| s.phase).as_deref() {
            Some("Running") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    api.delete(&name, &DeleteParams::default())
        .await
        .expect("delete the pod");
    // Failed and deleted with no grace period: between the two writes the deletion still reads the
    // test's 30 s grace.
    let mut out = settle_and_release(&ns, "the terminating pod marked Failed and force-deleted", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed")
            && p.metadata.deletion_grace_period_seconds == Some(0)
    })
    .await;
    // No quarantine here (the node exists): when the collector's pass came is all it would show.
    out.remove("deleted after its node's quarantine");
    out
}

/// Deletes the scenario's node when dropped, also when the scenario fails: a NotReady node left
/// behind would count against its zone's health in every later test on the plane.
struct NodeGone<'a>(&'a crate::Cluster, &'a str);

impl Drop for NodeGone<'_> {
    fn drop(&mut self) {
        let args = ["delete", "node", self.1, "--ignore-not-found", "--wait=false"];
        if let Err(e) = self.0.try_kubectl(&args) {
            eprintln!("warning: deleting node {}: {e}", self.1);
        }
    }
}

/// How long the pods must stay as they are once the threshold holds: one collector pass (every
/// 20 s, upstream `gcCheckPeriod`) and a margin, so that a pass deleting more is seen.
const PASS_QUIET: Duration = Duration::from_secs(22);

/// Six pods, created in name order and given their phase by the test (no scheduler or kubelet runs
/// them): `a` Succeeded, `b` Failed, `c` Running, `d` Failed as evicted, `e` Succeeded, `f` Failed.
/// Five are terminated; the collector deletes the three over the threshold. Whenever a pass comes
/// while the phases are being written, the order it deletes in keeps `e` and `f`, the last two.
async fn terminated_threshold(ns: TestNamespace) -> Outcome {
    let api = ns.api::<Pod>();
    let pods = [
        ("a", "Succeeded", None),
        ("b", "Failed", None),
        ("c", "Running", None),
        ("d", "Failed", Some("Evicted")),
        ("e", "Succeeded", None),
        ("f", "Failed", None),
    ];
    ended_pods(&ns, &pods).await;
    let left = wait_quiet(
        "the terminated pods down to the threshold",
        WAIT,
        PASS_QUIET,
        || async {
            let pods = api
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?
                .items;
            let terminated = pods
                .iter()
                .filter(|p| matches!(phase(p), "Succeeded" | "Failed"))
                .count();
            let mut left: Vec<String> = pods
                .iter()
                .map(|p| {
                    let deleting = p.metadata.deletion_timestamp.as_ref().map_or("", |_| " deleting");
                    format!(
                        "{} {}{deleting}",
                        p.metadata.name.as_deref().unwrap_or_default(),
                        phase(p)
                    )
                })
                .collect();
            left.sort();
            if terminated > THRESHOLD {
                Err(format!("{terminated} terminated: {left:?}"))
            } else {
                Ok(left)
            }
        },
    )
    .await;
    Outcome::from([("pods left".into(), left.join(", "))])
}
