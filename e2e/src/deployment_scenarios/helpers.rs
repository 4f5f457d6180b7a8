//! Helpers of the Deployment scenarios: manifests, waits, the ReplicaSet size recorder and the outcome
//! they compare. ReplicaSets are keyed by revision, and their names are compared too: kcm-rs computes
//! upstream's `pod-template-hash` byte for byte, so the same template gets the same name.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use informer::{HandlerFns, InformerOptions, SharedInformerFactory, wait_for_cache_sync};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub(super) use crate::pods::{list as pods, phase, wait_pods};
use crate::{DEFAULT_WAIT, TestNamespace, differential::Outcome, wait_for};

/// The annotations the Deployment controller writes on ReplicaSets (upstream `deploymentutil`).
const REVISION: &str = "deployment.kubernetes.io/revision";
const ANNOTATIONS_COMPARED: [&str; 4] = [
    REVISION,
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
];

/// Liveness bound for the 100-replica rollout.
pub(super) const BIG_WAIT: Duration = Duration::from_secs(300);

/// A Deployment of `replicas` pods of `image`, `app=<name>`; `spec` is merged over the defaults
/// (strategy, minReadySeconds, progressDeadlineSeconds, ...).
pub fn deployment_manifest(name: &str, replicas: i32, image: &str, spec: Value) -> Deployment {
    let mut d = json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]}
            }
        }
    });
    crate::json::merge(&mut d["spec"], spec);
    serde_json::from_value(d).unwrap()
}

pub(super) async fn create(ns: &TestNamespace, name: &str, replicas: i32, image: &str, spec: Value) {
    ns.api::<Deployment>()
        .create(
            &PostParams::default(),
            &deployment_manifest(name, replicas, image, spec),
        )
        .await
        .unwrap();
}

/// A merge patch of the Deployment.
pub(super) async fn patch(ns: &TestNamespace, name: &str, patch: Value) {
    ns.api::<Deployment>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

pub(super) async fn set_image(ns: &TestNamespace, name: &str, image: &str) {
    let p = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
    patch(ns, name, p).await;
}

/// Runs kubectl against the namespace (blocking for its duration, as the other scenarios wait).
pub(super) fn kubectl(ns: &TestNamespace, args: &[&str]) -> String {
    let mut all = vec!["-n", ns.name.as_str()];
    all.extend_from_slice(args);
    ns.cluster.kubectl(&all)
}

pub(super) async fn get(ns: &TestNamespace, name: &str) -> Deployment {
    ns.api::<Deployment>().get(name).await.unwrap()
}

/// `kubectl rollout status`'s test, plus no pod left over from older ReplicaSets.
pub(super) async fn wait_complete(ns: &TestNamespace, name: &str, replicas: i32) {
    wait_complete_for(ns, name, replicas, DEFAULT_WAIT).await;
}

pub(super) async fn wait_complete_for(ns: &TestNamespace, name: &str, replicas: i32, timeout: Duration) {
    ns.wait_observed::<Deployment>(name, &format!("rollout complete at {replicas}"), timeout, |d| {
        let s = d.status.clone().unwrap_or_default();
        s.updated_replicas == Some(replicas)
            && s.replicas == Some(replicas)
            && s.available_replicas == Some(replicas)
            && s.terminating_replicas.unwrap_or(0) == 0
    })
    .await;
    let n = usize::try_from(replicas).unwrap();
    wait_pods(ns, &format!("exactly {n} pods of {name}"), |p| p.len() == n).await;
}

pub(super) fn condition(d: &Deployment, type_: &str) -> Option<String> {
    let c = d
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)?;
    Some(format!("{} ({})", c.status, c.reason.as_deref().unwrap_or("")))
}

/// Waits until the ReplicaSets' `spec.replicas` by revision are `want` (all of them, in order) and
/// each ReplicaSet has created its pods (`status.replicas` caught up): without the second part, what
/// a scenario does next races the ReplicaSet controller, and "pods ever created" differs by a pod
/// from run to run under either implementation.
pub(super) async fn wait_sizes(ns: &TestNamespace, want: &[(i64, i32)]) {
    let want: BTreeMap<i64, i32> = want.iter().copied().collect();
    wait_for(
        &format!("ReplicaSet sizes {want:?}, pods created"),
        DEFAULT_WAIT,
        || async {
            let rss = replica_sets(ns).await;
            let got: BTreeMap<i64, i32> = rss
                .iter()
                .map(|rs| {
                    (
                        revision(rs),
                        rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
                    )
                })
                .collect();
            let lagging: Vec<i64> = rss
                .iter()
                .filter(|rs| {
                    let spec = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
                    rs.status.as_ref().map_or(0, |s| s.replicas) != spec
                })
                .map(revision)
                .collect();
            if got == want && lagging.is_empty() {
                Ok(())
            } else {
                Err((got, lagging))
            }
        },
    )
    .await;
}

pub(super) async fn replica_sets(ns: &TestNamespace) -> Vec<ReplicaSet> {
    ns.api::<ReplicaSet>()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

fn revision(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The facts compared: the Deployment's status and revision, every ReplicaSet by revision (sizes,
/// the controller's annotations, owner, image) and the pods of each revision.
pub(super) async fn outcome(ns: &TestNamespace, name: &str) -> Outcome {
    let mut o = Outcome::new();
    let d = get(ns, name).await;
    let s = d.status.clone().unwrap_or_default();
    let rev = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.annotations
            .as_ref()
            .and_then(|a| a.get(REVISION))
            .cloned()
            .unwrap_or_default()
    };
    o.insert("deployment revision".into(), rev(&d.metadata));
    for (k, v) in [
        ("replicas", s.replicas),
        ("updatedReplicas", s.updated_replicas),
        ("readyReplicas", s.ready_replicas),
        ("availableReplicas", s.available_replicas),
        ("unavailableReplicas", s.unavailable_replicas),
        ("terminatingReplicas", s.terminating_replicas),
        ("collisionCount", s.collision_count),
    ] {
        o.insert(format!("status.{k}"), format!("{v:?}"));
    }
    o.insert(
        "status.observedGeneration == generation".into(),
        (s.observed_generation == d.metadata.generation).to_string(),
    );
    // Conditions are a map keyed by type (`listType=map`), so their order means nothing, and
    // upstream's own order depends on timing: a new ReplicaSet's status write puts Progressing first
    // unless it hits a conflict, and then the next sync adds Available first. Compared by type.
    let mut conditions: Vec<String> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason.as_deref().unwrap_or("")))
        .collect();
    conditions.sort();
    o.insert("status.conditions".into(), conditions.join(", "));
    let uid_to_rev: HashMap<String, i64> = replica_sets(ns)
        .await
        .iter()
        .map(|rs| (rs.metadata.uid.clone().unwrap_or_default(), revision(rs)))
        .collect();
    for rs in replica_sets(ns).await {
        let annotations = rs.metadata.annotations.clone().unwrap_or_default();
        let compared: Vec<String> = ANNOTATIONS_COMPARED
            .iter()
            .filter_map(|k| annotations.get(*k).map(|v| format!("{k}={v}")))
            .collect();
        let owner = rs
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .map_or("none".to_owned(), |r| format!("{}/{}", r.kind, r.name));
        let image = rs
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.spec.as_ref())
            .map(|s| s.containers[0].image.clone().unwrap_or_default())
            .unwrap_or_default();
        let st = rs.status.clone().unwrap_or_default();
        // `kubectl rollout restart` stamps the template with the time it ran, so the two runs'
        // templates, hashes and names differ by that alone.
        let restarted = rs
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .is_some_and(|a| a.contains_key("kubectl.kubernetes.io/restartedAt"));
        let name = if restarted {
            "(restarted template)"
        } else {
            rs.metadata.name.as_deref().unwrap_or("")
        };
        o.insert(
            format!("replicaset rev {}", revision(&rs)),
            format!(
                "{}: spec {} status {} ready {} available {}; owner {owner}; image {image}; {}",
                name,
                rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
                st.replicas,
                st.ready_replicas.unwrap_or(0),
                st.available_replicas.unwrap_or(0),
                compared.join(" ")
            ),
        );
    }
    let mut by_rev: BTreeMap<String, usize> = BTreeMap::new();
    for p in pods(ns).await {
        let owner = p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .map_or("none".to_owned(), |r| {
                format!("rev {}", uid_to_rev.get(&r.uid).copied().unwrap_or(-1))
            });
        let deleting = if p.metadata.deletion_timestamp.is_some() {
            " deleting"
        } else {
            ""
        };
        *by_rev
            .entry(format!("{owner} {}{deleting}", phase(&p)))
            .or_default() += 1;
    }
    let pods: Vec<String> = by_rev.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    o.insert("pods".into(), pods.join("; "));
    o
}

/// Records every ReplicaSet's successive `spec.replicas` from a watch started before the scenario,
/// so that the steps of a rollout can be compared where upstream's are deterministic.
pub(super) struct SizeSteps {
    steps: Arc<Mutex<BTreeMap<String, Vec<i32>>>>,
    cancel: CancellationToken,
}

impl SizeSteps {
    pub(super) async fn start(ns: &TestNamespace) -> SizeSteps {
        let factory =
            SharedInformerFactory::new(ns.cluster.client.clone()).with_namespaces(vec![ns.name.clone()]);
        let informer = factory.namespaced::<ReplicaSet>(InformerOptions::default());
        let steps: Arc<Mutex<BTreeMap<String, Vec<i32>>>> = Arc::default();
        let (on_add, on_update) = (steps.clone(), steps.clone());
        let record = |steps: &Mutex<BTreeMap<String, Vec<i32>>>, rs: &ReplicaSet| {
            let uid = rs.metadata.uid.clone().unwrap_or_default();
            let n = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
            let mut steps = steps.lock();
            let seen = steps.entry(uid).or_default();
            if seen.last() != Some(&n) {
                seen.push(n);
            }
        };
        let reg = informer.add_event_handler(
            HandlerFns::new()
                .on_add(move |rs: &Arc<ReplicaSet>, _| record(&on_add, rs))
                .on_update(move |_, rs: &Arc<ReplicaSet>| record(&on_update, rs)),
            None,
        );
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        assert!(wait_for_cache_sync(&cancel, &[&reg]).await);
        SizeSteps { steps, cancel }
    }

    /// Each ReplicaSet's steps, by its revision now ("rev 2: 0 → 1 → 3").
    pub(super) async fn stop(self, ns: &TestNamespace) -> String {
        self.cancel.cancel();
        let revisions: HashMap<String, i64> = replica_sets(ns)
            .await
            .iter()
            .map(|rs| (rs.metadata.uid.clone().unwrap_or_default(), revision(rs)))
            .collect();
        let steps = self.steps.lock();
        let mut out: Vec<(i64, String)> = steps
            .iter()
            .map(|(uid, s)| {
                let rev = revisions.get(uid).copied().unwrap_or(-1);
                let s: Vec<String> = s.iter().map(ToString::to_string).collect();
                (rev, format!("rev {rev}: {}", s.join(" → ")))
            })
            .collect();
        out.sort();
        out.into_iter().map(|(_, s)| s).collect::<Vec<_>>().join("; ")
    }
}
