//! The ReplicaSet scenarios the differential, RBAC and shadow suites run: each returns the normalized
//! outcome it observed.

use std::time::Duration;

use crate::{
    DEFAULT_WAIT, TestNamespace,
    differential::{Outcome, Scenario},
    wait_for,
};
use futures::FutureExt as _;
use k8s_openapi::api::{
    apps::v1::ReplicaSet,
    core::v1::{ConfigMap, Pod, ResourceQuota},
};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// Liveness bound for the 500-pod scenario.
const BIG_WAIT: Duration = Duration::from_secs(300);

pub fn rs_manifest(name: &str, replicas: i32, min_ready: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "tier": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    }))
    .unwrap()
}

async fn create_rs(ns: &TestNamespace, name: &str, replicas: i32, min_ready: i32) {
    ns.api::<ReplicaSet>()
        .create(&PostParams::default(), &rs_manifest(name, replicas, min_ready))
        .await
        .unwrap();
}

async fn scale(ns: &TestNamespace, name: &str, replicas: i32) {
    let patch = json!({"spec": {"replicas": replicas}});
    ns.api::<ReplicaSet>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Waits until the ReplicaSet has observed its generation and `done` holds for its status.
async fn wait_rs(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    done: impl Fn(&ReplicaSet) -> bool,
) -> ReplicaSet {
    wait_rs_for(ns, name, what, DEFAULT_WAIT, done).await
}

async fn wait_rs_for(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    timeout: Duration,
    done: impl Fn(&ReplicaSet) -> bool,
) -> ReplicaSet {
    wait_for(&format!("ReplicaSet {name}: {what}"), timeout, || async {
        let rs = ns
            .api::<ReplicaSet>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        let observed = rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation;
        if observed && done(&rs) {
            Ok(rs)
        } else {
            Err(format!("{:?}", rs.status))
        }
    })
    .await
}

fn count(rs: &ReplicaSet, f: fn(&k8s_openapi::api::apps::v1::ReplicaSetStatus) -> Option<i32>) -> i32 {
    rs.status.as_ref().and_then(f).unwrap_or(0)
}

fn ready(rs: &ReplicaSet) -> i32 {
    count(rs, |s| s.ready_replicas)
}

fn replicas_settled(rs: &ReplicaSet, n: i32) -> bool {
    let s = rs.status.clone().unwrap_or_default();
    s.replicas == n && s.ready_replicas.unwrap_or(0) == n && s.terminating_replicas.unwrap_or(0) == 0
}

/// Waits until the ReplicaSet reports `n` ready replicas and its pods agree: exactly `n` active pods
/// controlled by it, all Ready, none terminating. A status alone can be stale for a moment.
async fn wait_settled(ns: &TestNamespace, name: &str, n: i32) {
    wait_for(
        &format!("ReplicaSet {name} to settle at {n} ready pods"),
        DEFAULT_WAIT,
        || async {
            let rs = ns
                .api::<ReplicaSet>()
                .get(name)
                .await
                .map_err(|e| e.to_string())?;
            let observed = rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation;
            let uid = rs.metadata.uid.clone().unwrap_or_default();
            let owned: Vec<Pod> = pods(ns)
                .await
                .into_iter()
                .filter(|p| {
                    p.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|r| r.uid == uid && r.controller == Some(true))
                })
                .collect();
            let active = owned
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none() && phase(p) != "Failed")
                .count();
            let all_ready = owned.iter().filter(|p| phase(p) != "Failed").all(is_ready);
            if observed && replicas_settled(&rs, n) && active == usize::try_from(n).unwrap() && all_ready {
                Ok(())
            } else {
                Err(format!(
                    "status {:?}; {active} active owned pods, all ready: {all_ready}",
                    rs.status
                ))
            }
        },
    )
    .await;
}

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn pods(ns: &TestNamespace) -> Vec<Pod> {
    ns.api::<Pod>().list(&ListParams::default()).await.unwrap().items
}

async fn wait_pods(ns: &TestNamespace, what: &str, done: impl Fn(&[Pod]) -> bool) {
    wait_for(what, DEFAULT_WAIT, || async {
        let p = pods(ns).await;
        if done(&p) {
            Ok(())
        } else {
            Err(format!("{} pods", p.len()))
        }
    })
    .await;
}

/// The facts compared: the ReplicaSet's status (conditions without their free-text message) and every
/// pod as owner, labels, phase and whether it is being deleted.
async fn outcome(ns: &TestNamespace, rs_name: &str) -> Outcome {
    // Scheduling and the kubelet simulation are not what is compared: let every pod start first.
    wait_pods(ns, "every pod to leave Pending", |p| {
        p.iter().all(|p| phase(p) != "Pending")
    })
    .await;
    let mut o = Outcome::new();
    let rs = ns.api::<ReplicaSet>().get(rs_name).await.unwrap();
    let s = rs.status.clone().unwrap_or_default();
    o.insert("status.replicas".into(), s.replicas.to_string());
    o.insert(
        "status.fullyLabeledReplicas".into(),
        s.fully_labeled_replicas.unwrap_or(0).to_string(),
    );
    o.insert(
        "status.readyReplicas".into(),
        s.ready_replicas.unwrap_or(0).to_string(),
    );
    o.insert(
        "status.availableReplicas".into(),
        s.available_replicas.unwrap_or(0).to_string(),
    );
    o.insert(
        "status.terminatingReplicas".into(),
        format!("{:?}", s.terminating_replicas),
    );
    o.insert(
        "status.observedGeneration == generation".into(),
        (s.observed_generation == rs.metadata.generation).to_string(),
    );
    let conditions: Vec<String> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason.as_deref().unwrap_or("")))
        .collect();
    o.insert("status.conditions".into(), conditions.join(", "));
    let mut described: Vec<String> = pods(ns)
        .await
        .iter()
        .map(|p| {
            let owner = p
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.controller == Some(true))
                .map_or("none".to_owned(), |r| format!("{}/{}", r.kind, r.name));
            let labels: Vec<String> = p
                .metadata
                .labels
                .iter()
                .flatten()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let phase = p
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default();
            let deleting = if p.metadata.deletion_timestamp.is_some() {
                " deleting"
            } else {
                ""
            };
            format!("{owner} [{}] {phase}{deleting}", labels.join(","))
        })
        .collect();
    described.sort();
    o.insert("pods".into(), described.join("; "));
    o
}

fn create_three(ns: TestNamespace) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        create_rs(&ns, "web", 3, 0).await;
        wait_settled(&ns, "web", 3).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn scale_up_and_down(
    ns: TestNamespace,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        create_rs(&ns, "web", 3, 0).await;
        wait_settled(&ns, "web", 3).await;
        scale(&ns, "web", 10).await;
        wait_settled(&ns, "web", 10).await;
        scale(&ns, "web", 2).await;
        wait_settled(&ns, "web", 2).await;
        wait_pods(&ns, "scaled-down pods to go", |p| p.len() == 2).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn delete_a_pod(ns: TestNamespace) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        create_rs(&ns, "web", 3, 0).await;
        wait_settled(&ns, "web", 3).await;
        let victim = pods(&ns).await[0].metadata.name.clone().unwrap();
        ns.api::<Pod>()
            .delete(&victim, &DeleteParams::default())
            .await
            .unwrap();
        wait_pods(&ns, "the deleted pod to be replaced and gone", |p| {
            p.len() == 3 && p.iter().all(|p| p.metadata.name.as_deref() != Some(&victim))
        })
        .await;
        wait_settled(&ns, "web", 3).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn failed_pod(ns: TestNamespace) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        create_rs(&ns, "web", 3, 0).await;
        wait_settled(&ns, "web", 3).await;
        let victim = pods(&ns).await[0].metadata.name.clone().unwrap();
        let patch = json!({"metadata": {
            "labels": {"kcm-rs.test/outcome": "fail"},
            "annotations": {"kcm-rs.test/terminal": "true", "kcm-rs.test/exit-code": "3", "kcm-rs.test/after": "200ms"}
        }});
        ns.api::<Pod>().patch(&victim, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
        wait_pods(&ns, "one Failed pod and 3 running", |p| {
            let failed = p.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed")).count();
            failed == 1 && p.len() == 4
        })
        .await;
        wait_settled(&ns, "web", 3).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn adopt_and_release(
    ns: TestNamespace,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        let orphan: Pod = serde_json::from_value(json!({
            "metadata": {"name": "orphan", "labels": {"app": "web", "tier": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        }))
        .unwrap();
        ns.api::<Pod>()
            .create(&PostParams::default(), &orphan)
            .await
            .unwrap();
        create_rs(&ns, "web", 2, 0).await;
        wait_settled(&ns, "web", 2).await;
        wait_pods(&ns, "the orphan to be adopted", |p| {
            p.iter().any(|p| {
                p.metadata.name.as_deref() == Some("orphan") && p.metadata.owner_references.is_some()
            })
        })
        .await;
        let relabel = json!({"metadata": {"labels": {"app": "released"}}});
        ns.api::<Pod>()
            .patch("orphan", &PatchParams::default(), &Patch::Merge(&relabel))
            .await
            .unwrap();
        wait_pods(&ns, "the relabelled pod to be released and replaced", |p| {
            let released = p.iter().any(|p| {
                p.metadata.name.as_deref() == Some("orphan")
                    && p.metadata.owner_references.as_ref().is_none_or(|r| r.is_empty())
            });
            released && p.len() == 3
        })
        .await;
        wait_settled(&ns, "web", 2).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn foreign_owner(ns: TestNamespace) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        let cm = ns
            .api::<ConfigMap>()
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap(),
            )
            .await
            .unwrap();
        let theirs: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": "theirs",
                "labels": {"app": "web", "tier": "web"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                      "uid": cm.metadata.uid.unwrap(), "controller": true}]
            },
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        }))
        .unwrap();
        ns.api::<Pod>()
            .create(&PostParams::default(), &theirs)
            .await
            .unwrap();
        create_rs(&ns, "web", 2, 0).await;
        wait_settled(&ns, "web", 2).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn deletion_cost(ns: TestNamespace) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        create_rs(&ns, "web", 3, 0).await;
        wait_settled(&ns, "web", 3).await;
        let names: Vec<String> = pods(&ns)
            .await
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        // The cheapest pod goes first; the others are marked so the outcome shows which survived.
        for (i, name) in names.iter().enumerate() {
            let (cost, mark) = if i == 1 {
                ("-100", "victim")
            } else {
                ("100", "keeper")
            };
            let patch = json!({"metadata": {
                "labels": {"role": mark},
                "annotations": {"controller.kubernetes.io/pod-deletion-cost": cost}
            }});
            ns.api::<Pod>()
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
        // The pod and ReplicaSet informers are separate watches: give the controller's pod cache time to
        // see the costs before the scale-down arrives, or it may rank on the old annotations.
        tokio::time::sleep(Duration::from_secs(3)).await;
        scale(&ns, "web", 2).await;
        wait_settled(&ns, "web", 2).await;
        wait_pods(&ns, "the scaled-down pod to go", |p| p.len() == 2).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn min_ready_seconds(
    ns: TestNamespace,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        create_rs(&ns, "web", 3, 10).await;
        let at_ready = wait_rs(&ns, "web", "3 ready", |rs| ready(rs) == 3).await;
        let started = tokio::time::Instant::now();
        wait_rs(&ns, "web", "3 available", |rs| {
            count(rs, |s| s.available_replicas) == 3
        })
        .await;
        let mut o = outcome(&ns, "web").await;
        o.insert(
            "available when all became ready".into(),
            count(&at_ready, |s| s.available_replicas).to_string(),
        );
        // Generous bounds: available after minReadySeconds, and not stuck long after.
        let waited = started.elapsed();
        o.insert(
            "became available 5-30 s after ready".into(),
            (waited >= Duration::from_secs(5) && waited <= Duration::from_secs(30)).to_string(),
        );
        o
    }
    .boxed()
}

fn quota(ns: TestNamespace) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        let q: ResourceQuota =
            serde_json::from_value(json!({"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "2"}}}))
                .unwrap();
        ns.api::<ResourceQuota>()
            .create(&PostParams::default(), &q)
            .await
            .unwrap();
        wait_for("the quota's status", DEFAULT_WAIT, || async {
            let q = ns
                .api::<ResourceQuota>()
                .get("pods")
                .await
                .map_err(|e| e.to_string())?;
            q.status
                .and_then(|s| s.hard)
                .filter(|h| h.contains_key("pods"))
                .map(|_| ())
                .ok_or_else(|| "not yet".to_owned())
        })
        .await;
        create_rs(&ns, "web", 3, 0).await;
        let failing = wait_rs(&ns, "web", "ReplicaFailure after 2 pods", |rs| {
            let s = rs.status.clone().unwrap_or_default();
            s.replicas == 2
                && s.conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "ReplicaFailure" && c.status == "True")
        })
        .await;
        let reason = failing.status.unwrap().conditions.unwrap()[0]
            .reason
            .clone()
            .unwrap_or_default();
        scale(&ns, "web", 2).await;
        wait_rs(&ns, "web", "the condition cleared at 2", |rs| {
            replicas_settled(rs, 2)
                && rs
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_none_or(Vec::is_empty)
        })
        .await;
        let mut o = outcome(&ns, "web").await;
        o.insert("ReplicaFailure reason while over quota".into(), reason);
        o
    }
    .boxed()
}

fn scale_to_500(ns: TestNamespace) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>> {
    async move {
        create_rs(&ns, "big", 500, 0).await;
        let rs = wait_rs_for(&ns, "big", "500 ready", BIG_WAIT, |rs| replicas_settled(rs, 500)).await;
        let mut o = Outcome::new();
        o.insert(
            "status.replicas".into(),
            count(&rs, |s| Some(s.replicas)).to_string(),
        );
        o.insert("status.readyReplicas".into(), ready(&rs).to_string());
        o.insert("pods".into(), pods(&ns).await.len().to_string());
        // Deleting 500 pods one by one is slow; let the namespace deletion collect them.
        o
    }
    .boxed()
}

/// Every ReplicaSet scenario, in the order the issue lists them.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "create-3",
            run: create_three,
            solo: false,
        },
        Scenario {
            name: "scale-3-10-2",
            run: scale_up_and_down,
            solo: false,
        },
        Scenario {
            name: "delete-pod",
            run: delete_a_pod,
            solo: false,
        },
        Scenario {
            name: "failed-pod",
            run: failed_pod,
            solo: false,
        },
        Scenario {
            name: "adopt-release",
            run: adopt_and_release,
            solo: false,
        },
        Scenario {
            name: "foreign-owner",
            run: foreign_owner,
            solo: false,
        },
        Scenario {
            name: "deletion-cost",
            run: deletion_cost,
            solo: false,
        },
        Scenario {
            name: "min-ready",
            run: min_ready_seconds,
            solo: false,
        },
        Scenario {
            name: "quota",
            run: quota,
            solo: false,
        },
        Scenario {
            name: "scale-500",
            run: scale_to_500,
            solo: true,
        },
    ]
}
