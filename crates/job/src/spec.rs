//! Reading a Job's spec and pods the way upstream's helpers do, with the API's defaults applied
//! where the object may not carry them (objects built in tests, older stored objects).

use controller::compact_pod::Pod;
use k8s_openapi::{
    api::batch::v1::{Job, JobCondition},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

use crate::intervals::OrderedIntervals;

/// The finalizer that keeps a finished pod until its Job has counted it (`batch.JobTrackingFinalizer`).
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// Annotation and label holding a pod's completion index (`batch.JobCompletionIndexAnnotation`).
pub(crate) const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Counted failures of an index so far, on the pod that retries it (`batch.JobIndexFailureCountAnnotation`).
pub(crate) const INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// Failures of an index that the pod failure policy ignored (`batch.JobIndexIgnoredFailureCountAnnotation`).
pub(crate) const INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";
/// The `spec.managedBy` value meaning "this controller" (`batch.JobControllerName`).
pub(crate) const JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";
/// `spec.backoffLimit` when unset (the API default, `pkg/apis/batch/v1/defaults.go`).
pub(crate) const DEFAULT_BACKOFF_LIMIT: i32 = 6;
/// `spec.parallelism` when unset (the API default).
pub(crate) const DEFAULT_PARALLELISM: i32 = 1;

pub(crate) const MODE_NON_INDEXED: &str = "NonIndexed";
pub(crate) const MODE_INDEXED: &str = "Indexed";
pub(crate) const REPLACE_FAILED: &str = "Failed";

pub(crate) fn is_indexed(job: &Job) -> bool {
    completion_mode(job) == Some(MODE_INDEXED)
}

/// `spec.completionMode` as written; `None` means NonIndexed.
pub(crate) fn completion_mode(job: &Job) -> Option<&str> {
    job.spec.as_ref()?.completion_mode.as_deref()
}

/// The completion-mode label of the metrics (upstream `getCompletionMode`).
pub(crate) fn completion_mode_label(job: &Job) -> &'static str {
    if is_indexed(job) {
        MODE_INDEXED
    } else {
        MODE_NON_INDEXED
    }
}

pub(crate) fn completions(job: &Job) -> Option<i32> {
    job.spec.as_ref()?.completions
}

/// Completions of an Indexed Job (the API requires it there); 0 if absent.
pub(crate) fn indexed_completions(job: &Job) -> i32 {
    completions(job).unwrap_or(0)
}

pub(crate) fn parallelism(job: &Job) -> i32 {
    job.spec
        .as_ref()
        .and_then(|s| s.parallelism)
        .unwrap_or(DEFAULT_PARALLELISM)
}

/// `spec.backoffLimit`; with backoffLimitPerIndex the API defaults it to the largest int32.
pub(crate) fn backoff_limit(job: &Job) -> i32 {
    let spec = job.spec.as_ref();
    match spec.and_then(|s| s.backoff_limit) {
        Some(l) => l,
        None if backoff_limit_per_index(job).is_some() => i32::MAX,
        None => DEFAULT_BACKOFF_LIMIT,
    }
}

pub(crate) fn backoff_limit_per_index(job: &Job) -> Option<i32> {
    if !is_indexed(job) {
        return None;
    }
    job.spec.as_ref()?.backoff_limit_per_index
}

pub(crate) fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// The external controller named in `spec.managedBy`, if it is not this one.
pub(crate) fn managed_by_external(job: &Job) -> Option<&str> {
    job.spec
        .as_ref()?
        .managed_by
        .as_deref()
        .filter(|m| *m != JOB_CONTROLLER_NAME)
}

pub(crate) fn has_pod_failure_policy(job: &Job) -> bool {
    job.spec.as_ref().is_some_and(|s| s.pod_failure_policy.is_some())
}

/// Pods are replaced only once Failed, not while terminating: `podReplacementPolicy: Failed`, which a
/// pod failure policy implies (upstream `onlyReplaceFailedPods`).
pub(crate) fn only_replace_failed(job: &Job) -> bool {
    let spec = job.spec.as_ref();
    spec.and_then(|s| s.pod_replacement_policy.as_deref()) == Some(REPLACE_FAILED)
        || has_pod_failure_policy(job)
}

pub(crate) fn conditions(job: &Job) -> &[JobCondition] {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

pub(crate) fn find_condition<'a>(conditions: &'a [JobCondition], type_: &str) -> Option<&'a JobCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Complete or Failed with status True (upstream `IsJobFinished`).
pub(crate) fn is_finished(job: &Job) -> bool {
    conditions(job)
        .iter()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

pub(crate) fn has_tracking_finalizer(meta: &ObjectMeta) -> bool {
    meta.finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING_FINALIZER))
}

pub(crate) fn phase(pod: &Pod) -> &str {
    controller::pod_util::phase(pod)
}

/// Whether a pod counts as failed: phase Failed or, unless only failed pods are replaced, deleted
/// before it succeeded (orphaned pods may never reach Failed; upstream `isPodFailed`).
pub(crate) fn is_pod_failed(pod: &Pod, job: &Job) -> bool {
    if phase(pod) == "Failed" {
        return true;
    }
    if only_replace_failed(job) {
        return false;
    }
    pod.metadata.deletion_timestamp.is_some() && phase(pod) != "Succeeded"
}

/// A pod's completion index from its annotation; `None` when missing, not a number or negative
/// (upstream `getCompletionIndex`).
pub(crate) fn completion_index(pod: &Pod) -> Option<i32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(COMPLETION_INDEX_ANNOTATION)?
        .parse::<i32>()
        .ok()
        .filter(|i| *i >= 0)
}

/// The index of a pod if it is valid for a Job with `completions`.
pub(crate) fn valid_index(pod: &Pod, completions: i32) -> Option<i32> {
    completion_index(pod).filter(|i| *i < completions)
}

/// A non-negative int32 annotation; 0 when missing or invalid (upstream `parseInt32`).
pub(crate) fn annotation_count(pod: &Pod, key: &str) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|v| i32::try_from(v).ok())
        .filter(|v| *v >= 0)
        .unwrap_or(0)
}

/// Counted failures of the pod's index before this pod.
pub(crate) fn index_failure_count(pod: &Pod) -> i32 {
    annotation_count(pod, INDEX_FAILURE_COUNT_ANNOTATION)
}

/// Every failure of the pod's index before this pod, ignored ones included.
pub(crate) fn index_absolute_failure_count(pod: &Pod) -> i32 {
    index_failure_count(pod).saturating_add(annotation_count(pod, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION))
}

/// `status.completedIndexes` parsed against the current completions.
pub(crate) fn completed_indexes(job: &Job) -> OrderedIntervals {
    let s = job
        .status
        .as_ref()
        .and_then(|s| s.completed_indexes.as_deref())
        .unwrap_or("");
    OrderedIntervals::parse(s, indexed_completions(job))
}

pub(crate) fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::pod;

    /// Every pod annotation this controller reads survives the informer's projection: a pod built as
    /// the API serves it and decoded as the cache holds it still answers with its index and counts.
    #[test]
    fn the_cached_pod_keeps_the_annotations_the_job_controller_reads() {
        for key in [
            COMPLETION_INDEX_ANNOTATION,
            INDEX_FAILURE_COUNT_ANNOTATION,
            INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
        ] {
            assert!(controller::compact_pod::KEPT_ANNOTATIONS.contains(&key), "{key}");
        }
        let p = pod("a")
            .index(3)
            .failure_count(2)
            .annotation(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, "5")
            .annotation("kubectl.kubernetes.io/last-applied-configuration", "{}")
            .build();
        assert_eq!(completion_index(&p), Some(3));
        assert_eq!(index_failure_count(&p), 2);
        assert_eq!(index_absolute_failure_count(&p), 7, "counted plus ignored");
        assert_eq!(p.metadata.annotations.as_ref().map(|a| a.len()), Some(3));
    }
}
