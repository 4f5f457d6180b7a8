//! Deciding: what one sync of a ReplicaSet should do, as a pure function of what the caches show.
//! [`crate::executor`] carries a plan out; unit tests, benchmarks and shadow mode look at plans.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::ClaimPlan;
use controller::Owner;
use controller::RankingOptions;
use controller::features::FeatureGates;
use controller::plan_claims;
use controller::pod_util::is_active;
use controller::pod_util::is_controlled_by;
use controller::pod_util::is_deleting;
use controller::pod_util::is_terminating;
use controller::pods_to_delete_with;
use informer::{LabelMatcher, ObjectKey, SelectorError};
use k8s_openapi::{
    api::apps::v1::{ReplicaSet, ReplicaSetStatus},
    jiff::Timestamp,
};

use crate::status::{availability_requeue, calculate_status};

/// Most pods one sync creates or deletes (upstream `BurstReplicas`, a constant, not a flag).
pub const BURST_REPLICAS: usize = 500;

/// What the caches show for one ReplicaSet.
#[derive(Debug)]
pub struct SyncInput<'a> {
    pub rs: &'a ReplicaSet,
    /// Whether earlier creations and deletions have all been observed (checked before listing pods,
    /// so that a pod arriving in between is handled by the next sync).
    pub expectations_satisfied: bool,
    /// Pods controlled by this ReplicaSet plus the orphans in its namespace.
    pub candidates: &'a [Arc<Pod>],
    pub burst_replicas: usize,
    pub now: Timestamp,
    /// The gates that change the plan: `PodDeletionCost` (the ranking) and
    /// `DeploymentReplicaSetTerminatingReplicas` (`status.terminatingReplicas` is left unset without it).
    pub features: FeatureGates,
}

/// Pods to create or delete.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ReplicaChange {
    /// Nothing to do, or not allowed now (expectations pending, ReplicaSet being deleted).
    #[default]
    None,
    Create(usize),
    Delete(Vec<Arc<Pod>>),
}

/// Scaling and status, given the claimed pods.
#[derive(Debug, Clone)]
pub struct ReplicaPlan {
    pub change: ReplicaChange,
    /// The claimed active pods the plan counts.
    pub active: Vec<Arc<Pod>>,
    pub terminating: usize,
    /// The status to have if the change succeeds, as of the plan's `now`. The executor computes it
    /// again ([`ReplicaPlan::status_at`]) as of after the scaling, as upstream does.
    pub status: ReplicaSetStatus,
    /// When to look again because a ready pod will become available (minReadySeconds), as of the
    /// plan's `now` (the executor: [`ReplicaPlan::requeue_at`]).
    pub requeue_after: Option<Duration>,
    /// What deciding `change` took besides the pods, kept so that the change can be decided again
    /// for fewer pods ([`ReplicaPlan::without`]).
    basis: ScaleBasis,
}

/// The inputs of the scaling decision other than the claimed pods.
#[derive(Debug, Clone)]
struct ScaleBasis {
    /// Expectations satisfied and the ReplicaSet not being deleted.
    may_scale: bool,
    burst_replicas: usize,
    /// Pods of every ReplicaSet with the same controller (the ranking's node counts), listed only
    /// when deleting. Deciding again for fewer pods never turns another change into a delete, so a
    /// delete decided again finds them here.
    related: Option<Vec<Arc<Pod>>>,
    now: Timestamp,
    features: FeatureGates,
}

/// The whole plan of one sync.
#[derive(Debug)]
pub struct SyncPlan {
    pub owner: Owner,
    pub claims: ClaimPlan<Pod>,
    /// Computed as if every adoption succeeds.
    pub replicas: ReplicaPlan,
}

impl SyncPlan {
    /// The plan without the orphans `gone` (their UIDs) it counted as adopted: they were deleted
    /// before they could be, so they are not this ReplicaSet's pods (upstream's `ClaimObject`
    /// ignores NotFound and the sync goes on with the pods it did claim).
    #[must_use]
    pub fn without(self, rs: &ReplicaSet, gone: &[String]) -> SyncPlan {
        let replicas = self.replicas.without(rs, gone);
        SyncPlan { replicas, ..self }
    }
}

/// Why a ReplicaSet cannot be planned for. Reported (event and log) and not retried: only a change to
/// the object can fix it.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("ReplicaSet {key} has an invalid selector: {source}")]
    InvalidSelector { key: ObjectKey, source: SelectorError },
}

/// Plans one sync (upstream `syncReplicaSet` up to the writes). `related` gives the pods of every
/// ReplicaSet with the same controller, needed only to rank pods for deletion.
pub fn plan_sync(
    input: &SyncInput<'_>,
    related: impl FnOnce() -> Vec<Arc<Pod>>,
) -> Result<SyncPlan, PlanError> {
    plan_sync_for(input, Owner::of(input.rs), related)
}

/// [`plan_sync`] for an object of another kind seen as the ReplicaSet `input.rs` (a
/// ReplicationController): `owner` is the object itself, its pods' controller reference.
pub fn plan_sync_for(
    input: &SyncInput<'_>,
    owner: Owner,
    related: impl FnOnce() -> Vec<Arc<Pod>>,
) -> Result<SyncPlan, PlanError> {
    let rs = input.rs;
    let matcher = selector(rs).map_err(|source| PlanError::InvalidSelector {
        key: ObjectKey::of(rs),
        source,
    })?;
    let claims = plan_claims(&owner, &matcher, input.candidates.iter().filter(|p| is_active(p)));
    let terminating = terminating_owned(&owner, &matcher, input.candidates);
    let replicas = plan_replicas(input, claims.claimed(), terminating, related);
    Ok(SyncPlan {
        owner,
        claims,
        replicas,
    })
}

/// The ReplicaSet's selector with apimachinery's semantics.
pub fn selector(rs: &ReplicaSet) -> Result<LabelMatcher, SelectorError> {
    LabelMatcher::from_selector(rs.spec.as_ref().map(|s| &s.selector))
}

/// Terminating pods controlled by this ReplicaSet and matching it (status.terminatingReplicas):
/// upstream claims the active pods, then counts these with `FilterClaimedPods`.
fn terminating_owned(owner: &Owner, matcher: &LabelMatcher, candidates: &[Arc<Pod>]) -> usize {
    candidates
        .iter()
        .filter(|p| {
            !is_active(p)
                && is_terminating(p)
                && matcher.matches_labels(p.metadata.labels.as_ref())
                && is_controlled_by(&p.metadata, &owner.uid)
        })
        .count()
}

/// Scaling and status for the claimed active pods (upstream `manageReplicas`' decisions and
/// `calculateStatus`).
pub fn plan_replicas(
    input: &SyncInput<'_>,
    active: Vec<Arc<Pod>>,
    terminating: usize,
    related: impl FnOnce() -> Vec<Arc<Pod>>,
) -> ReplicaPlan {
    let basis = ScaleBasis {
        may_scale: input.expectations_satisfied && !is_deleting(&input.rs.metadata),
        burst_replicas: input.burst_replicas,
        related: None,
        now: input.now,
        features: input.features,
    };
    decide_replicas(input.rs, active, terminating, basis, related)
}

impl ScaleBasis {
    /// The terminating pods to count in status: none without `DeploymentReplicaSetTerminatingReplicas`.
    fn terminating(&self, n: usize) -> Option<usize> {
        self.features
            .deployment_replica_set_terminating_replicas
            .then_some(n)
    }
}

fn decide_replicas(
    rs: &ReplicaSet,
    active: Vec<Arc<Pod>>,
    terminating: usize,
    mut basis: ScaleBasis,
    related: impl FnOnce() -> Vec<Arc<Pod>>,
) -> ReplicaPlan {
    let desired = usize::try_from(rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0)).unwrap_or(0);
    let change = if !basis.may_scale {
        ReplicaChange::None
    } else if active.len() < desired {
        ReplicaChange::Create((desired - active.len()).min(basis.burst_replicas))
    } else if active.len() > desired {
        let n = (active.len() - desired).min(basis.burst_replicas);
        let related = basis.related.get_or_insert_with(related);
        let ranking = RankingOptions {
            pod_deletion_cost: basis.features.pod_deletion_cost,
        };
        ReplicaChange::Delete(pods_to_delete_with(&active, related, n, basis.now, ranking))
    } else {
        ReplicaChange::None
    };
    let status = calculate_status(rs, &active, basis.terminating(terminating), None, basis.now);
    let requeue_after = availability_requeue(rs, &active, &status, basis.now, basis.now);
    ReplicaPlan {
        change,
        active,
        terminating,
        status,
        requeue_after,
        basis,
    }
}

impl ReplicaPlan {
    /// The plan decided again without `gone` (matched by UID): adoptions that found their pod
    /// deleted. Upstream's `ClaimObject` ignores NotFound, and the same sync scales and writes
    /// status with the pods it did claim.
    #[must_use]
    pub fn without(self, rs: &ReplicaSet, gone: &[String]) -> ReplicaPlan {
        let active = self
            .active
            .into_iter()
            .filter(|p| !gone.iter().any(|g| p.metadata.uid.as_deref() == Some(g.as_str())))
            .collect();
        decide_replicas(rs, active, self.terminating, self.basis, Vec::new)
    }

    /// The status to write at `now` after carrying out `change`, which failed with
    /// `manage_error` (its message) or succeeded.
    pub fn status_at(&self, rs: &ReplicaSet, manage_error: Option<&str>, now: Timestamp) -> ReplicaSetStatus {
        calculate_status(
            rs,
            &self.active,
            self.basis.terminating(self.terminating),
            manage_error,
            now,
        )
    }

    /// The availability requeue for `status`, computed at `evaluated_at`, measured from `now`.
    pub fn requeue_at(
        &self,
        rs: &ReplicaSet,
        status: &ReplicaSetStatus,
        evaluated_at: Timestamp,
        now: Timestamp,
    ) -> Option<Duration> {
        availability_requeue(rs, &self.active, status, evaluated_at, now)
    }
}

/// For each ready pod chosen for deletion, its age over the age of the youngest ready pod, in whole
/// milliseconds divided as integers (upstream `reportSortingDeletionAgeRatioMetric`). Skipped when
/// the youngest ready pod is less than a millisecond old (upstream would divide by zero).
pub fn deletion_age_ratios(active: &[Arc<Pod>], chosen: &[Arc<Pod>], now: Timestamp) -> Vec<f64> {
    use controller::pod_util::is_ready;
    let age_ms = |p: &Pod| {
        p.metadata
            .creation_timestamp
            .as_ref()
            .map_or(0, |t| now.as_millisecond() - t.0.as_millisecond())
    };
    let youngest = active.iter().filter(|p| is_ready(p)).map(|p| age_ms(p)).min();
    let Some(youngest) = youngest.filter(|y| *y > 0) else {
        return Vec::new();
    };
    #[allow(clippy::cast_precision_loss)]
    chosen
        .iter()
        .filter(|p| is_ready(p))
        .map(|p| (age_ms(p) / youngest) as f64)
        .collect()
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
