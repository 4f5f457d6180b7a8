//! Which pods to create or delete (upstream `manageJob`'s decisions): suspension deletes every active
//! pod; otherwise the Job wants `min(completions − succeeded, parallelism)` active pods (parallelism
//! until the first success in work-queue mode), deletes the surplus (Indexed: bad and duplicate
//! indexes first) or creates the missing ones (Indexed: lowest pending indexes), never both in one
//! sync, and waits out the re-creation backoff.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::PodTemplateSpec;

use crate::{
    active_pods::sort_for_deletion,
    backoff::remaining_for_index,
    indexed::{
        add_completion_index_env, duplicated_index_pods, first_pending_indexes, generate_name_with_index,
        indexes_of, template_for_index,
    },
    metrics::{ACTION_PODS_CREATED, ACTION_PODS_DELETED, ACTION_TRACKING},
    plan::SyncPlan,
    spec::*,
};

/// Most pods one sync creates or deletes (upstream `MaxPodCreateDeletePerSync`).
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;
/// Delays shorter than this are raised to it, so pod events batch into one sync (upstream
/// `syncJobBatchPeriod`).
pub const SYNC_JOB_BATCH_PERIOD: Duration = Duration::from_secs(1);

/// The pod writes of one sync.
#[derive(Debug, Clone, Default)]
pub enum PodAction {
    #[default]
    None,
    /// The Job is finishing: DELETE every active pod, keeping finalizers (they are removed once
    /// the pods are counted).
    DeleteActive(Vec<Arc<Pod>>),
    /// Remove the tracking finalizer, then DELETE (suspension, surplus, bad indexes).
    Delete(Vec<Arc<Pod>>),
    Create(Box<Creation>),
}

/// Pods to create.
#[derive(Debug, Clone)]
pub struct Creation {
    /// The Job's template with the tracking finalizer (and, Indexed, the index variable).
    pub template: PodTemplateSpec,
    pub count: usize,
    /// Indexed Jobs: the index of each pod, lowest first.
    pub indexes: Vec<i32>,
}

impl PodAction {
    pub fn deletions(&self) -> &[Arc<Pod>] {
        match self {
            PodAction::DeleteActive(p) | PodAction::Delete(p) => p,
            _ => &[],
        }
    }
}

impl Creation {
    /// The template and generateName of the `n`-th pod (generateName `None`: `<job>-`).
    pub fn pod(&self, plan: &SyncPlan, n: usize) -> (PodTemplateSpec, Option<String>) {
        let Some(&index) = self.indexes.get(n) else {
            return (self.template.clone(), None);
        };
        let name = plan.job.metadata.name.as_deref().unwrap_or("");
        let replaced = plan.delayed.get(&index).map(|p| &**p);
        let t = template_for_index(&plan.job, &self.template, index, replaced);
        (t, Some(generate_name_with_index(name, index)))
    }
}

/// Fills in `plan.action`, `requeue_after` and the metrics action.
pub fn plan_manage(plan: &mut SyncPlan) {
    let job = &plan.job;
    let active = len_i32(plan.active.len());
    if suspended(job) {
        let all = pods_for_removal(plan, plan.active.len());
        plan.action = PodAction::Delete(all);
        plan.metrics_action = ACTION_PODS_DELETED;
        return;
    }
    let parallelism = parallelism(job);
    let want = match completions(job) {
        None if plan.succeeded > 0 => active,
        None => parallelism,
        Some(c) => (c - plan.succeeded).min(parallelism).max(0),
    };
    let rm_at_least = usize::try_from((active - want).max(0)).unwrap_or(0);
    let mut rm = pods_for_removal(plan, rm_at_least);
    rm.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
    if !rm.is_empty() {
        plan.action = PodAction::Delete(rm);
        plan.metrics_action = ACTION_PODS_DELETED;
        return;
    }
    let terminating = if only_replace_failed(job) {
        plan.terminating
    } else {
        0
    };
    let diff = want - terminating - active;
    if diff <= 0 {
        plan.metrics_action = ACTION_TRACKING;
        return;
    }
    plan.metrics_action = ACTION_PODS_CREATED;
    if backoff_limit_per_index(job).is_none() {
        let remaining = plan.backoff.remaining(plan.now);
        if remaining > Duration::ZERO {
            wait(plan, remaining);
            return;
        }
    }
    let mut count = usize::try_from(diff)
        .unwrap_or(0)
        .min(MAX_POD_CREATE_DELETE_PER_SYNC);
    let mut template = job.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
    let mut indexes = Vec::new();
    if is_indexed(job) {
        add_completion_index_env(&mut template);
        let mut non_pending = plan
            .succeeded_indexes
            .with_ordered_indexes(&indexes_of(&plan.active));
        if only_replace_failed(job) {
            let terminating: Vec<Arc<Pod>> = plan
                .pods
                .iter()
                .filter(|p| controller::pod_util::is_terminating(p))
                .cloned()
                .collect();
            non_pending = non_pending.with_ordered_indexes(&indexes_of(&terminating));
        }
        if let Some(f) = &plan.failed_indexes {
            non_pending = non_pending.merge(f);
        }
        indexes = first_pending_indexes(count, indexed_completions(job), &non_pending);
        if backoff_limit_per_index(job).is_some() {
            let now = plan.now;
            let remaining = |ix: &i32| remaining_for_index(plan.delayed.get(ix).map(|p| &**p), now);
            let min_wait = indexes
                .iter()
                .map(remaining)
                .filter(|d| *d > Duration::ZERO)
                .min();
            indexes.retain(|ix| remaining(ix) == Duration::ZERO);
            if indexes.is_empty() {
                if let Some(d) = min_wait {
                    wait(plan, d);
                }
                return;
            }
        }
        count = indexes.len();
    }
    if count == 0 {
        return;
    }
    let meta = template.metadata.get_or_insert_with(Default::default);
    let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
        finalizers.push(JOB_TRACKING_FINALIZER.into());
    }
    plan.action = PodAction::Create(Box::new(Creation {
        template,
        count,
        indexes,
    }));
}

/// Waiting out a backoff: look again then (at least a batch period away). The status keeps the
/// current active count: reporting 0 beside Ready pods is a status the API server refuses ("cannot
/// set more ready pods than active"), which would hold back the failed pod's counting and its
/// finalizer for the whole backoff (Kubernetes 1.36.3 reports the current count too).
fn wait(plan: &mut SyncPlan, delay: Duration) {
    let delay = delay.max(SYNC_JOB_BATCH_PERIOD);
    plan.requeue_after = Some(plan.requeue_after.map_or(delay, |d| d.min(delay)));
}

/// At least `rm_at_least` active pods to delete, in deletion order (upstream `activePodsForRemoval`).
fn pods_for_removal(plan: &SyncPlan, rm_at_least: usize) -> Vec<Arc<Pod>> {
    let (mut rm, mut left) = if is_indexed(&plan.job) {
        duplicated_index_pods(&plan.active, indexed_completions(&plan.job))
    } else {
        (Vec::new(), plan.active.clone())
    };
    if rm.len() < rm_at_least {
        sort_for_deletion(&mut left);
        let more = rm_at_least - rm.len();
        rm.extend(left.into_iter().take(more));
    }
    rm
}
