//! The ReplicaSet scenarios the differential, RBAC and shadow suites run: each returns the normalized
//! outcome it observed.

mod helpers;
mod siblings;

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::{
    apps::v1::ReplicaSet,
    core::v1::{Pod, ReplicationController, ResourceQuota},
};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use helpers::*;
pub use helpers::{Replicas, rs_manifest};
use siblings::siblings_on_a_node;

use crate::{
    DEFAULT_WAIT, TestNamespace,
    differential::{Outcome, Scenario, ScenarioFuture},
    wait_for,
};

fn create_three<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "web", 3, 0).await;
        wait_settled::<K>(&ns, "web", 3).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}

fn scale_up_and_down<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "web", 3, 0).await;
        wait_settled::<K>(&ns, "web", 3).await;
        scale::<K>(&ns, "web", 10).await;
        wait_settled::<K>(&ns, "web", 10).await;
        scale::<K>(&ns, "web", 2).await;
        wait_settled::<K>(&ns, "web", 2).await;
        wait_pods(&ns, "scaled-down pods to go", |p| p.len() == 2).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}

fn delete_a_pod<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "web", 3, 0).await;
        wait_settled::<K>(&ns, "web", 3).await;
        let victim = pods(&ns).await[0].metadata.name.clone().unwrap();
        ns.api::<Pod>()
            .delete(&victim, &DeleteParams::default())
            .await
            .unwrap();
        wait_pods(&ns, "the deleted pod to be replaced and gone", |p| {
            p.len() == 3 && p.iter().all(|p| p.metadata.name.as_deref() != Some(&victim))
        })
        .await;
        wait_settled::<K>(&ns, "web", 3).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}

fn failed_pod<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "web", 3, 0).await;
        wait_settled::<K>(&ns, "web", 3).await;
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
        wait_settled::<K>(&ns, "web", 3).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}

fn adopt_and_release<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
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
        // The pod and ReplicaSet informers are separate watches: if the ReplicaSet's event reached the
        // controller before the orphan's, upstream and kcm-rs alike would create 2 pods and delete one
        // after adopting. Adoption, not that race, is what this scenario compares.
        wait_pods(&ns, "the orphan to run", |p| {
            p.iter().all(|p| phase(p) == "Running")
        })
        .await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        create_rs::<K>(&ns, "web", 2, 0).await;
        wait_settled::<K>(&ns, "web", 2).await;
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
        wait_settled::<K>(&ns, "web", 2).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}

fn foreign_owner<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        let cm = create_owner(&ns).await;
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
        create_rs::<K>(&ns, "web", 2, 0).await;
        wait_settled::<K>(&ns, "web", 2).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}

fn deletion_cost<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "web", 3, 0).await;
        wait_settled::<K>(&ns, "web", 3).await;
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
        scale::<K>(&ns, "web", 2).await;
        wait_settled::<K>(&ns, "web", 2).await;
        wait_pods(&ns, "the scaled-down pod to go", |p| p.len() == 2).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}

fn min_ready_seconds<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "web", 3, 10).await;
        let at_ready = wait_rs::<K>(&ns, "web", "3 ready", DEFAULT_WAIT, |rs| ready(rs) == 3).await;
        let started = tokio::time::Instant::now();
        wait_rs::<K>(&ns, "web", "3 available", DEFAULT_WAIT, |rs| {
            count(rs, |s| s.available_replicas) == 3
        })
        .await;
        let mut o = outcome::<K>(&ns, "web").await;
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

fn quota<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
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
        create_rs::<K>(&ns, "web", 3, 0).await;
        let failing = wait_rs::<K>(&ns, "web", "ReplicaFailure after 2 pods", DEFAULT_WAIT, |rs| {
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
        scale::<K>(&ns, "web", 2).await;
        wait_rs::<K>(&ns, "web", "the condition cleared at 2", DEFAULT_WAIT, |rs| {
            replicas_settled(rs, 2)
                && rs
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_none_or(Vec::is_empty)
        })
        .await;
        let mut o = outcome::<K>(&ns, "web").await;
        o.insert("ReplicaFailure reason while over quota".into(), reason);
        o
    }
    .boxed()
}

/// 40 pods created then deleted: more similar events on one ReplicaSet than client-go's correlator
/// lets through one by one (ten distinct messages, then "(combined from similar events): ...", and
/// the per-object spam filter's burst of 25), so `kubectl get events` has upstream's shape.
fn events_under_load<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "web", 40, 0).await;
        wait_settled::<K>(&ns, "web", 40).await;
        scale::<K>(&ns, "web", 0).await;
        wait_settled::<K>(&ns, "web", 0).await;
        wait_pods(&ns, "every pod gone", <[Pod]>::is_empty).await;
        let mut o = Outcome::new();
        o.insert("events on the ReplicaSet".into(), event_shape::<K>(&ns).await);
        o
    }
    .boxed()
}

fn scale_to_500<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        create_rs::<K>(&ns, "big", 500, 0).await;
        let rs = wait_rs::<K>(&ns, "big", "500 ready", BIG_WAIT, |rs| replicas_settled(rs, 500)).await;
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

/// Every ReplicaSet scenario, in the order the specification listed them.
pub fn scenarios() -> Vec<Scenario> {
    scenarios_of::<ReplicaSet>()
}

/// The same scenarios on ReplicationControllers (upstream's replication manager is the ReplicaSet
/// controller behind conversion adapters), without the 500-pod one and the events one: what differs
/// between the kinds is the conversion, which these cover at a fraction of the time.
/// Named `rc-<name>`, so that both kinds can run in one differential.
pub fn replication_controller_scenarios() -> Vec<Scenario> {
    const LONG: [&str; 2] = ["scale-500", "events-under-load"];
    scenarios_of::<ReplicationController>()
        .into_iter()
        .filter(|s| !LONG.contains(&s.name))
        .map(|s| Scenario {
            name: Box::leak(format!("rc-{}", s.name).into_boxed_str()),
            ..s
        })
        .collect()
}

fn scenarios_of<K: Replicas>() -> Vec<Scenario> {
    vec![
        Scenario::new("create-3", create_three::<K>),
        Scenario::new("scale-3-10-2", scale_up_and_down::<K>),
        Scenario::new("delete-pod", delete_a_pod::<K>),
        Scenario::new("failed-pod", failed_pod::<K>),
        Scenario::new("adopt-release", adopt_and_release::<K>),
        Scenario::new("foreign-owner", foreign_owner::<K>),
        Scenario::new("deletion-cost", deletion_cost::<K>),
        Scenario::new("siblings-on-a-node", siblings_on_a_node::<K>),
        Scenario::new("min-ready", min_ready_seconds::<K>),
        Scenario::new("quota", quota::<K>),
        Scenario::new("events-under-load", events_under_load::<K>),
        Scenario::solo("scale-500", scale_to_500::<K>),
    ]
}
