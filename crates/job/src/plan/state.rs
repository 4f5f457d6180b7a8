//! The values the planner's steps hand on, to each other and to the executor. A leaf: nothing here
//! imports another planner module, so every step can depend on these types and on nothing else of
//! the planner, and no import cycle can form among the steps.

pub(crate) use controller::PlannedEvent;
use controller::compact_pod::Pod;
use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
    time::Duration,
};

use controller::{ClaimPlan, Owner};
use informer::{ObjectKey, SelectorError};
use k8s_openapi::{
    api::{
        batch::v1::{Job, JobCondition, JobStatus},
        core::v1::PodTemplateSpec,
    },
    jiff::Timestamp,
};

use crate::{
    backoff::BackoffRecord,
    delays::JobDelays,
    indexed::{generate_name_with_index, template_for_index},
    intervals::OrderedIntervals,
    pod_failure_policy::Action,
    spec::len_i32,
};

/// What the caches show for one Job, and this controller's memory of it.
#[derive(Debug, Clone, Copy)]
pub struct SyncInput<'a> {
    pub job: &'a Job,
    /// Every pod of the Job's namespace that it might own: its own and the orphans.
    pub candidates: &'a [Arc<Pod>],
    /// Checked before listing pods, so that a pod arriving in between is handled by the next sync.
    pub expectations_satisfied: bool,
    /// Pods whose finalizer removal is in flight: counted already, not to be counted again.
    pub expected_rm_finalizers: &'a HashSet<String>,
    pub backoff: BackoffRecord,
    pub now: Timestamp,
    /// Suspending a Job clears `status.startTime` (1.36 gate `MutableSchedulingDirectivesForSuspendedJobs`,
    /// beta and on by default; resuming sets it again either way).
    pub suspend_clears_start_time: bool,
    /// The backoff's steps and the batch period: upstream's, unless a test asked otherwise.
    pub delays: JobDelays,
}

/// Why a Job is not synced at all.
#[derive(Debug)]
pub enum Decision<T> {
    /// `spec.managedBy` names another controller: not ours, whatever the handlers thought.
    ManagedExternally(String),
    /// Complete or Failed already: nothing left to do (the backoff record is dropped).
    Finished,
    /// A completion mode this controller does not know: a Warning event, no retry.
    UnknownCompletionMode,
    Sync(Box<T>),
}

/// Why a Job cannot be planned for; reported and not retried.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("couldn't convert the selector of Job {key}: {source}")]
    InvalidSelector { key: ObjectKey, source: SelectorError },
}

/// Everything the first half decided, and what the second half needs. Built once, by
/// [`super::plan_pods`], from the parts its steps return.
#[derive(Debug, Clone)]
pub(crate) struct SyncPlan {
    pub(crate) owner: Owner,
    /// Orphans to adopt (the patch adds the tracking finalizer too) and pods to release.
    pub(crate) claims: ClaimPlan<Pod>,
    /// The Job as this sync sees it: startTime set, uncountedTerminatedPods present.
    pub(crate) job: Job,
    /// Claimed pods (adopted ones shown with the finalizer) and the active ones among them.
    pub(crate) pods: Vec<Arc<Pod>>,
    pub(crate) active: Vec<Arc<Pod>>,
    pub(crate) ready: i32,
    pub(crate) terminating: i32,
    pub(crate) succeeded: i32,
    pub(crate) failed: i32,
    pub(crate) prev_succeeded_indexes: OrderedIntervals,
    pub(crate) succeeded_indexes: OrderedIntervals,
    /// Only with backoffLimitPerIndex.
    pub(crate) failed_indexes: Option<OrderedIntervals>,
    /// The backoff record including this sync's newly finished pods.
    pub(crate) backoff: BackoffRecord,
    /// The finishing condition decided before any pod write (interim, or final for a Job whose
    /// interim condition was written earlier).
    pub(crate) finished: Option<JobCondition>,
    pub(crate) expectations_satisfied: bool,
    /// Per index, the failed pod kept until its replacement exists.
    pub(crate) delayed: BTreeMap<i32, Arc<Pod>>,
    pub(crate) uncounted_succeeded: HashSet<String>,
    pub(crate) uncounted_failed: HashSet<String>,
    pub(crate) expected_rm_finalizers: HashSet<String>,
    /// The pod writes, and whether manageJob ran (suspension conditions are set only then).
    pub(crate) action: PodAction,
    pub(crate) manage_called: bool,
    /// [`SyncInput::suspend_clears_start_time`].
    pub(crate) suspend_clears_start_time: bool,
    /// [`SyncInput::delays`].
    pub(crate) delays: JobDelays,
    pub(crate) requeue_after: Option<Duration>,
    /// The `action` label of the sync metrics: reconciling, tracking, pods_created, pods_deleted.
    pub(crate) metrics_action: &'static str,
    pub(crate) now: Timestamp,
}

/// Both halves under the assumption that every write succeeds.
#[derive(Debug, Clone)]
pub struct FullPlan {
    pub(crate) sync: SyncPlan,
    pub(crate) status: StatusPlan,
}

/// The pod writes of one sync.
///
/// The two deletions differ in what happens to the tracking finalizer, and so in whether the pod
/// is ever counted: tracking counts only pods that still carry it. A finishing Job's pods are part
/// of its outcome (they count as failed once they stop), so they keep it until counted; a pod
/// deleted while the Job goes on (suspension, surplus, a bad or duplicate index) is no outcome of
/// the Job, so it leaves tracking before it goes. Upstream: `deleteActivePods` and `deleteJobPods`.
#[derive(Debug, Clone, Default)]
pub(crate) enum PodAction {
    #[default]
    None,
    /// DELETE every active pod of a finishing Job; the finalizers stay until the pods are counted.
    DeleteKeepingFinalizer(Vec<Arc<Pod>>),
    /// Remove the tracking finalizer, then DELETE (suspension, surplus, bad indexes).
    RemoveFinalizerThenDelete(Vec<Arc<Pod>>),
    Create(Box<Creation>),
}

/// Pods to create.
#[derive(Debug, Clone)]
pub(crate) struct Creation {
    /// The Job's template with the tracking finalizer (and, Indexed, the index variable).
    pub(crate) template: PodTemplateSpec,
    pub(crate) count: usize,
    /// Indexed Jobs: the index of each pod, lowest first.
    pub(crate) indexes: Vec<i32>,
}

impl PodAction {
    pub(crate) fn deletions(&self) -> &[Arc<Pod>] {
        match self {
            PodAction::DeleteKeepingFinalizer(p) | PodAction::RemoveFinalizerThenDelete(p) => p,
            _ => &[],
        }
    }
}

impl Creation {
    /// The template and generateName of the `n`-th pod (generateName `None`: `<job>-`).
    pub(crate) fn pod(&self, plan: &SyncPlan, n: usize) -> (PodTemplateSpec, Option<String>) {
        let Some(&index) = self.indexes.get(n) else {
            return (self.template.clone(), None);
        };
        let name = plan.job.metadata.name.as_deref().unwrap_or("");
        let replaced = plan.delayed.get(&index).map(|p| &**p);
        let t = template_for_index(&plan.job, &self.template, index, replaced);
        (t, Some(generate_name_with_index(name, index)))
    }
}

/// What the pod writes achieved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ManageOutcome {
    pub(crate) deleted: i32,
    pub(crate) deleted_ready: i32,
    pub(crate) created: i32,
    /// Every deletion asked for succeeded (finishing Jobs keep their condition only then).
    pub(crate) all_deleted: bool,
    /// When the writes were done, which the conditions made after them carry (SuccessCriteriaMet,
    /// Suspended) and a resumed Job's startTime, as upstream reads its clock after `manageJob`: the
    /// creates of a large resumed Job take seconds at the client's QPS, and its deadline counts from
    /// their end. `None`: the plan's time (a prediction, as shadow mode's).
    pub(crate) done_at: Option<Timestamp>,
}

impl ManageOutcome {
    /// Every write of `action` succeeded.
    pub(crate) fn assumed(action: &PodAction) -> Self {
        let deletions = action.deletions();
        let created = match action {
            PodAction::Create(c) => len_i32(c.count),
            _ => 0,
        };
        ManageOutcome {
            deleted: len_i32(deletions.len()),
            deleted_ready: len_i32(
                deletions
                    .iter()
                    .filter(|p| controller::pod_util::is_ready(p))
                    .count(),
            ),
            created,
            all_deleted: true,
            done_at: None,
        }
    }
}

/// The status as the end of `syncJob` leaves it after the pod writes, before tracking adds this
/// sync's finished pods: what [`super::status`] hands to [`super::tracking`].
#[derive(Debug, Clone)]
pub(crate) struct StatusDraft {
    /// The Job with that status.
    pub(crate) job: Job,
    /// The finishing condition still standing after the pod writes.
    pub(crate) finished: Option<JobCondition>,
    pub(crate) terminating: i32,
    /// The status differs from the one the API server holds.
    pub(crate) needs_flush: bool,
    /// Suspended / Resumed events, recorded with the status write.
    pub(crate) events: Vec<PlannedEvent>,
}

/// The status writes and finalizer removals of one sync.
#[derive(Debug, Clone)]
pub(crate) struct StatusPlan {
    /// The status to write before removing finalizers (`flush_first`), uncounted pods included.
    pub(crate) status: JobStatus,
    pub(crate) flush_first: bool,
    /// Pods whose tracking finalizer is removed after that write.
    pub(crate) remove_finalizers: Vec<Arc<Pod>>,
    /// UIDs that still carry the finalizer as far as this sync knows.
    pub(crate) uids_with_finalizer: HashSet<String>,
    /// The terminal condition to add once the counts allow it (Complete or Failed).
    pub(crate) finished: Option<JobCondition>,
    /// The uncounted limit was reached: no terminal condition this sync.
    pub(crate) reached_max_uncounted: bool,
    pub(crate) terminating: i32,
    /// Suspended / Resumed events, recorded with the status write.
    pub(crate) events: Vec<PlannedEvent>,
    /// Failed pods handled by a pod failure policy rule, by action (metrics).
    pub(crate) policy_actions: BTreeMap<Action, u32>,
}

/// The status after the finalizer removals.
#[derive(Debug, Clone)]
pub(crate) struct AfterRemoval {
    pub(crate) status: JobStatus,
    /// A write is still needed.
    pub(crate) write: bool,
    /// The terminal condition was added: the Job is done (events and metrics).
    pub(crate) finished: Option<JobCondition>,
}
