//! Deciding: what one sync of a Deployment should do, as a pure function of what the caches show
//! (upstream `syncDeployment` and everything it calls, up to the writes). [`crate::executor`] carries
//! a plan out; unit tests, benchmarks and shadow mode look at plans.
//!
//! Upstream writes as it goes and can write the Deployment's status up to three times in one sync;
//! all but the first of those reuse the resourceVersion read from the cache and fail with a conflict,
//! so the sync is retried and the status lands one sync later. Here the steps change an in-memory
//! copy ([`Work`]) and the plan holds each object's final state: one write per object, the same end
//! state, one sync sooner.

use controller::PlannedEvent;
use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::{ClaimPlan, Owner, features::FeatureGates, plan_claims};
use informer::{LabelMatcher, ObjectKey, SelectorError};
use k8s_openapi::{
    api::apps::v1::{Deployment, ReplicaSet},
    jiff::Timestamp,
};

use crate::{
    annotations,
    new_rs::SizeError,
    rollback::RollbackEvents,
    spec::{self, Strategy},
    status,
    work::Work,
};

/// Event reason for a Deployment with an empty selector (upstream's).
pub const REASON_SELECTING_ALL: &str = "SelectingAll";
pub const MSG_SELECTING_ALL: &str =
    "This deployment is selecting all pods. A non-empty selector is required.";

/// What the caches show for one Deployment.
pub struct SyncInput<'a> {
    pub deployment: &'a Deployment,
    /// The ReplicaSets this Deployment controls plus the orphans of its namespace.
    pub replica_sets: &'a [Arc<ReplicaSet>],
    /// Pods controlled by the ReplicaSet with this UID, terminal ones included (asked for only
    /// by Recreate).
    pub pods_of: &'a (dyn Fn(&str) -> Vec<Arc<Pod>> + Sync),
    pub now: Timestamp,
}

impl std::fmt::Debug for SyncInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncInput")
            .field("deployment", &self.deployment.metadata.name)
            .field("replica_sets", &self.replica_sets.len())
            .finish_non_exhaustive()
    }
}

/// A ReplicaSet write and the events that follow its success.
#[derive(Debug, Clone)]
pub struct RsWrite {
    /// The object as read (`None` for a creation).
    pub original: Option<Arc<ReplicaSet>>,
    pub rs: ReplicaSet,
    pub events: Vec<PlannedEvent>,
    /// A failure of this write is logged and the sync goes on (see `work::Slot::best_effort`).
    pub best_effort: bool,
}

/// The writes of one sync, in the order they are made.
#[derive(Debug, Default)]
pub struct Actions {
    pub create: Option<RsWrite>,
    pub updates: Vec<RsWrite>,
    /// Old ReplicaSets beyond revisionHistoryLimit.
    pub deletes: Vec<Arc<ReplicaSet>>,
    /// The Deployment to write through the status subresource (status and annotations), if either
    /// changed.
    pub status: Option<Deployment>,
    /// A rollback: the Deployment to write (spec and annotations), and the events around it.
    pub rollback: Option<(Deployment, RollbackEvents)>,
    /// Events on the Deployment, whatever the writes do.
    pub events: Vec<PlannedEvent>,
    /// When to look again at a rollout that shows no progress (its deadline).
    pub requeue_after: Option<Duration>,
    /// With a creation: the Deployment as read, which the executor gives a ReplicaSetCreateError
    /// condition if the creation fails.
    pub before_create: Option<Deployment>,
}

impl Actions {
    /// Whether the plan writes nothing.
    pub fn is_empty(&self) -> bool {
        self.create.is_none()
            && self.updates.is_empty()
            && self.deletes.is_empty()
            && self.status.is_none()
            && self.rollback.is_none()
    }
}

/// What to do.
#[derive(Debug)]
pub enum Decision {
    /// An empty selector: warn, and only record the generation as observed (the Deployment to write
    /// through the status subresource, if observedGeneration is behind).
    SelectingAll {
        observed: Option<Box<Deployment>>,
    },
    Sync(Box<Actions>),
}

/// The whole plan of one sync.
#[derive(Debug)]
pub struct SyncPlan {
    pub owner: Owner,
    pub claims: ClaimPlan<ReplicaSet>,
    pub decision: Decision,
}

/// Why a Deployment cannot be planned for: only a change to the object can fix it. Upstream's sync
/// returns these as errors, logged and retried with backoff, and records no event; so does kcm-rs.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("Deployment {key} has an invalid selector: {source}")]
    InvalidSelector { key: ObjectKey, source: SelectorError },
    #[error("Deployment {key}: {source}")]
    Strategy { key: ObjectKey, source: SizeError },
}

/// Plans one sync: adoption and release, then by priority the status only (being deleted), a paused
/// Deployment's scaling, a rollback, a scaling event, or a rollout step by strategy. The feature
/// gates are Kubernetes 1.36's defaults (see [`plan_sync_with`]).
pub fn plan_sync(input: &SyncInput<'_>) -> Result<SyncPlan, PlanError> {
    plan_sync_with(input, FeatureGates::default())
}

/// [`plan_sync`] under the feature gates `features`.
pub fn plan_sync_with(input: &SyncInput<'_>, features: FeatureGates) -> Result<SyncPlan, PlanError> {
    let d = input.deployment;
    let owner = Owner::of(d);
    if spec::selects_everything(d) {
        let behind = d.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0) < spec::generation(d);
        let observed = behind.then(|| {
            let mut w = d.clone();
            w.status.get_or_insert_with(Default::default).observed_generation = Some(spec::generation(d));
            Box::new(w)
        });
        return Ok(SyncPlan {
            owner,
            claims: ClaimPlan::default(),
            decision: Decision::SelectingAll { observed },
        });
    }
    let matcher =
        LabelMatcher::from_selector(spec::selector(d)).map_err(|source| PlanError::InvalidSelector {
            key: ObjectKey::of(d),
            source,
        })?;
    let claims = plan_claims(&owner, &matcher, input.replica_sets);
    let owned = claims.claimed_in_order(input.replica_sets);
    let strategy_error = |source| PlanError::Strategy {
        key: ObjectKey::of(d),
        source,
    };
    let mut w = Work::new(d, owned, input.now);
    w.features = features;
    steps(&mut w, input).map_err(strategy_error)?;
    let actions = into_actions(w);
    Ok(SyncPlan {
        owner,
        claims,
        decision: Decision::Sync(Box::new(actions)),
    })
}

/// Upstream `syncDeployment` from the deletion check on.
fn steps(w: &mut Work<'_>, input: &SyncInput<'_>) -> Result<(), SizeError> {
    if w.d.metadata.deletion_timestamp.is_some() {
        w.ensure_new(false)?;
        w.sync_deployment_status();
        return Ok(());
    }
    w.check_paused_conditions();
    if spec::paused(&w.d) {
        return sync_scaling(w);
    }
    if let Some(revision) = annotations::rollback_to(&w.d.metadata) {
        return w.rollback(revision);
    }
    w.ensure_new(false)?;
    if w.is_scaling_event() {
        return sync_scaling(w);
    }
    match spec::strategy(&w.d) {
        Strategy::Recreate => w.rollout_recreate(input.pods_of),
        Strategy::RollingUpdate { .. } => w.rollout_rolling(),
        Strategy::Unknown(t) => Err(SizeError::UnknownStrategy(t)),
    }
}

/// Upstream `sync`: proportional scaling, the history cleanup while paused, the status without
/// progress estimation.
fn sync_scaling(w: &mut Work<'_>) -> Result<(), SizeError> {
    w.ensure_new(false)?;
    w.scale_all();
    if spec::paused(&w.d) && annotations::rollback_to(&w.d.metadata).is_none() {
        w.cleanup();
    }
    w.sync_deployment_status();
    Ok(())
}

fn into_actions(w: Work<'_>) -> Actions {
    let mut a = Actions {
        deletes: w.deletes,
        events: w.events,
        requeue_after: w.requeue_after,
        ..Actions::default()
    };
    let mut slots = w.slots;
    // Writes in the order of their first change (unchanged ones last, and unwritten).
    slots.sort_by_key(|s| s.write_order.unwrap_or(usize::MAX));
    for slot in slots {
        if slot.created {
            let rs = slot.modified.unwrap_or_else(|| (*slot.original).clone());
            a.create = Some(RsWrite {
                original: None,
                rs,
                events: slot.events,
                best_effort: false,
            });
        } else if let Some(rs) = slot.modified {
            a.updates.push(RsWrite {
                original: Some(slot.original),
                rs,
                events: slot.events,
                best_effort: slot.best_effort,
            });
        }
    }
    let d = w.d;
    if let Some(events) = w.rollback {
        a.rollback = Some((d.clone(), events));
    }
    let status_changed = !status::same_status(w.original.status.as_ref(), d.status.as_ref())
        || w.original
            .metadata
            .annotations
            .as_ref()
            .and_then(|m| m.get(annotations::REVISION))
            != d.metadata
                .annotations
                .as_ref()
                .and_then(|m| m.get(annotations::REVISION));
    if a.create.is_some() {
        a.before_create = Some(w.original.clone());
    }
    if status_changed && a.rollback.is_none() {
        a.status = Some(d);
    }
    a
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "plan_order_tests.rs"]
mod order_tests;

#[cfg(test)]
#[path = "plan_overflow_tests.rs"]
mod overflow_tests;
