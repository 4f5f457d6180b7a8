//! What is compared after each step: a projection of the program's objects that two correct
//! controllers must agree on. Objects are named by what they are to the program (the Job's
//! completion index, the ReplicaSet's revision). A ReplicaSet's name is compared as well: it is the
//! Deployment's name and the template hash, which kcm-rs computes byte for byte as upstream does.
//! Pods' names are not (the API server generates their suffixes).
//!
//! Left out, because upstream itself does not write them the same way twice:
//! * timestamps (conditions' times, startTime, completionTime): wall clock; only whether they are
//!   set is kept;
//! * condition messages: they carry ReplicaSet names;
//! * the order of conditions: a map keyed by type (`listType=map`) whose order follows which sync
//!   happened to write first; compared sorted by type;
//! * ReplicaSets' generation and observedGeneration: how many scaling writes a rollout takes depends
//!   on when ReplicaSet status updates reach the Deployment controller;
//! * pods' exit codes and restart counts: a pod deleted as its Job fails ends with KWOK's 137 or its
//!   own code depending on which comes first;
//! * the events' reasons until the program's end (`super::runner`): events are written in the
//!   background behind the client's rate limiter, so they may arrive after a step has settled.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::{
    api::{
        apps::v1::{Deployment, ReplicaSet},
        batch::v1::Job,
        core::v1::Pod,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

use super::program::Kind;
use crate::{
    differential::Outcome,
    pods::{is_ready, phase},
};

pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// The Deployment controller's annotations on ReplicaSets, besides the revision.
const RS_ANNOTATIONS: [&str; 3] = [
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
];
pub const INDEX: &str = "batch.kubernetes.io/job-completion-index";
pub const TRACKING: &str = "batch.kubernetes.io/job-tracking";

/// The program's objects at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub deployment: Option<Deployment>,
    pub job: Option<Job>,
    pub replication_controller: Option<k8s_openapi::api::core::v1::ReplicationController>,
    pub cron_job: Option<k8s_openapi::api::batch::v1::CronJob>,
    /// A CronJob's Jobs.
    pub jobs: Vec<Job>,
    pub replica_sets: Vec<ReplicaSet>,
    pub pods: Vec<Pod>,
}

pub fn revision(meta: &ObjectMeta) -> i64 {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

pub fn tracked(p: &Pod) -> bool {
    p.metadata.finalizers.iter().flatten().any(|f| f == TRACKING)
}

/// "Type=Status (Reason)" of each condition, sorted by type.
pub(super) fn conditions<'a>(c: impl Iterator<Item = (&'a str, &'a str, Option<&'a str>)>) -> String {
    let mut out: Vec<String> = c
        .map(|(t, s, r)| format!("{t}={s} ({})", r.unwrap_or("")))
        .collect();
    out.sort();
    out.join(", ")
}

fn counts(by: BTreeMap<String, usize>) -> String {
    let v: Vec<String> = by.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    v.join("; ")
}

/// The projection of the object a program of `kind` drives.
pub fn project(s: &Snapshot, kind: Kind) -> Outcome {
    match kind {
        Kind::Deployment => deployment(s),
        Kind::Job => job(s),
        Kind::ReplicationController => super::replication::project(s),
        Kind::CronJob => super::cronjob_outcome::project(s),
    }
}

fn deployment(s: &Snapshot) -> Outcome {
    let mut o = Outcome::new();
    let Some(d) = &s.deployment else {
        o.insert("deployment".into(), "absent".into());
        return o;
    };
    let st = d.status.clone().unwrap_or_default();
    o.insert("deployment revision".into(), revision(&d.metadata).to_string());
    for (k, v) in [
        ("replicas", st.replicas),
        ("updatedReplicas", st.updated_replicas),
        ("readyReplicas", st.ready_replicas),
        ("availableReplicas", st.available_replicas),
        ("unavailableReplicas", st.unavailable_replicas),
        ("terminatingReplicas", st.terminating_replicas),
        ("collisionCount", st.collision_count),
    ] {
        // Unset and 0 differ on the wire (pointer fields): kept apart, as the fixed scenarios do.
        o.insert(format!("status.{k}"), format!("{v:?}"));
    }
    o.insert(
        "status.observedGeneration == generation".into(),
        (st.observed_generation == d.metadata.generation).to_string(),
    );
    o.insert(
        "status.conditions".into(),
        conditions(
            st.conditions
                .iter()
                .flatten()
                .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_deref())),
        ),
    );
    let uid_to_rev: HashMap<&str, i64> = s
        .replica_sets
        .iter()
        .map(|rs| (rs.metadata.uid.as_deref().unwrap_or(""), revision(&rs.metadata)))
        .collect();
    for rs in &s.replica_sets {
        let annotations = rs.metadata.annotations.clone().unwrap_or_default();
        let compared: Vec<String> = RS_ANNOTATIONS
            .iter()
            .filter_map(|k| annotations.get(*k).map(|v| format!("{k}={v}")))
            .collect();
        let owned = crate::pods::controller_uid(&rs.metadata) == d.metadata.uid.as_deref();
        let spec = rs.spec.clone().unwrap_or_default();
        let image = spec
            .template
            .as_ref()
            .and_then(|t| t.spec.as_ref())
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        let rst = rs.status.clone().unwrap_or_default();
        // Keyed by revision; two ReplicaSets of one revision (never expected) would show as one
        // entry here, and as a difference in the pods' line.
        o.insert(
            format!("replicaset rev {}", revision(&rs.metadata)),
            format!(
                "{}: spec {} status {} ready {} available {}; minReady {}; owned {owned}; image {image}; {}",
                rs.metadata.name.as_deref().unwrap_or(""),
                spec.replicas.unwrap_or(1),
                rst.replicas,
                rst.ready_replicas.unwrap_or(0),
                rst.available_replicas.unwrap_or(0),
                spec.min_ready_seconds.unwrap_or(0),
                compared.join(" ")
            ),
        );
    }
    let mut by_rev: BTreeMap<String, usize> = BTreeMap::new();
    for p in &s.pods {
        let owner = crate::pods::controller_uid(&p.metadata).map_or("no owner".to_owned(), |u| {
            uid_to_rev
                .get(u)
                .map_or("a deleted ReplicaSet".to_owned(), |r| format!("rev {r}"))
        });
        let deleting = if p.metadata.deletion_timestamp.is_some() {
            " deleting"
        } else {
            ""
        };
        let ready = if is_ready(p) { " ready" } else { "" };
        *by_rev
            .entry(format!("{owner} {}{ready}{deleting}", phase(p)))
            .or_default() += 1;
    }
    o.insert("pods".into(), counts(by_rev));
    o
}

fn job(s: &Snapshot) -> Outcome {
    let mut o = Outcome::new();
    match &s.job {
        None => {
            o.insert("job".into(), "absent".into());
        }
        Some(j) => {
            let st = j.status.clone().unwrap_or_default();
            for (k, v) in [
                ("active", st.active),
                ("ready", st.ready),
                ("succeeded", st.succeeded),
                ("failed", st.failed),
                ("terminating", st.terminating),
            ] {
                o.insert(format!("status.{k}"), v.unwrap_or(0).to_string());
            }
            o.insert(
                "status.completedIndexes".into(),
                st.completed_indexes.clone().unwrap_or_default(),
            );
            o.insert("status.failedIndexes".into(), format!("{:?}", st.failed_indexes));
            let uncounted = st.uncounted_terminated_pods.as_ref().map_or(0, |u| {
                u.succeeded.iter().flatten().count() + u.failed.iter().flatten().count()
            });
            o.insert("status.uncountedTerminatedPods".into(), uncounted.to_string());
            o.insert("status.startTime set".into(), st.start_time.is_some().to_string());
            o.insert(
                "status.completionTime set".into(),
                st.completion_time.is_some().to_string(),
            );
            o.insert(
                "status.conditions".into(),
                conditions(
                    st.conditions
                        .iter()
                        .flatten()
                        .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_deref())),
                ),
            );
            o.insert(
                "job finalizers".into(),
                j.metadata.finalizers.clone().unwrap_or_default().join(","),
            );
        }
    }
    let mut by_index: BTreeMap<String, usize> = BTreeMap::new();
    for p in &s.pods {
        let index = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(INDEX))
            .map_or(String::new(), |i| format!("index {i} "));
        let mut flags = String::new();
        for (set, flag) in [
            (is_ready(p), " ready"),
            (p.metadata.deletion_timestamp.is_some(), " deleting"),
            (tracked(p), " tracked"),
            (crate::pods::controller_uid(&p.metadata).is_none(), " orphan"),
        ] {
            if set {
                flags.push_str(flag);
            }
        }
        *by_index.entry(format!("{index}{}{flags}", phase(p))).or_default() += 1;
    }
    o.insert("pods".into(), counts(by_index));
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(name: &str, uid: &str, rev: i64, replicas: i32, image: &str) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": name, "uid": uid,
                "annotations": {REVISION: rev.to_string()},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                     "uid": "d", "controller": true}]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}},
            "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}
        }))
        .unwrap()
    }

    fn pod(name: &str, owner: &str, index: Option<&str>, phase: &str, time: &str) -> Pod {
        let annotations = index.map_or(json!({}), |i| json!({INDEX: i}));
        serde_json::from_value(json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"), "annotations": annotations,
                "creationTimestamp": time,
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": owner,
                                     "controller": true}]},
            "status": {"phase": phase, "startTime": time,
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": time}]}
        }))
        .unwrap()
    }

    fn deployment(conditions: serde_json::Value) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "uid": "d", "generation": 3,
                         "annotations": {REVISION: "2"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}}},
            "status": {"observedGeneration": 3, "replicas": 2, "conditions": conditions}
        }))
        .unwrap()
    }

    /// Two runs that differ only in pod names, UIDs, timestamps, messages and condition order
    /// project the same; a ReplicaSet's size or name does not.
    #[test]
    fn pod_names_times_and_condition_order_do_not_count() {
        let a = Snapshot {
            deployment: Some(deployment(json!([
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": "ReplicaSet \"web-abc\" has successfully progressed.",
                 "lastUpdateTime": "2026-01-01T00:00:00Z"},
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
            ]))),
            job: None,
            replication_controller: None,
            cron_job: None,
            jobs: Vec::new(),
            replica_sets: vec![
                rs("web-abc", "u1", 1, 0, "nginx:1"),
                rs("web-def", "u2", 2, 2, "nginx:2"),
            ],
            pods: vec![
                pod("web-def-1", "u2", None, "Running", "2026-01-01T00:00:00Z"),
                pod("web-def-2", "u2", None, "Running", "2026-01-01T00:00:01Z"),
            ],
        };
        let b = Snapshot {
            deployment: Some(deployment(json!([
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": "ReplicaSet \"web-7f9\" has successfully progressed.",
                 "lastUpdateTime": "2026-02-02T00:00:00Z"}
            ]))),
            job: None,
            replication_controller: None,
            cron_job: None,
            jobs: Vec::new(),
            replica_sets: vec![
                rs("web-def", "v2", 2, 2, "nginx:2"),
                rs("web-abc", "v1", 1, 0, "nginx:1"),
            ],
            pods: vec![
                pod("web-7f9-q", "v2", None, "Running", "2026-02-02T00:00:05Z"),
                pod("web-7f9-r", "v2", None, "Running", "2026-02-02T00:00:09Z"),
            ],
        };
        let (pa, pb) = (project(&a, Kind::Deployment), project(&b, Kind::Deployment));
        assert_eq!(pa, pb);
        assert_eq!(pa["pods"], "rev 2 Running ready: 2");
        assert_eq!(
            pa["status.conditions"],
            "Available=True (MinimumReplicasAvailable), Progressing=True (NewReplicaSetAvailable)"
        );
        let mut c = b.clone();
        c.replica_sets[1] = rs("web-abc", "v1", 1, 1, "nginx:1");
        assert_ne!(project(&c, Kind::Deployment), pb);
        let mut d = b.clone();
        d.replica_sets[1] = rs("web-x1z", "v1", 1, 0, "nginx:1");
        assert_ne!(project(&d, Kind::Deployment), pb, "another hash, another name");
    }

    #[test]
    fn job_pods_count_by_index_and_phase() {
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "job", "uid": "j"},
            "status": {"active": 1, "succeeded": 1, "completedIndexes": "0",
                       "startTime": "2026-01-01T00:00:00Z"}
        }))
        .unwrap();
        let s = Snapshot {
            job: Some(job),
            pods: vec![
                pod("job-0-x", "j", Some("0"), "Succeeded", "2026-01-01T00:00:00Z"),
                pod("job-1-y", "j", Some("1"), "Running", "2026-01-01T00:00:01Z"),
            ],
            ..Snapshot::default()
        };
        let o = project(&s, Kind::Job);
        assert_eq!(o["pods"], "index 0 Succeeded ready: 1; index 1 Running ready: 1");
        assert_eq!(o["status.completedIndexes"], "0");
        assert_eq!(o["status.startTime set"], "true");
        assert_eq!(project(&Snapshot::default(), Kind::Job)["job"], "absent");
    }
}
