//! The Job controller's metrics with upstream's names and labels (`pkg/controller/job/metrics`,
//! subsystem `job_controller`), reported through a trait with no-op defaults: this crate reports, the
//! binary decides where figures go (as `controller::SyncMetrics`, which carries the stale-sync skips).

use std::time::Duration;

/// `action` label values of the sync metrics (upstream `JobSyncAction*`).
pub const ACTION_RECONCILING: &str = "reconciling";
pub const ACTION_TRACKING: &str = "tracking";
pub const ACTION_PODS_CREATED: &str = "pods_created";
pub const ACTION_PODS_DELETED: &str = "pods_deleted";

/// `reason` label values of `job_pods_creation_total` (upstream `PodCreateNew`, ...).
pub const CREATE_NEW: &str = "new";
pub const CREATE_RECREATE_TERMINATING_OR_FAILED: &str = "recreate_terminating_or_failed";
pub const CREATE_RECREATE_FAILED: &str = "recreate_failed";

/// `result`/`status` label values.
pub const SUCCEEDED: &str = "succeeded";
pub const FAILED: &str = "failed";

/// `event` label values of `terminated_pods_tracking_finalizer_total`.
pub const EVENT_ADD: &str = "add";
pub const EVENT_DELETE: &str = "delete";

/// Every metric upstream's Job controller exports. Names are given in each method's doc.
pub trait JobMetrics: Send + Sync + 'static {
    /// `job_controller_job_sync_duration_seconds{completion_mode,result,action}` (histogram) and
    /// `job_controller_job_syncs_total{completion_mode,result,action}`.
    fn job_sync(&self, completion_mode: &str, result: &str, action: &str, elapsed: Duration) {
        let _ = (completion_mode, result, action, elapsed);
    }
    /// `job_controller_jobs_finished_total{completion_mode,result,reason}`.
    fn job_finished(&self, completion_mode: &str, result: &str, reason: &str) {
        let _ = (completion_mode, result, reason);
    }
    /// `job_controller_job_pods_finished_total{completion_mode,result}`.
    fn pods_finished(&self, completion_mode: &str, result: &str, n: u64) {
        let _ = (completion_mode, result, n);
    }
    /// `job_controller_pod_failures_handled_by_failure_policy_total{action}`.
    fn pod_failures_handled_by_policy(&self, action: &str, n: u64) {
        let _ = (action, n);
    }
    /// `job_controller_terminated_pods_tracking_finalizer_total{event}`.
    fn terminated_pod_tracking_finalizer(&self, event: &str) {
        let _ = event;
    }
    /// `job_controller_job_finished_indexes_total{status,backoffLimit}`.
    fn finished_indexes(&self, status: &str, backoff_limit: &str, n: u64) {
        let _ = (status, backoff_limit, n);
    }
    /// `job_controller_job_pods_creation_total{reason,status}`.
    fn pods_created(&self, reason: &str, status: &str, n: u64) {
        let _ = (reason, status, n);
    }
    /// `job_controller_jobs_by_external_controller_total{controller_name}`.
    fn job_by_external_controller(&self, controller_name: &str) {
        let _ = controller_name;
    }
}

/// Discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJobMetrics;

impl JobMetrics for NoJobMetrics {}

/// The `reason` of `job_pods_creation_total` for this sync's creations (upstream
/// `recordJobPodsCreationTotal`).
pub fn creation_reason(
    job: &k8s_openapi::api::batch::v1::Job,
    failed: i32,
    terminating: i32,
) -> &'static str {
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_replacement_policy.as_deref());
    if policy == Some(crate::spec::REPLACE_FAILED) && failed > 0 {
        CREATE_RECREATE_FAILED
    } else if failed > 0 || terminating > 0 {
        CREATE_RECREATE_TERMINATING_OR_FAILED
    } else {
        CREATE_NEW
    }
}

/// `job_pods_finished_total` and `job_finished_indexes_total` for a status change from `old` to
/// `new` (upstream `recordJobPodFinished`).
pub fn record_pods_finished(
    m: &dyn JobMetrics,
    job: &k8s_openapi::api::batch::v1::Job,
    old: &k8s_openapi::api::batch::v1::JobStatus,
    new: &k8s_openapi::api::batch::v1::JobStatus,
) {
    use crate::{intervals::OrderedIntervals, spec};
    let mode = spec::completion_mode_label(job);
    let delta = |a: i32, b: i32| u64::try_from(b - a).unwrap_or(0);
    let succeeded = if spec::is_indexed(job) {
        let c = spec::indexed_completions(job);
        let count = |s: Option<&String>| s.map_or(0, |s| OrderedIntervals::parse(s, c).total());
        // A string that did not change adds nothing: parse only a changed one (an Indexed Job with
        // many completions can carry a fragmented string of hundreds of kilobytes), as upstream.
        let added = |a: Option<&String>, b: Option<&String>| {
            if a == b { 0 } else { delta(count(a), count(b)) }
        };
        let label = if spec::backoff_limit_per_index(job).is_some() {
            "perIndex"
        } else {
            "global"
        };
        let d = added(old.completed_indexes.as_ref(), new.completed_indexes.as_ref());
        m.finished_indexes(SUCCEEDED, label, d);
        if spec::backoff_limit_per_index(job).is_some() {
            let f = added(old.failed_indexes.as_ref(), new.failed_indexes.as_ref());
            if f > 0 {
                m.finished_indexes(FAILED, label, f);
            }
        }
        d
    } else {
        delta(old.succeeded.unwrap_or(0), new.succeeded.unwrap_or(0))
    };
    m.pods_finished(mode, SUCCEEDED, succeeded);
    m.pods_finished(
        mode,
        FAILED,
        delta(old.failed.unwrap_or(0), new.failed.unwrap_or(0)),
    );
}
