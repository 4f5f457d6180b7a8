//! What shadow mode calls a disagreement for a Deployment: a plan that would write, or a computed
//! status different from the one upstream wrote (condition times aside, which no two controllers
//! share).

use controller::shadow::{Differences, names};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};

use crate::{
    plan::{Actions, Decision, SyncPlan},
    replica_sets as rsu,
};

/// One line per disagreeing field or intended write; empty when kcm-rs agrees with upstream.
pub fn differences(d: &Deployment, plan: &SyncPlan) -> Vec<String> {
    let mut out = Differences::new();
    if !plan.claims.adopt.is_empty() {
        out.would(
            "replicasets",
            format_args!("adopt {:?}", names(&plan.claims.adopt)),
        );
    }
    if !plan.claims.release.is_empty() {
        out.would(
            "replicasets",
            format_args!("release {:?}", names(&plan.claims.release)),
        );
    }
    match &plan.decision {
        Decision::SelectingAll { observed } => {
            if observed.is_some() {
                out.push("status.observedGeneration: kcm-rs would record the generation".into());
            }
        }
        Decision::Sync(a) => actions(d, a, &mut out),
    }
    out.into_lines()
}

fn actions(d: &Deployment, a: &Actions, out: &mut Differences) {
    if let Some(c) = &a.create {
        out.would(
            "replicasets",
            format_args!("create one with {} replicas", rsu::replicas(&c.rs)),
        );
    }
    for u in &a.updates {
        let from = u.original.as_deref().map_or(0, rsu::replicas);
        out.would(
            &format!("replicaset {}", rsu::name(&u.rs)),
            format_args!("write it (replicas {from} -> {})", rsu::replicas(&u.rs)),
        );
    }
    if !a.deletes.is_empty() {
        out.would("replicasets", format_args!("delete {:?}", names(&a.deletes)));
    }
    if a.rollback.is_some() {
        out.would("spec", format_args!("roll back"));
    }
    if let Some(w) = &a.status {
        let (old, new) = (
            d.status.clone().unwrap_or_default(),
            w.status.clone().unwrap_or_default(),
        );
        status_differences(&old, &new, out);
        let revision = |d: &Deployment| {
            d.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::annotations::REVISION).cloned())
                .unwrap_or_default()
        };
        out.field("annotations[revision]", revision(d), revision(w));
    }
}

fn status_differences(old: &DeploymentStatus, new: &DeploymentStatus, out: &mut Differences) {
    out.count("replicas", old.replicas, new.replicas);
    out.count("updatedReplicas", old.updated_replicas, new.updated_replicas);
    out.count("readyReplicas", old.ready_replicas, new.ready_replicas);
    out.count(
        "availableReplicas",
        old.available_replicas,
        new.available_replicas,
    );
    out.count(
        "unavailableReplicas",
        old.unavailable_replicas,
        new.unavailable_replicas,
    );
    out.exact(
        "terminatingReplicas",
        &old.terminating_replicas,
        &new.terminating_replicas,
    );
    out.exact("collisionCount", &old.collision_count, &new.collision_count);
    out.exact(
        "observedGeneration",
        &old.observed_generation,
        &new.observed_generation,
    );
    out.conditions(&old.conditions, &new.conditions);
}
