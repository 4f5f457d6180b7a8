//! Doing, the pod side: adoption and release, creations (slow-start batches, Indexed names) and
//! deletions (surplus and suspension: finalizer removed first; finishing Jobs: finalizer kept until
//! the pod is counted), keeping expectations in step with what was actually written.

use controller::compact_pod::Pod;
use std::sync::Arc;

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
    pub(crate) async fn claim(&self, plan: &SyncPlan) -> Result<(), ControlError> {
        if !plan.adopt.is_empty() {
            self.can_adopt(&plan.owner).await?;
        }
        let owner_ref = plan.owner.controller_ref();
        for p in &plan.adopt {
            let patch = json!({"metadata": {"ownerReferences": [owner_ref], "uid": p.metadata.uid, "finalizers": [JOB_TRACKING_FINALIZER]}});
            match self.patch(p, &patch).await {
                Err(e) if !e.is_not_found() => return Err(e),
                _ => {}
            }
        }
        for p in &plan.release {
            let patch = json!({"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": plan.owner.uid}],
                "uid": p.metadata.uid,
                "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}});
            match self.patch(p, &patch).await {
                Err(e) if !(e.is_not_found() || e.is_invalid()) => return Err(e),
                _ => {}
            }
        }
        Ok(())
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

    pub(crate) async fn patch(&self, p: &Pod, patch: &serde_json::Value) -> Result<(), ControlError> {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        let name = p.metadata.name.as_deref().unwrap_or("");
        self.control.patch_pod(ns, name, patch).await
    }

    /// The pod writes, keeping expectations in step; returns what they achieved and the first error.
    pub(crate) async fn manage(&self, plan: &SyncPlan) -> (ManageOutcome, Option<ControlError>) {
        let key = plan.key.as_str();
        match &plan.action {
            PodAction::None => (ManageOutcome::assumed(&plan.action), None),
            PodAction::DeleteActive(pods) => {
                let results = join_all(pods.iter().map(|p| self.control.delete_pod(&plan.owner, p))).await;
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

    async fn unfinalize_and_delete(&self, plan: &SyncPlan, p: &Pod) -> Result<(), ControlError> {
        let key = plan.key.as_str();
        let mut result = Ok(());
        if has_tracking_finalizer(&p.metadata) {
            result = self.patch(p, &remove_finalizer_patch()).await;
        }
        if result.is_ok() {
            result = self.control.delete_pod(&plan.owner, p).await;
        }
        if result.is_err() {
            // No watch event will come for this deletion.
            self.expectations
                .deletion_observed(key, ObjectKey::of(p).as_str());
        }
        result
    }

    fn deletion_outcome(
        &self,
        pods: &[Arc<Pod>],
        results: Vec<Result<(), ControlError>>,
    ) -> (ManageOutcome, Option<ControlError>) {
        let mut out = ManageOutcome {
            all_deleted: true,
            ..ManageOutcome::default()
        };
        let mut first = None;
        for (p, r) in pods.iter().zip(results) {
            match r {
                Err(e) if !e.is_not_found() => {
                    out.all_deleted = false;
                    first.get_or_insert(e);
                    continue;
                }
                _ => {}
            }
            out.deleted += 1;
            if controller::pod_util::is_ready(p) {
                out.deleted_ready += 1;
            }
        }
        (out, first)
    }

    async fn create(&self, plan: &SyncPlan, c: &Creation) -> (ManageOutcome, Option<ControlError>) {
        let key = plan.key.as_str();
        self.expectations.expect_creations(key, c.count);
        let mut n = 0;
        let (created, err) = slow_start_batch(c.count, || {
            let (template, name) = c.pod(plan, n);
            n += 1;
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
                        Ok(())
                    }
                    // The namespace is going away; no create will ever succeed there.
                    Err(e) if e.is_namespace_terminating() => Ok(()),
                    Err(e) => Err(e),
                }
            }
        })
        .await;
        for _ in created.len()..c.count {
            self.expectations.creation_observed(key);
        }
        let reason = crate::metrics::creation_reason(&plan.job, plan.failed, plan.terminating);
        if !created.is_empty() {
            self.metrics
                .pods_created(reason, crate::metrics::SUCCEEDED, created.len() as u64);
        }
        if err.is_some() {
            self.metrics.pods_created(reason, crate::metrics::FAILED, 1);
        }
        let outcome = ManageOutcome {
            created: crate::spec::len_i32(created.len()),
            all_deleted: true,
            ..ManageOutcome::default()
        };
        (outcome, err)
    }
}
