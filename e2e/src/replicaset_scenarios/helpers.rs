//! Helpers of the ReplicaSet scenarios: manifests, waits and the outcome they compare, for either
//! kind the ReplicaSet controller scales ([`Replicas`]): the scenarios run on ReplicationControllers
//! too, read through their ReplicaSet view.

use std::time::Duration;

pub(super) use crate::pods::{is_ready, list as pods, phase, wait_pods};
use crate::{DEFAULT_WAIT, TestNamespace, differential::Outcome, namespace::Observed, wait_quiet};
use k8s_openapi::api::{
    apps::v1::ReplicaSet,
    core::v1::{ConfigMap, Pod, ReplicationController},
};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use replicaset::ReplicaKind;
use serde_json::json;

/// A kind the scenarios create and scale: ReplicaSets, or ReplicationControllers.
pub trait Replicas: ReplicaKind + Observed {
    /// `rs_manifest`'s object in this kind.
    fn manifest(name: &str, replicas: i32, min_ready: i32) -> Self;
}

impl Replicas for ReplicaSet {
    fn manifest(name: &str, replicas: i32, min_ready: i32) -> Self {
        rs_manifest(name, replicas, min_ready)
    }
}

impl Replicas for ReplicationController {
    fn manifest(name: &str, replicas: i32, min_ready: i32) -> Self {
        let rs = rs_manifest(name, replicas, min_ready);
        let spec = rs.spec.unwrap();
        serde_json::from_value(json!({
            "metadata": rs.metadata,
            "spec": {
                "replicas": spec.replicas,
                "minReadySeconds": spec.min_ready_seconds,
                "selector": spec.selector.match_labels,
                "template": spec.template,
            }
        }))
        .unwrap()
    }
}

/// Liveness bound for the 500-pod scenario.
pub(super) const BIG_WAIT: Duration = Duration::from_secs(300);

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

/// A ConfigMap named `owner`, to stand as some other controller of the scenario's objects.
pub(super) async fn create_owner(ns: &TestNamespace) -> ConfigMap {
    ns.api::<ConfigMap>()
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap(),
        )
        .await
        .unwrap()
}

pub(super) async fn create_rs<K: Replicas>(ns: &TestNamespace, name: &str, replicas: i32, min_ready: i32) {
    ns.api::<K>()
        .create(&PostParams::default(), &K::manifest(name, replicas, min_ready))
        .await
        .unwrap();
}

pub(super) async fn scale<K: Replicas>(ns: &TestNamespace, name: &str, replicas: i32) {
    let patch = json!({"spec": {"replicas": replicas}});
    ns.api::<K>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Waits until the object has observed its generation and `done` holds for its ReplicaSet view;
/// returns that view.
pub(super) async fn wait_rs<K: Replicas>(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    timeout: Duration,
    done: impl Fn(&ReplicaSet) -> bool,
) -> ReplicaSet {
    ns.wait_observed::<K>(name, what, timeout, |k| done(&k.as_replica_set()))
        .await
        .as_replica_set()
        .into_owned()
}

/// The object's ReplicaSet view, as read now.
async fn get_view<K: Replicas>(ns: &TestNamespace, name: &str) -> kube::Result<ReplicaSet> {
    Ok(ns.api::<K>().get(name).await?.as_replica_set().into_owned())
}

pub(super) fn count(
    rs: &ReplicaSet,
    f: fn(&k8s_openapi::api::apps::v1::ReplicaSetStatus) -> Option<i32>,
) -> i32 {
    rs.status.as_ref().and_then(f).unwrap_or(0)
}

pub(super) fn ready(rs: &ReplicaSet) -> i32 {
    count(rs, |s| s.ready_replicas)
}

pub(super) fn replicas_settled(rs: &ReplicaSet, n: i32) -> bool {
    let s = rs.status.clone().unwrap_or_default();
    s.replicas == n && s.ready_replicas.unwrap_or(0) == n && s.terminating_replicas.unwrap_or(0) == 0
}

/// How long [`wait_settled`] wants the object and its pods unchanged: a controller's status write
/// follows the pod change it reflects by well under this, even with three lanes on two cores.
const SETTLE_QUIET: Duration = Duration::from_secs(3);

/// Waits until the object reports `n` ready replicas and its pods agree (exactly `n` active pods
/// controlled by it, all Ready, none terminating), and neither it nor any pod of the namespace has
/// changed for [`SETTLE_QUIET`]. Agreement alone is not enough: when a pod is replaced, the status
/// written before the change can still read `n` ready while the replacement already is, and the
/// controller's next write (the replacement not yet ready in its cache) lowers it again.
pub(super) async fn wait_settled<K: Replicas>(ns: &TestNamespace, name: &str, n: i32) {
    wait_quiet(
        &format!("{} {name} to settle at {n} ready pods", K::kind(&())),
        DEFAULT_WAIT,
        SETTLE_QUIET,
        || async {
            let rs = get_view::<K>(ns, name).await.map_err(|e| e.to_string())?;
            let observed = rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation;
            let uid = rs.metadata.uid.clone().unwrap_or_default();
            let all = pods(ns).await;
            let versions: Vec<(Option<String>, Option<String>)> = all
                .iter()
                .map(|p| (p.metadata.name.clone(), p.metadata.resource_version.clone()))
                .collect();
            let owned: Vec<Pod> = all
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
                Ok((rs.metadata.resource_version, versions))
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

/// The facts compared: the object's status (conditions without their free-text message) and every
/// pod as owner, labels, phase and whether it is being deleted.
pub(super) async fn outcome<K: Replicas>(ns: &TestNamespace, rs_name: &str) -> Outcome {
    // Scheduling and the kubelet simulation are not what is compared: let every pod start first.
    wait_pods(ns, "every pod to leave Pending", |p| {
        p.iter().all(|p| phase(p) != "Pending")
    })
    .await;
    let mut o = Outcome::new();
    let rs = get_view::<K>(ns, rs_name).await.unwrap();
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

/// How the events on objects of kind `K` look to `kubectl get events`, once they have not changed
/// for 6 s: per reason, how many Event objects, their summed count, and how many are combined ones.
pub(super) async fn event_shape<K: Replicas>(ns: &TestNamespace) -> String {
    let kind = K::kind(&());
    let read = || async {
        let events = ns
            .api::<k8s_openapi::api::core::v1::Event>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        let mut by: std::collections::BTreeMap<String, (usize, i32, usize)> =
            std::collections::BTreeMap::new();
        for e in events
            .iter()
            .filter(|e| e.involved_object.kind.as_deref() == Some(&*kind))
        {
            let entry = by.entry(e.reason.clone().unwrap_or_default()).or_default();
            entry.0 += 1;
            entry.1 += e.count.unwrap_or(1);
            if e.message
                .as_deref()
                .is_some_and(|m| m.starts_with("(combined from similar events): "))
            {
                entry.2 += 1;
            }
        }
        by.iter()
            .map(|(r, (objects, count, combined))| {
                format!("{r}: {objects} objects, count {count}, {combined} combined")
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut last = read().await;
    let mut quiet = Duration::ZERO;
    let step = Duration::from_millis(500);
    let mut waited = Duration::ZERO;
    while quiet < Duration::from_secs(6) && waited < Duration::from_secs(60) {
        tokio::time::sleep(step).await;
        waited += step;
        let now = read().await;
        if now == last {
            quiet += step;
        } else {
            quiet = Duration::ZERO;
            last = now;
        }
    }
    last
}
