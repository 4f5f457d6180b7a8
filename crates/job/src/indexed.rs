//! Indexed Jobs (upstream `indexed_job_utils.go`): which indexes succeeded or failed, which to start
//! next, which pods to remove (no index, out of range, duplicates), and how a pod for an index is
//! built from the template.

use controller::compact_pod::Pod;
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodTemplateSpec},
};

use crate::{
    active_pods::sort_for_deletion,
    backoff::finished_time,
    intervals::OrderedIntervals,
    pod_failure_policy::{Action, match_pod_failure_policy},
    spec::{
        COMPLETION_INDEX_ANNOTATION, INDEX_FAILURE_COUNT_ANNOTATION, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
        annotation_count, backoff_limit_per_index, completed_indexes, completion_index,
        has_tracking_finalizer, index_absolute_failure_count, index_failure_count, indexed_completions,
        is_pod_failed, phase, valid_index,
    },
};

/// The environment variable every container of an Indexed Job's pods gets.
pub(crate) const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// Longest `generateName` the API server accepts before appending its 5 random characters
/// (apiserver `names.MaxGeneratedNameLength`: 63 − 5).
pub(crate) const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// `status.completedIndexes` as it was, and with the succeeded pods still carrying the finalizer
/// added (upstream `calculateSucceededIndexes`).
pub(crate) fn succeeded_indexes(job: &Job, pods: &[Arc<Pod>]) -> (OrderedIntervals, OrderedIntervals) {
    let prev = completed_indexes(job);
    let completions = indexed_completions(job);
    let new: BTreeSet<i32> = pods
        .iter()
        .filter(|p| phase(p) == "Succeeded" && has_tracking_finalizer(&p.metadata))
        .filter_map(|p| valid_index(p, completions))
        .collect();
    let all = prev.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>());
    (prev, all)
}

/// `status.failedIndexes` plus the indexes whose pods failed for good since (upstream
/// `calculateFailedIndexes`).
pub(crate) fn failed_indexes(job: &Job, pods: &[Arc<Pod>]) -> OrderedIntervals {
    let completions = indexed_completions(job);
    let prev = job
        .status
        .as_ref()
        .and_then(|s| s.failed_indexes.as_deref())
        .map(|s| OrderedIntervals::parse(s, completions))
        .unwrap_or_default();
    let new: BTreeSet<i32> = pods
        .iter()
        .filter(|p| has_tracking_finalizer(&p.metadata) && is_index_failed(job, p))
        .filter_map(|p| valid_index(p, completions))
        .collect();
    prev.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>())
}

/// The pod's failure fails its index: a FailIndex rule, or a counted failure once the index has used
/// up backoffLimitPerIndex.
pub(crate) fn is_index_failed(job: &Job, pod: &Pod) -> bool {
    if !is_pod_failed(pod, job) {
        return false;
    }
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    let m = match_pod_failure_policy(policy, pod);
    if m.action == Some(Action::FailIndex) {
        return true;
    }
    m.count_failed && index_failure_count(pod) >= backoff_limit_per_index(job).unwrap_or(0)
}

/// The lowest `count` indexes below `completions` that are not succeeded, active, failed or (when
/// only failed pods are replaced) still terminating (upstream `firstPendingIndexes`).
pub(crate) fn first_pending_indexes(
    count: usize,
    completions: i32,
    non_pending: &OrderedIntervals,
) -> Vec<i32> {
    let mut out = Vec::with_capacity(count.min(usize::try_from(completions).unwrap_or(0)));
    let mut candidate = 0;
    for iv in &non_pending.0 {
        while candidate < completions && out.len() < count && candidate < iv.first {
            out.push(candidate);
            candidate += 1;
        }
        // An interval may end at i32::MAX (a hand-set index annotation): past it nothing is pending.
        candidate = candidate.max(iv.last.saturating_add(1));
    }
    while candidate < completions && out.len() < count {
        out.push(candidate);
        candidate += 1;
    }
    out
}

/// The indexes of `pods`, in order.
pub(crate) fn indexes_of<'a>(pods: impl IntoIterator<Item = &'a Arc<Pod>>) -> Vec<i32> {
    let set: BTreeSet<i32> = pods.into_iter().filter_map(|p| completion_index(p)).collect();
    set.into_iter().collect()
}

/// Active pods to remove from an Indexed Job before any scale-down: pods without an index or with one
/// at or above `completions`, and for each index all but the pod that would be deleted last
/// (upstream `appendDuplicatedIndexPodsForRemoval`). Returns (to remove, kept).
pub(crate) fn duplicated_index_pods(pods: &[Arc<Pod>], completions: i32) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let mut by_index: BTreeMap<Option<i32>, Vec<Arc<Pod>>> = BTreeMap::new();
    for p in pods {
        by_index.entry(completion_index(p)).or_default().push(p.clone());
    }
    let (mut rm, mut left) = (Vec::new(), Vec::new());
    for (ix, mut group) in by_index {
        match ix {
            Some(i) if i < completions => {
                sort_for_deletion(&mut group);
                if let Some(keep) = group.pop() {
                    left.push(keep);
                }
                rm.extend(group);
            }
            _ => rm.extend(group),
        }
    }
    (rm, left)
}

/// For each index whose failed pod must stay until its replacement exists, that pod (the failure
/// count moves to the replacement through an annotation; upstream `getPodsWithDelayedDeletionPerIndex`).
/// Indexes already succeeded, failed or active need no such pod.
pub(crate) fn pods_with_delayed_deletion(
    job: &Job,
    pods: &[Arc<Pod>],
    active: &[Arc<Pod>],
    succeeded: &OrderedIntervals,
    failed: &OrderedIntervals,
    counted: impl Fn(&Pod) -> bool,
) -> BTreeMap<i32, Arc<Pod>> {
    let completions = indexed_completions(job);
    let active_indexes: BTreeSet<i32> = indexes_of(active).into_iter().collect();
    let mut out: BTreeMap<i32, Arc<Pod>> = BTreeMap::new();
    for p in pods {
        if !counted(p) || !is_pod_failed(p, job) {
            continue;
        }
        let Some(ix) = valid_index(p, completions) else {
            continue;
        };
        if succeeded.has(ix) || failed.has(ix) || active_indexes.contains(&ix) {
            continue;
        }
        match out.get(&ix) {
            Some(last)
                if !(index_absolute_failure_count(last) <= index_absolute_failure_count(p)
                    && finished_time(p) >= finished_time(last)) => {}
            _ => {
                out.insert(ix, p.clone());
            }
        }
    }
    out
}

/// The failure counts the replacement of `replaced` carries: (counted, ignored) (upstream
/// `getNewIndexFailureCounts`).
pub(crate) fn new_index_failure_counts(job: &Job, replaced: Option<&Pod>) -> (i32, i32) {
    let Some(p) = replaced else { return (0, 0) };
    let (mut counted, mut ignored) = (
        index_failure_count(p),
        annotation_count(p, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION),
    );
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    if match_pod_failure_policy(policy, p).count_failed {
        counted = counted.saturating_add(1);
    } else {
        ignored = ignored.saturating_add(1);
    }
    (counted, ignored)
}

/// `<job>-<index>-`, the job name cut so that the prefix fits the generated-name limit.
pub(crate) fn generate_name_with_index(job_name: &str, index: i32) -> String {
    let suffix = format!("-{index}-");
    let mut prefix = format!("{job_name}{suffix}");
    if prefix.len() > MAX_GENERATED_NAME_LENGTH {
        let mut cut = MAX_GENERATED_NAME_LENGTH - suffix.len();
        while !job_name.is_char_boundary(cut) {
            cut -= 1;
        }
        prefix = format!("{}{suffix}", &job_name[..cut]);
    }
    prefix
}

/// Adds `JOB_COMPLETION_INDEX` from the index label through the downward API to every container
/// that does not set it already (upstream `addCompletionIndexEnvVariables`, `PodIndexLabel` on).
pub(crate) fn add_completion_index_env(template: &mut PodTemplateSpec) {
    let Some(spec) = template.spec.as_mut() else {
        return;
    };
    let add = |c: &mut Container| {
        let env = c.env.get_or_insert_with(Vec::new);
        if env.iter().any(|e| e.name == COMPLETION_INDEX_ENV) {
            return;
        }
        env.push(EnvVar {
            name: COMPLETION_INDEX_ENV.into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: format!("metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"),
                }),
                ..EnvVarSource::default()
            }),
        });
    };
    spec.init_containers.iter_mut().flatten().for_each(add);
    spec.containers.iter_mut().for_each(add);
}

/// The template for the pod of `index`: the index as annotation and label, the hostname, and with
/// backoffLimitPerIndex the failure counts taken over from `replaced`.
pub(crate) fn template_for_index(
    job: &Job,
    base: &PodTemplateSpec,
    index: i32,
    replaced: Option<&Pod>,
) -> PodTemplateSpec {
    let mut t = base.clone();
    let meta = t.metadata.get_or_insert_with(Default::default);
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(COMPLETION_INDEX_ANNOTATION.into(), index.to_string());
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(COMPLETION_INDEX_ANNOTATION.into(), index.to_string());
    if backoff_limit_per_index(job).is_some() {
        let (counted, ignored) = new_index_failure_counts(job, replaced);
        let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(INDEX_FAILURE_COUNT_ANNOTATION.into(), counted.to_string());
        if ignored > 0 {
            annotations.insert(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.into(), ignored.to_string());
        }
    }
    let name = job.metadata.name.as_deref().unwrap_or("");
    if let Some(spec) = t.spec.as_mut() {
        spec.hostname = Some(format!("{name}-{index}"));
    }
    t
}

#[cfg(test)]
#[path = "indexed_tests.rs"]
mod tests;
