//! What shadow mode calls a disagreement for a ReplicaSet: a plan that would act, or a computed
//! status different from the one upstream wrote.

use controller::shadow::{Differences, names};
use k8s_openapi::api::apps::v1::ReplicaSet;

use crate::plan::{ReplicaChange, SyncPlan};

/// One line per disagreeing field or intended action; empty when kcm-rs agrees with upstream.
pub fn differences(rs: &ReplicaSet, plan: &SyncPlan) -> Vec<String> {
    let mut d = Differences::new();
    match &plan.replicas.change {
        ReplicaChange::None => {}
        ReplicaChange::Create(n) => d.would("pods", format_args!("create {n}")),
        ReplicaChange::Delete(pods) => d.would("pods", format_args!("delete {:?}", names(pods))),
    }
    if !plan.claims.adopt.is_empty() {
        d.would("pods", format_args!("adopt {:?}", names(&plan.claims.adopt)));
    }
    if !plan.claims.release.is_empty() {
        d.would("pods", format_args!("release {:?}", names(&plan.claims.release)));
    }
    let old = rs.status.clone().unwrap_or_default();
    let new = &plan.replicas.status;
    d.field("replicas", old.replicas, new.replicas);
    d.count(
        "fullyLabeledReplicas",
        old.fully_labeled_replicas,
        new.fully_labeled_replicas,
    );
    d.count("readyReplicas", old.ready_replicas, new.ready_replicas);
    d.count(
        "availableReplicas",
        old.available_replicas,
        new.available_replicas,
    );
    d.exact(
        "terminatingReplicas",
        &old.terminating_replicas,
        &new.terminating_replicas,
    );
    d.conditions(&old.conditions, &new.conditions);
    if rs.metadata.generation != old.observed_generation {
        d.push(format!(
            "status.observedGeneration: upstream {:?}, generation {:?}",
            old.observed_generation, rs.metadata.generation
        ));
    }
    d.into_lines()
}
