//! The order of one sync, written once for every controller. Upstream writes it again in each
//! `syncX` (and controller-runtime leaves it to each reconciler); here a controller supplies the
//! steps ([`Steps`]) and [`sync`] runs them in the one order:
//!
//! 1. read one's own writes (the stale gate): no sync, not even the forgetting of a deleted object,
//!    while a cache is older than what this controller wrote for the key (upstream's ReplicaSet and
//!    Job controllers check before they read the object). Such a skip is an error, retried with
//!    backoff, or, where a stale cache comes with ordinary work, a quiet recheck ([`Freshness`]);
//! 2. take the cached object, or forget everything kept for a key whose object is gone;
//! 3. decide on what the listers show: the candidates, the claims as data, the plan;
//! 4. in shadow mode compare the plan with what upstream did; otherwise adopt and release what it
//!    claims, plan again without any orphan found deleted when adopted (upstream's claim leaves such
//!    an orphan out of what it returns, and the sync goes on with what was claimed), and carry it out.
//!
//! The key enters once and is handed to every step: none rebuilds it from the object.

use std::{future::Future, sync::Arc, time::Duration};

use informer::ObjectKey;

use crate::{shadow::ShadowState, worker::Reconciler};

/// What a controller decided for one object.
#[derive(Debug)]
pub enum Decided<P> {
    /// A plan: carried out, or in shadow mode compared.
    Plan(P),
    /// Nothing to do, in either mode; the sync asks for the key again after the duration, if any.
    Nothing(Option<Duration>),
    /// The object is another controller's to sync (a Job's `spec.managedBy`): nothing to do, and
    /// shadow mode holds nothing against it.
    NotOurs,
}

/// Whether the caches hold this controller's own writes for a key ([`Steps::ensure_fresh`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// They do: the sync goes on.
    Fresh,
    /// Not yet, as is usual right after a write (the write's own event wakes the key again): the
    /// sync ends without an error and asks for the key after the duration, should that event be
    /// missed.
    Recheck(Duration),
}

/// What shadow mode holds against upstream for one sync.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Of what the decision was made from; a disagreement stands until it changes or settles.
    pub fingerprint: u64,
    /// What kcm-rs would do or write that upstream did not, one line each.
    pub differences: Vec<String>,
    /// A wake-up the decision asks for whatever the comparison finds (a schedule's next slot).
    pub again: Option<Duration>,
}

/// The steps of one controller's sync, run in order by [`sync`].
pub trait Steps: Send + Sync + 'static {
    /// KCM's name for the controller, under which shadow mode files what it finds.
    const NAME: &'static str;
    /// [`Reconciler::FORGETS_WHEN_DONE`].
    const FORGETS_WHEN_DONE: bool = true;
    /// [`Reconciler::FORGETS_WHEN_REQUEUED`].
    const FORGETS_WHEN_REQUEUED: bool = true;

    /// The object a key names.
    type Object: Send + Sync + 'static;
    /// What [`Self::decide`] hands to [`Self::execute`] or [`Self::compare`]: it owns what it was
    /// decided from.
    type Plan: Send;
    type Error: std::fmt::Display + Send;

    /// `Err` or [`Freshness::Recheck`] while a cache is older than what this controller wrote for
    /// `key`. Default: the controller reads nothing it wrote before deciding again.
    fn ensure_fresh(&self, key: &ObjectKey) -> Result<Freshness, Self::Error> {
        let _ = key;
        Ok(Freshness::Fresh)
    }

    /// The cached object at `key`, as the sync sees it (shadow mode's perturbations apply here).
    fn get(&self, key: &ObjectKey) -> Option<Arc<Self::Object>>;

    /// Drops what is kept for `key` (expectations, backoff, written versions); its object is gone.
    /// Shadow mode's record of it is dropped by [`sync`].
    fn forget(&self, key: &ObjectKey) {
        let _ = key;
    }

    /// The read-only state of shadow mode; `None` in a controller that writes.
    fn shadow(&self) -> Option<&ShadowState>;

    /// The client shadow mode asks whether a namespace is being deleted.
    fn client(&self) -> &kube::Client;

    /// The decision from the listers: the candidates, the claims as data, the plan. A plan that
    /// cannot be made is told here (an event, a log) and ends as [`Decided::Nothing`], or is an
    /// error to retry.
    fn decide(&self, key: &ObjectKey, object: Arc<Self::Object>) -> Result<Decided<Self::Plan>, Self::Error>;

    /// Shadow mode: what the plan would do against what upstream did.
    fn compare(&self, key: &ObjectKey, plan: Self::Plan) -> Comparison;

    /// Adopts and releases what the plan claims (upstream `ClaimPods`, `ClaimReplicaSets`), before
    /// anything else is written: the UIDs of the orphans found deleted when adopted. Default: the
    /// controller claims nothing.
    fn claim(
        &self,
        key: &ObjectKey,
        plan: &Self::Plan,
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send {
        let _ = (key, plan);
        async { Ok(Vec::new()) }
    }

    /// The plan made again without the orphans `gone` (their UIDs), which it counted as adopted.
    fn without(
        &self,
        key: &ObjectKey,
        plan: Self::Plan,
        gone: &[String],
    ) -> Result<Decided<Self::Plan>, Self::Error> {
        let _ = (key, gone);
        Ok(Decided::Plan(plan))
    }

    /// Carries out the plan's writes (its claims are made).
    fn execute(
        &self,
        key: &ObjectKey,
        plan: Self::Plan,
    ) -> impl Future<Output = Result<Option<Duration>, Self::Error>> + Send;
}

/// One sync of the object at `key`, in the order the module describes. `Ok(Some(d))` asks for the
/// key again after `d`.
pub async fn sync<S: Steps>(steps: &S, key: &ObjectKey) -> Result<Option<Duration>, S::Error> {
    if let Freshness::Recheck(after) = steps.ensure_fresh(key)? {
        return Ok(Some(after));
    }
    let Some(object) = steps.get(key) else {
        steps.forget(key);
        forget_shadow(steps, key);
        return Ok(None);
    };
    let plan = match steps.decide(key, object)? {
        Decided::Plan(plan) => plan,
        Decided::Nothing(again) => return Ok(again),
        Decided::NotOurs => {
            forget_shadow(steps, key);
            return Ok(None);
        }
    };
    let Some(state) = steps.shadow() else {
        return claim_and_execute(steps, key, plan).await;
    };
    let Comparison {
        fingerprint,
        differences,
        again,
    } = steps.compare(key, plan);
    let settle = state
        .observe_sync(steps.client(), S::NAME, key, fingerprint, differences)
        .await;
    Ok(match (again, settle) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// Every controller's sync is its steps in [`sync`]'s order.
impl<S: Steps> Reconciler for S {
    type Error = S::Error;
    const FORGETS_WHEN_DONE: bool = S::FORGETS_WHEN_DONE;
    const FORGETS_WHEN_REQUEUED: bool = S::FORGETS_WHEN_REQUEUED;

    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<Option<Duration>, S::Error>> + Send {
        sync(self, key)
    }
}

async fn claim_and_execute<S: Steps>(
    steps: &S,
    key: &ObjectKey,
    plan: S::Plan,
) -> Result<Option<Duration>, S::Error> {
    let gone = steps.claim(key, &plan).await?;
    let plan = if gone.is_empty() {
        plan
    } else {
        tracing::debug!(object = %key, gone = gone.len(), "orphans deleted before they could be adopted");
        match steps.without(key, plan, &gone)? {
            Decided::Plan(plan) => plan,
            Decided::Nothing(again) => return Ok(again),
            Decided::NotOurs => return Ok(None),
        }
    };
    steps.execute(key, plan).await
}

fn forget_shadow<S: Steps>(steps: &S, key: &ObjectKey) {
    if let Some(state) = steps.shadow() {
        state.forget(S::NAME, key.as_str());
    }
}

#[cfg(test)]
#[path = "steps_tests.rs"]
mod tests;
