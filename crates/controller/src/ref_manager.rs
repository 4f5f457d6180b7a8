//! Controller references: which candidate objects a controller claims, adopts, releases or leaves
//! alone (upstream `controller_ref_manager.go`). Decisions are pure; [`crate::claim`] executes them.
//!
//! This is how a ReplicaSet, a Job and a hand-made pod with overlapping labels coexist: an object
//! controlled by someone else is never touched, an orphan is adopted only if the selector matches and
//! neither side is being deleted, and an owned object whose labels stopped matching is released.

use std::sync::Arc;

use informer::LabelMatcher;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use serde_json::{Value, json};

use crate::pod_util::{controller_of, is_deleting};

/// What to do with one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Ours and matching: counts as ours.
    Owned,
    /// An orphan that matches: adopt it (after checking that the owner is not being deleted).
    Adopt,
    /// Ours but no longer matching: remove our controller reference.
    Release,
    /// Someone else's, or not for us: leave it alone.
    Ignore,
}

/// The owner doing the claiming.
#[derive(Debug, Clone)]
pub struct Owner {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The version the sync read, which the events on it name as client-go's `GetReference` does;
    /// empty when unknown.
    pub resource_version: String,
    /// The owner has a deletionTimestamp: it adopts and releases nothing.
    pub deleting: bool,
}

impl Owner {
    /// The controller reference new and adopted objects get.
    pub fn controller_ref(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Decides for one candidate whose labels `matches` (or not) the owner's selector.
pub fn decide(owner: &Owner, candidate: &ObjectMeta, matches: bool) -> Claim {
    if candidate.namespace.as_deref() != Some(owner.namespace.as_str()) {
        return Claim::Ignore;
    }
    match controller_of(candidate) {
        Some(r) if r.uid != owner.uid => Claim::Ignore,
        Some(_) if matches => Claim::Owned,
        Some(_) if owner.deleting => Claim::Ignore,
        Some(_) => Claim::Release,
        None if owner.deleting || !matches || is_deleting(candidate) => Claim::Ignore,
        None => Claim::Adopt,
    }
}

/// An owner's claims over its candidates, before any write (upstream `ClaimObject` over each).
#[derive(Debug)]
pub struct ClaimPlan<K> {
    /// Controlled by the owner and matching its selector.
    pub owned: Vec<Arc<K>>,
    /// Orphans that match: adopted before anything else is done.
    pub adopt: Vec<Arc<K>>,
    /// Controlled by the owner but no longer matching: released.
    pub release: Vec<Arc<K>>,
}

impl<K> Clone for ClaimPlan<K> {
    fn clone(&self) -> Self {
        Self {
            owned: self.owned.clone(),
            adopt: self.adopt.clone(),
            release: self.release.clone(),
        }
    }
}

impl<K> Default for ClaimPlan<K> {
    fn default() -> Self {
        Self {
            owned: Vec::new(),
            adopt: Vec::new(),
            release: Vec::new(),
        }
    }
}

impl<K> ClaimPlan<K> {
    /// What the owner controls once every adoption has succeeded: the plan is made as if they will.
    pub fn claimed(&self) -> Vec<Arc<K>> {
        self.owned.iter().chain(&self.adopt).cloned().collect()
    }

    /// [`Self::claimed`] in the candidates' order, as upstream's `ClaimObject` loop returns them.
    pub fn claimed_in_order(&self, candidates: &[Arc<K>]) -> Vec<Arc<K>> {
        // By address: the plan holds the candidates' own Arcs, in the candidates' order when it was
        // planned from these candidates, so one merge pass finds them (a Job's thousands of pods
        // make a scan of the plan per candidate quadratic, and a hash set costs a tenth of a sync).
        let (mut owned, mut adopt) = (self.owned.iter().peekable(), self.adopt.iter().peekable());
        let mut out = Vec::with_capacity(self.owned.len() + self.adopt.len());
        for c in candidates {
            if owned.next_if(|o| Arc::ptr_eq(o, c)).is_some()
                || adopt.next_if(|a| Arc::ptr_eq(a, c)).is_some()
            {
                out.push(c.clone());
            }
        }
        if out.len() == self.owned.len() + self.adopt.len() {
            return out;
        }
        // Planned from other candidates, or in another order: look each one up.
        let ours: ahash::HashSet<*const K> = self.owned.iter().chain(&self.adopt).map(Arc::as_ptr).collect();
        candidates
            .iter()
            .filter(|c| ours.contains(&Arc::as_ptr(c)))
            .cloned()
            .collect()
    }
}

/// Decides for every candidate by its labels against the owner's selector.
pub fn plan_claims<'a, K: Resource + 'a>(
    owner: &Owner,
    matcher: &LabelMatcher,
    candidates: impl IntoIterator<Item = &'a Arc<K>>,
) -> ClaimPlan<K> {
    let mut plan = ClaimPlan::default();
    for c in candidates {
        let meta = c.meta();
        let matches = matcher.matches_labels(meta.labels.as_ref());
        match decide(owner, meta, matches) {
            Claim::Owned => plan.owned.push(c.clone()),
            Claim::Adopt => plan.adopt.push(c.clone()),
            Claim::Release => plan.release.push(c.clone()),
            Claim::Ignore => {}
        }
    }
    plan
}

/// Strategic-merge patch adding the owner as controller (merged by uid, so an existing non-controller
/// reference to the owner is upgraded), guarded by the candidate's UID.
pub fn adopt_patch(owner: &Owner, candidate_uid: &str) -> Value {
    json!({"metadata": {"ownerReferences": [owner.controller_ref()], "uid": candidate_uid}})
}

/// Strategic-merge patch deleting the owner's reference, guarded by the candidate's UID.
pub fn release_patch(owner_uid: &str, candidate_uid: &str) -> Value {
    json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}], "uid": candidate_uid}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;

    fn owner(deleting: bool) -> Owner {
        Owner {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            namespace: "ns".into(),
            name: "rs".into(),
            uid: "rs-uid".into(),
            resource_version: String::new(),
            deleting,
        }
    }

    #[test]
    fn claim_table() {
        let ours = pod("a").owner("ReplicaSet", "rs", "rs-uid").build().metadata;
        let theirs = pod("b")
            .owner("ReplicaSet", "other", "other-uid")
            .build()
            .metadata;
        let orphan = pod("c").build().metadata;
        let deleting_orphan = pod("d").deleting().build().metadata;
        let (live, dying) = (owner(false), owner(true));
        assert_eq!(decide(&live, &ours, true), Claim::Owned);
        assert_eq!(
            decide(&dying, &ours, true),
            Claim::Owned,
            "still ours while being deleted"
        );
        assert_eq!(decide(&live, &ours, false), Claim::Release);
        assert_eq!(decide(&dying, &ours, false), Claim::Ignore);
        assert_eq!(decide(&live, &theirs, true), Claim::Ignore, "never steal");
        assert_eq!(decide(&live, &orphan, true), Claim::Adopt);
        assert_eq!(decide(&live, &orphan, false), Claim::Ignore);
        assert_eq!(decide(&dying, &orphan, true), Claim::Ignore);
        assert_eq!(decide(&live, &deleting_orphan, true), Claim::Ignore);
        let mut elsewhere = orphan.clone();
        elsewhere.namespace = Some("other".into());
        assert_eq!(decide(&live, &elsewhere, true), Claim::Ignore);
    }

    /// Owned and adopted pods come back in the candidates' order, also when asked with the
    /// candidates in another order than they were planned in.
    #[test]
    fn claimed_pods_keep_the_candidates_order() {
        let candidates: Vec<Arc<crate::CompactPod>> = vec![
            Arc::new(pod("orphan-1").label("app", "web").build()),
            Arc::new(
                pod("ours")
                    .label("app", "web")
                    .owner("ReplicaSet", "rs", "rs-uid")
                    .build(),
            ),
            Arc::new(
                pod("theirs")
                    .label("app", "web")
                    .owner("ReplicaSet", "x", "x-uid")
                    .build(),
            ),
            Arc::new(pod("orphan-2").label("app", "web").build()),
        ];
        let selector = k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
            ..Default::default()
        };
        let matcher = LabelMatcher::from_selector(Some(&selector)).unwrap();
        let plan = plan_claims(&owner(false), &matcher, &candidates);
        let names = |pods: Vec<Arc<crate::CompactPod>>| -> Vec<String> {
            pods.iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        assert_eq!(
            names(plan.claimed_in_order(&candidates)),
            ["orphan-1", "ours", "orphan-2"]
        );
        let reversed: Vec<Arc<crate::CompactPod>> = candidates.iter().rev().cloned().collect();
        assert_eq!(
            names(plan.claimed_in_order(&reversed)),
            ["orphan-2", "ours", "orphan-1"]
        );
    }

    #[test]
    fn patches_carry_the_uid_precondition() {
        let p = adopt_patch(&owner(false), "pod-uid");
        assert_eq!(p["metadata"]["uid"], "pod-uid");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(p["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
        let r = release_patch("rs-uid", "pod-uid");
        assert_eq!(r["metadata"]["ownerReferences"][0]["$patch"], "delete");
    }
}
