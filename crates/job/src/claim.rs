//! Which pods a Job owns (upstream `getPodsForJob`): its own, the orphans its selector matches (to
//! adopt, with the tracking finalizer), and the pods it must release because they stopped matching.

use controller::compact_pod::Pod;
use std::sync::Arc;

use controller::{Claim, Owner, pod_util::is_deleting, ref_manager::decide};
use informer::{LabelMatcher, SelectorError};
use k8s_openapi::api::batch::v1::Job;

use crate::spec::{JOB_TRACKING_FINALIZER, has_tracking_finalizer};

/// The Job as an owner of pods.
pub fn owner(job: &Job) -> Owner {
    let m = &job.metadata;
    Owner {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        namespace: m.namespace.clone().unwrap_or_default(),
        name: m.name.clone().unwrap_or_default(),
        uid: m.uid.clone().unwrap_or_default(),
        deleting: is_deleting(m),
    }
}

/// The Job's pod selector; an invalid one is an error that only a change to the Job fixes.
pub fn selector(job: &Job) -> Result<LabelMatcher, SelectorError> {
    LabelMatcher::from_selector(job.spec.as_ref().and_then(|s| s.selector.as_ref()))
}

/// Claimed pods, orphans to adopt, pods to release.
pub type Claimed = (Vec<Arc<Pod>>, Vec<Arc<Pod>>, Vec<Arc<Pod>>);

/// Claims candidates (upstream `getPodsForJob`): owned and adopted pods, then the adoptions and
/// releases to write. Adopted pods get the finalizer for the rest of the sync, as the adoption
/// patch adds it.
pub fn claim(owner: &Owner, matcher: &LabelMatcher, candidates: &[Arc<Pod>]) -> Claimed {
    let (mut pods, mut adopt, mut release) = (Vec::new(), Vec::new(), Vec::new());
    for p in candidates {
        let matches = matcher.matches_labels(p.metadata.labels.as_ref());
        match decide(owner, &p.metadata, matches) {
            Claim::Owned => pods.push(p.clone()),
            Claim::Adopt => {
                adopt.push(p.clone());
                let mut with = (**p).clone();
                if !has_tracking_finalizer(&with.metadata) {
                    with.metadata
                        .finalizers
                        .get_or_insert_with(Vec::new)
                        .push(JOB_TRACKING_FINALIZER.into());
                }
                pods.push(Arc::new(with));
            }
            Claim::Release => release.push(p.clone()),
            Claim::Ignore => {}
        }
    }
    (pods, adopt, release)
}
