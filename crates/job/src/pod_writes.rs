//! Doing, the pod side: adoption and release, creations (slow-start batches, Indexed names) and
//! deletions (surplus and suspension: finalizer removed first; finishing Jobs: finalizer kept until
//! the pod is counted), keeping expectations in step with what was actually written.

use controller::compact_pod::Pod;
use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use controller::{ControlError, Owner, PodControl, slow_start::slow_start_batch};
use futures::future::join_all;
use informer::ObjectKey;
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use serde_json::json;

use crate::{
    executor::{Executor, GR_PODS, remove_finalizer_patch},
    manage::{Creation, PodAction},
    plan::SyncPlan,
    spec::{JOB_TRACKING_FINALIZER, has_tracking_finalizer},
    tracking::ManageOutcome,
};

impl<P: PodControl> Executor<P> {
    /// Adopts (adding the finalizer) and releases (removing it), after a fresh read for adoption.
    /// Every claim is tried, as upstream's `ClaimPods`: one refused adoption does not hold back the
    /// others; the first error fails the sync afterwards.
    pub(crate) async fn claim(&self, plan: &SyncPlan) -> Result<(), ControlError> {
        if !plan.adopt.is_empty() {
            self.can_adopt(&plan.owner).await?;
        }
        let owner_ref = plan.owner.controller_ref();
        let mut first = None;
        for p in &plan.adopt {
            let patch = json!({"metadata": {"ownerReferences": [owner_ref], "uid": p.metadata.uid, "finalizers": [JOB_TRACKING_FINALIZER]}});
            match self.patch(&plan.owner, p, &patch).await {
                Err(e) if !e.is_not_found() => {
                    first.get_or_insert(e);
                }
                _ => {}
            }
        }
        for p in &plan.release {
            let patch = json!({"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": plan.owner.uid}],
                "uid": p.metadata.uid,
                "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}});
            match self.patch(&plan.owner, p, &patch).await {
                Err(e) if !(e.is_not_found() || e.is_invalid()) => {
                    first.get_or_insert(e);
                }
                _ => {}
            }
        }
        first.map_or(Ok(()), Err)
    }

    async fn can_adopt(&self, owner: &Owner) -> Result<(), ControlError> {
        let api: Api<Job> = Api::namespaced(self.client.clone(), &owner.namespace);
        let fresh = api
            .get(&owner.name)
            .await
            .map_err(|e| ControlError::api("get job", owner.key(), e))?;
        let refused = |message: String| ControlError::Refused {
            what: format!("adopting pods for Job {}", owner.key()),
            message,
        };
        if fresh.metadata.uid.as_deref() != Some(owner.uid.as_str()) {
            return Err(refused(format!(
                "original Job {} is gone: got uid {}, wanted {}",
                owner.key(),
                fresh.metadata.uid.unwrap_or_default(),
                owner.uid
            )));
        }
        if fresh.metadata.deletion_timestamp.is_some() {
            return Err(refused(format!("Job {} has just been deleted", owner.key())));
        }
        Ok(())
    }

    /// A patch of one of `owner`'s pods. Its resourceVersion goes to the consistency store, as
    /// upstream's `PatchPod` hands it to `OnWrite`: the next sync waits until the pod cache shows
    /// the adoption or the finalizer's removal instead of acting on the pod as it was.
    pub(crate) async fn patch(
        &self,
        owner: &Owner,
        p: &Pod,
        patch: &serde_json::Value,
    ) -> Result<(), ControlError> {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        let name = p.metadata.name.as_deref().unwrap_or("");
        let written = self.control.patch_pod_returning(ns, name, patch).await?;
        if let Some(w) = written {
            let rv = w.metadata.resource_version.as_deref();
            self.consistency.wrote_at(&owner.key(), &owner.uid, GR_PODS, rv);
        }
        Ok(())
    }

    /// The pod writes, keeping expectations in step; returns what they achieved and the first error.
    pub(crate) async fn manage(&self, plan: &SyncPlan) -> (ManageOutcome, Option<ControlError>) {
        let key = plan.key.as_str();
        match &plan.action {
            PodAction::None => (ManageOutcome::assumed(&plan.action), None),
            PodAction::DeleteActive(pods) => {
                let deletes = pods.iter().map(|p| async {
                    let r = self.control.delete_pod(&plan.owner, p).await;
                    (r, true)
                });
                let results = join_all(deletes).await;
                self.deletion_outcome(pods, results)
            }
            PodAction::Delete(pods) => {
                self.expectations
                    .expect_deletions(key, pods.iter().map(|p| ObjectKey::of(&**p).to_string()));
                let results = join_all(pods.iter().map(|p| self.unfinalize_and_delete(plan, p))).await;
                self.deletion_outcome(pods, results)
            }
            PodAction::Create(c) => self.create(plan, c).await,
        }
    }

    /// Removes the finalizer, then deletes. Returns the result and whether the DELETE was sent.
    async fn unfinalize_and_delete(&self, plan: &SyncPlan, p: &Pod) -> (Result<(), ControlError>, bool) {
        let key = plan.key.as_str();
        let mut result = Ok(());
        if has_tracking_finalizer(&p.metadata) {
            result = self.patch(&plan.owner, p, &remove_finalizer_patch()).await;
        }
        let sent = result.is_ok();
        if sent {
            result = self.control.delete_pod(&plan.owner, p).await;
        }
        if result.is_err() {
            // No watch event will come for this deletion.
            self.expectations
                .deletion_observed(key, ObjectKey::of(p).as_str());
        }
        (result, sent)
    }

    /// A delete counts unless it failed with an error other than NotFound. A ready pod leaves the
    /// `ready` count once its DELETE was sent, whatever the answer, as upstream counts it (only a
    /// failed finalizer removal, which stops before the DELETE, keeps it).
    fn deletion_outcome(
        &self,
        pods: &[Arc<Pod>],
        results: Vec<(Result<(), ControlError>, bool)>,
    ) -> (ManageOutcome, Option<ControlError>) {
        let mut out = ManageOutcome {
            all_deleted: true,
            ..ManageOutcome::default()
        };
        let mut first = None;
        for (p, (r, sent)) in pods.iter().zip(results) {
            if sent && controller::pod_util::is_ready(p) {
                out.deleted_ready += 1;
            }
            match r {
                Err(e) if !e.is_not_found() => {
                    out.all_deleted = false;
                    first.get_or_insert(e);
                }
                _ => out.deleted += 1,
            }
        }
        (out, first)
    }

    async fn create(&self, plan: &SyncPlan, c: &Creation) -> (ManageOutcome, Option<ControlError>) {
        let key = plan.key.as_str();
        self.expectations.expect_creations(key, c.count);
        let mut n = 0;
        let failed = AtomicU64::new(0);
        let (created, err) = slow_start_batch(c.count, || {
            let (template, name) = c.pod(plan, n);
            n += 1;
            let failed = &failed;
            async move {
                let r = match &name {
                    Some(g) => {
                        self.control
                            .create_pod_with_generate_name(&plan.owner, &template, g)
                            .await
                    }
                    None => self.control.create_pod(&plan.owner, &template).await,
                };
                match r {
                    Ok(pod) => {
                        let rv = pod.metadata.resource_version.as_deref();
                        self.consistency.wrote_at(key, &plan.owner.uid, GR_PODS, rv);
                        Ok(Attempt::Created)
                    }
                    // The namespace is going away; no create will ever succeed there.
                    Err(e) if e.is_namespace_terminating() => Ok(Attempt::NamespaceTerminating),
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        Err(e)
                    }
                }
            }
        })
        .await;
        for _ in created.len()..c.count {
            self.expectations.creation_observed(key);
        }
        // Counted as upstream's `job_pods_creation_total` counts: every attempt the namespace did
        // not refuse for terminating is "succeeded", failed ones included; "failed" counts failures.
        let failed = failed.into_inner();
        let attempted = created.iter().filter(|a| **a == Attempt::Created).count() as u64 + failed;
        let reason = crate::metrics::creation_reason(&plan.job, plan.failed, plan.terminating);
        if attempted > 0 {
            self.metrics
                .pods_created(reason, crate::metrics::SUCCEEDED, attempted);
        }
        if failed > 0 {
            self.metrics.pods_created(reason, crate::metrics::FAILED, failed);
        }
        let outcome = ManageOutcome {
            created: crate::spec::len_i32(created.len()),
            all_deleted: true,
            ..ManageOutcome::default()
        };
        (outcome, err)
    }
}

/// What one create call came to, short of an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    Created,
    /// Refused because the namespace is terminating: counted as created (no event will come, and
    /// no create will ever succeed there), as upstream does.
    NamespaceTerminating,
}
