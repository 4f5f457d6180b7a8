//! What shadow mode calls a disagreement for a ReplicaSet: a plan that would act, or a computed
//! status different from the one upstream wrote.

use controller::compact_pod::Pod;
use std::{
    hash::{Hash, Hasher},
    sync::Arc,
};

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};

use crate::plan::{ReplicaChange, SyncPlan};

/// One line per disagreeing field or intended action; empty when kcm-rs agrees with upstream.
pub fn differences(rs: &ReplicaSet, plan: &SyncPlan) -> Vec<String> {
    let mut out = Vec::new();
    let names = |pods: &[Arc<Pod>]| {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    match &plan.replicas.change {
        ReplicaChange::None => {}
        ReplicaChange::Create(n) => out.push(format!("pods: kcm-rs would create {n}")),
        ReplicaChange::Delete(pods) => out.push(format!("pods: kcm-rs would delete {:?}", names(pods))),
    }
    if !plan.claims.adopt.is_empty() {
        out.push(format!(
            "pods: kcm-rs would adopt {:?}",
            names(&plan.claims.adopt)
        ));
    }
    if !plan.claims.release.is_empty() {
        out.push(format!(
            "pods: kcm-rs would release {:?}",
            names(&plan.claims.release)
        ));
    }
    let old = rs.status.clone().unwrap_or_default();
    let new = &plan.replicas.status;
    let n = |v: Option<i32>| v.unwrap_or(0);
    let mut field = |name: &str, upstream: String, ours: String| {
        if upstream != ours {
            out.push(format!("status.{name}: upstream {upstream}, kcm-rs {ours}"));
        }
    };
    field("replicas", old.replicas.to_string(), new.replicas.to_string());
    field(
        "fullyLabeledReplicas",
        n(old.fully_labeled_replicas).to_string(),
        n(new.fully_labeled_replicas).to_string(),
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
        "terminatingReplicas",
        format!("{:?}", old.terminating_replicas),
        format!("{:?}", new.terminating_replicas),
    );
    field("conditions", conditions(&old), conditions(new));
    if rs.metadata.generation != old.observed_generation {
        out.push(format!(
            "status.observedGeneration: upstream {:?}, generation {:?}",
            old.observed_generation, rs.metadata.generation
        ));
    }
    out
}

fn conditions(s: &ReplicaSetStatus) -> String {
    let cs: Vec<String> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason.as_deref().unwrap_or("")))
        .collect();
    cs.join(", ")
}

/// A hash of the ReplicaSet's and its candidate pods' resourceVersions: it changes whenever anything
/// the plan depends on changes.
pub fn fingerprint(rs: &ReplicaSet, pods: &[Arc<Pod>]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    rs.metadata.resource_version.hash(&mut h);
    let mut rvs: Vec<&str> = pods
        .iter()
        .filter_map(|p| p.metadata.resource_version.as_deref())
        .collect();
    rvs.sort_unstable();
    rvs.hash(&mut h);
    h.finish()
}
