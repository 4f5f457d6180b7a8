//! Doing: every API call a sync makes, and the events that go with them (upstream's `jobControl`,
//! `cronJobControl` and `deleteJob`). A Job is deleted in the background, as upstream's
//! `realJobControl` does: its pods go after it, through the garbage collector.

use std::sync::Arc;

use controller::{
    ConsistencyStore, ControlError, EventRecorder, Owner, PlannedEvent, object_reference, writes,
};
use informer::ObjectKey;
use k8s_openapi::{
    api::{
        batch::v1::{CronJob, Job},
        core::v1::ObjectReference,
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{DeleteParams, PostParams, PropagationPolicy},
};

use crate::metrics::CronJobMetrics;

pub const REASON_SUCCESSFUL_CREATE: &str = "SuccessfulCreate";
pub const REASON_FAILED_CREATE: &str = "FailedCreate";
pub const REASON_SUCCESSFUL_DELETE: &str = "SuccessfulDelete";
pub const REASON_FAILED_DELETE: &str = "FailedDelete";
pub const REASON_FAILED_GET: &str = "FailedGet";

/// The group-resource under which the consistency store keeps the CronJob status writes.
pub const GR_CRON_JOBS: &str = "cronjobs.batch";

/// The API client, the events and the metric of one controller.
pub struct Executor {
    pub client: Client,
    pub recorder: EventRecorder,
    pub metrics: Arc<dyn CronJobMetrics>,
    /// The resourceVersion of each CronJob's last status write, so that no sync runs on a cached
    /// CronJob older than it.
    pub consistency: ConsistencyStore,
}

impl Executor {
    /// Records `event` on `cron_job`.
    pub fn event(&self, cron_job: &CronJob, event: PlannedEvent) {
        self.recorder.record(
            &object_reference(&Owner::of(cron_job)),
            event.type_,
            event.reason,
            event.message,
        );
    }

    /// Deletes `job` and takes it off `cron_job`'s active list (upstream `deleteJob`): `false`, with
    /// a `FailedDelete` warning, if the API server refused.
    pub async fn delete_job(&self, cron_job: &mut CronJob, job: &Job) -> bool {
        let ns = job.metadata.namespace.as_deref().unwrap_or_default();
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        if let Err(e) = writes::delete::<Job>(&self.client, ns, name, &params).await {
            let e = ControlError::api("delete job", format!("{ns}/{name}"), e);
            tracing::warn!(cronjob = ?cron_job.metadata.name, job = name, "deleting a job: {e}");
            self.event(
                cron_job,
                PlannedEvent::warning(REASON_FAILED_DELETE, format!("Deleted job: {e}")),
            );
            return false;
        }
        if let Some(active) = cron_job.status.as_mut().and_then(|s| s.active.as_mut()) {
            active.retain(|r| r.uid != job.metadata.uid);
        }
        self.event(
            cron_job,
            PlannedEvent::normal(REASON_SUCCESSFUL_DELETE, format!("Deleted job {name}")),
        );
        true
    }

    /// The CronJob as the API server has it now.
    pub async fn get_cron_job(&self, namespace: &str, name: &str) -> Result<CronJob, ControlError> {
        Api::<CronJob>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
            .map_err(|e| ControlError::api("get cronjob", format!("{namespace}/{name}"), e))
    }

    /// The Job as the API server has it now.
    pub async fn get_job(&self, namespace: &str, name: &str) -> Result<Job, ControlError> {
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
            .map_err(|e| ControlError::api("get job", format!("{namespace}/{name}"), e))
    }

    /// Creates `job`, returning it as the API server stored it (its UID, resourceVersion and
    /// creation time go into the active list and the skew metric).
    pub async fn create_job(&self, job: &Job) -> Result<Job, ControlError> {
        let ns = job.metadata.namespace.as_deref().unwrap_or_default();
        Api::<Job>::namespaced(self.client.clone(), ns)
            .create(&PostParams::default(), job)
            .await
            .map_err(|e| {
                let name = job.metadata.name.as_deref().unwrap_or_default();
                ControlError::api("create job", format!("{ns}/{name}"), e)
            })
    }

    /// Records the creation of `job` for the slot `scheduled`: the skew metric and the event.
    pub fn created(&self, cron_job: &CronJob, job: &Job, scheduled: Timestamp) {
        if let Some(created) = &job.metadata.creation_timestamp {
            let skew = created.0.duration_since(scheduled).as_secs_f64();
            self.metrics.job_creation_skew(skew);
        }
        let name = job.metadata.name.as_deref().unwrap_or_default();
        self.event(
            cron_job,
            PlannedEvent::normal(REASON_SUCCESSFUL_CREATE, format!("Created job {name}")),
        );
    }

    /// Writes `cron_job`'s status with a full PUT on the resourceVersion it was read at (upstream
    /// `UpdateStatus`: no retry here, the queue retries the CronJob), and remembers the version it
    /// produced.
    pub async fn write_status(&self, key: &ObjectKey, cron_job: &CronJob) -> Result<(), ControlError> {
        let ns = cron_job.metadata.namespace.as_deref().unwrap_or_default();
        let name = cron_job.metadata.name.as_deref().unwrap_or_default();
        let mut body = cron_job.clone();
        body.metadata.managed_fields = None;
        let written = writes::replace_status(&self.client, ns, name, &body)
            .await
            .map_err(|e| ControlError::api("update status", format!("{ns}/{name}"), e))?;
        let uid = cron_job.metadata.uid.as_deref().unwrap_or_default();
        let rv = written.metadata.resource_version;
        self.consistency
            .wrote_at(key.as_str(), uid, GR_CRON_JOBS, rv.as_deref());
        Ok(())
    }
}

/// The active list's entry for `job` (upstream `ref.GetReference`).
pub fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".to_owned()),
        kind: Some("Job".to_owned()),
        namespace: job.metadata.namespace.clone(),
        name: job.metadata.name.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}
