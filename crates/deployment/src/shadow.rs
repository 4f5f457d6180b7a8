//! What shadow mode calls a disagreement for a Deployment: a plan that would write, or a computed
//! status different from the one upstream wrote (condition times aside, which no two controllers
//! share).

use std::hash::{Hash, Hasher};

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};

use crate::{
    plan::{Actions, Decision, SyncPlan},
    replica_sets as rsu,
};

/// One line per disagreeing field or intended write; empty when kcm-rs agrees with upstream.
pub fn differences(d: &Deployment, plan: &SyncPlan) -> Vec<String> {
    let mut out = Vec::new();
    let names =
        |v: &[std::sync::Arc<ReplicaSet>]| v.iter().map(|r| rsu::name(r).to_owned()).collect::<Vec<_>>();
    if !plan.claims.adopt.is_empty() {
        out.push(format!(
            "replicasets: kcm-rs would adopt {:?}",
            names(&plan.claims.adopt)
        ));
    }
    if !plan.claims.release.is_empty() {
        out.push(format!(
            "replicasets: kcm-rs would release {:?}",
            names(&plan.claims.release)
        ));
    }
    match &plan.decision {
        Decision::SelectingAll { observed } => {
            if observed.is_some() {
                out.push("status.observedGeneration: kcm-rs would record the generation".into());
            }
        }
        Decision::Sync(a) => actions(d, a, &mut out),
    }
    out
}

fn actions(d: &Deployment, a: &Actions, out: &mut Vec<String>) {
    if let Some(c) = &a.create {
        out.push(format!(
            "replicasets: kcm-rs would create one with {} replicas",
            rsu::replicas(&c.rs)
        ));
    }
    for u in &a.updates {
        let from = u.original.as_deref().map_or(0, rsu::replicas);
        out.push(format!(
            "replicaset {}: kcm-rs would write it (replicas {from} -> {})",
            rsu::name(&u.rs),
            rsu::replicas(&u.rs)
        ));
    }
    if !a.deletes.is_empty() {
        out.push(format!(
            "replicasets: kcm-rs would delete {:?}",
            a.deletes.iter().map(|r| rsu::name(r)).collect::<Vec<_>>()
        ));
    }
    if a.rollback.is_some() {
        out.push("spec: kcm-rs would roll back".into());
    }
    if let Some(w) = &a.status {
        let (old, new) = (
            d.status.clone().unwrap_or_default(),
            w.status.clone().unwrap_or_default(),
        );
        let n = |v: Option<i32>| v.unwrap_or(0);
        let mut field = |name: &str, upstream: String, ours: String| {
            if upstream != ours {
                out.push(format!("status.{name}: upstream {upstream}, kcm-rs {ours}"));
            }
        };
        field(
            "replicas",
            n(old.replicas).to_string(),
            n(new.replicas).to_string(),
        );
        field(
            "updatedReplicas",
            n(old.updated_replicas).to_string(),
            n(new.updated_replicas).to_string(),
        );
        field(
            "readyReplicas",
            n(old.ready_replicas).to_string(),
            n(new.ready_replicas).to_string(),
        );
        field(
            "availableReplicas",
            n(old.available_replicas).to_string(),
            n(new.available_replicas).to_string(),
        );
        field(
            "unavailableReplicas",
            n(old.unavailable_replicas).to_string(),
            n(new.unavailable_replicas).to_string(),
        );
        field(
            "terminatingReplicas",
            format!("{:?}", old.terminating_replicas),
            format!("{:?}", new.terminating_replicas),
        );
        field(
            "collisionCount",
            format!("{:?}", old.collision_count),
            format!("{:?}", new.collision_count),
        );
        field(
            "observedGeneration",
            format!("{:?}", old.observed_generation),
            format!("{:?}", new.observed_generation),
        );
        field("conditions", conditions(&old), conditions(&new));
        let revision = |d: &Deployment| {
            d.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::annotations::REVISION).cloned())
                .unwrap_or_default()
        };
        field("annotations[revision]", revision(d), revision(w));
    }
}

fn conditions(s: &DeploymentStatus) -> String {
    let mut cs: Vec<String> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason.as_deref().unwrap_or("")))
        .collect();
    cs.sort();
    cs.join(", ")
}

/// A hash of the Deployment's and its candidate ReplicaSets' resourceVersions: it changes whenever
/// anything the plan depends on changes.
pub fn fingerprint(d: &Deployment, rss: &[std::sync::Arc<ReplicaSet>]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    d.metadata.resource_version.hash(&mut h);
    let mut rvs: Vec<&str> = rss
        .iter()
        .filter_map(|r| r.metadata.resource_version.as_deref())
        .collect();
    rvs.sort_unstable();
    rvs.hash(&mut h);
    h.finish()
}
