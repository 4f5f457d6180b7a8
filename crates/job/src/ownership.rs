//! Which pods a Job owns (upstream `getPodsForJob`): its own, the orphans its selector matches (to
//! adopt, with the tracking finalizer), and the pods it must release because they stopped matching.
//! Only the decision; the executor writes the adoptions and releases.

use controller::compact_pod::Pod;
use std::sync::Arc;

use controller::{ClaimPlan, Owner, plan_claims};
use informer::{LabelMatcher, SelectorError};
use k8s_openapi::api::batch::v1::Job;

use crate::spec::{JOB_TRACKING_FINALIZER, has_tracking_finalizer};

/// The Job's pod selector; an invalid one is an error that only a change to the Job fixes.
pub(crate) fn selector(job: &Job) -> Result<LabelMatcher, SelectorError> {
    LabelMatcher::from_selector(job.spec.as_ref().and_then(|s| s.selector.as_ref()))
}

/// The candidates sorted out for one sync.
#[derive(Debug)]
pub(crate) struct Ownership {
    /// The pods the rest of the sync works on, in the candidates' order: owned ones and the
    /// orphans being adopted, shown with the finalizer the adoption patch adds.
    pub(crate) pods: Vec<Arc<Pod>>,
    /// What the executor adopts and releases before anything else.
    pub(crate) claims: ClaimPlan<Pod>,
}

/// Sorts the candidates out (upstream `getPodsForJob`, the decision half of `ClaimPods`).
pub(crate) fn ownership(owner: &Owner, matcher: &LabelMatcher, candidates: &[Arc<Pod>]) -> Ownership {
    let claims = plan_claims(owner, matcher, candidates);
    let pods = claims
        .claimed_in_order(candidates)
        .into_iter()
        .map(|p| {
            let adopting = claims.adopt.iter().any(|a| Arc::ptr_eq(a, &p));
            if adopting && !has_tracking_finalizer(&p.metadata) {
                let mut with = (*p).clone();
                with.metadata
                    .finalizers
                    .get_or_insert_with(Vec::new)
                    .push(JOB_TRACKING_FINALIZER.into());
                Arc::new(with)
            } else {
                p
            }
        })
        .collect();
    Ownership { pods, claims }
}
