//! The Job controller (upstream `pkg/controller/job`, Kubernetes 1.36).
//!
//! Same shape as the ReplicaSet controller: [`plan::plan_pods`] decides the pod writes from the
//! caches, [`tracking`] decides status, conditions and finalizer removals from what those writes
//! achieved, [`plan_sync`] runs both assuming success (tests, shadow mode), [`executor`] writes.
//!
//! Behaviour carried over, each with the test that holds it:
//!
//! | behaviour | test |
//! | --- | --- |
//! | entry: `managedBy` another controller, finished Jobs and unknown completion modes are skipped | `plan::tests::entry_checks_skip_external_finished_and_unknown_mode_jobs` |
//! | start: parallelism pods created with the tracking finalizer, startTime set, active/ready/terminating written | `plan::tests::job_start_creates_parallelism_pods_and_sets_start_time` |
//! | surplus deleted in `ActivePods` order (a total order with derived-`Ord` keys) | `plan::tests::too_many_pods_deletes_the_earliest_stage_first`, `active_pods::tests` (property: total order) |
//! | no pod writes while expectations are pending | `plan::tests::no_writes_while_expectations_are_pending` |
//! | completions reached: `SuccessCriteriaMet` (CompletionsReached), then `Complete` and completionTime once counted | `plan::tests::completions_reached_interim_then_complete` |
//! | work-queue mode (completions nil) | `plan::tests::work_queue_mode_waits_for_the_active_pods_after_a_success` |
//! | backoffLimit: `FailureTarget` then `Failed` (BackoffLimitExceeded) once no pod terminates; completionTime only on success | `plan::tests::backoff_limit_exceeded_fails_after_the_active_pods_terminate` |
//! | `restartPolicy: OnFailure` restart counts | `plan::tests::on_failure_restarts_count_toward_the_backoff_limit` |
//! | re-creation backoff 10 s × 2^(n−1), cap 10 min, from finish times | `backoff::tests`, `plan::tests::re_creation_waits_out_the_pod_failure_backoff` |
//! | activeDeadlineSeconds: DeadlineExceeded, requeue at the deadline, never while suspended | `plan::tests::active_deadline_exceeded_and_requeue_before_it` |
//! | suspend deletes active pods (Suspended=True JobSuspended), resume (JobResumed) resets startTime | `plan::tests::suspend_deletes_active_pods_and_resume_resets_start_time` |
//! | Indexed: lowest pending indexes, completedIndexes, hostname, generateName ≤ 58, `JOB_COMPLETION_INDEX` from the label | `plan::tests::indexed_creates_the_lowest_pending_indexes`, `indexed::tests` |
//! | Indexed: duplicate and out-of-range index pods removed, never create and delete in one sync | `plan::tests::indexed_removes_duplicates_and_out_of_range_indexes_before_creating` |
//! | index strings as upstream | `intervals::tests` (property: parse/format round trip, merge is union) |
//! | podFailurePolicy FailJob / Ignore / Count / FailIndex, exit codes In/NotIn with containerName, pod conditions | `pod_failure_policy::tests`, `plan::tests::pod_failure_policy_*` |
//! | podReplacementPolicy TerminatingOrFailed vs Failed | `plan::tests::pod_replacement_policy_terminating_or_failed_counts_deleted_pods_as_failed` |
//! | backoffLimitPerIndex, failure-count annotations, per-index backoff, maxFailedIndexes | `plan::tests::backoff_limit_per_index_fails_indexes_and_max_failed_indexes_fails_the_job`, `indexed::tests` |
//! | successPolicy | `success_policy::tests`, `plan::tests::success_policy_meets_criteria_on_listed_indexes` |
//! | finalizer tracking: uncounted first, at most 500 per sync, counters after removal | `plan::tests::at_most_500_pods_are_counted_and_unfinalized_per_sync`, `plan::tests::uncounted_pods_without_finalizer_move_to_the_counters` |
//! | adoption adds the finalizer; other controllers' pods untouched | `plan::tests::adoption_adds_the_finalizer_and_foreign_pods_are_left_alone` |
//! | plans converge: after carrying a plan out, planning again asks for nothing more; a finished Job leaves no finalizer | `plan::props` (property) |
//! | condition bookkeeping (`ensureJobConditionStatus`) | `conditions::tests` |
//! | informer handlers, orphan queue `job_orphan_pod`, finalizer expectations | `handlers` (not yet unit-tested), `finalizer_expectations::tests` |
#![forbid(unsafe_code)]

pub mod active_pods;
pub mod backoff;
pub mod conditions;
pub mod controller;
pub mod executor;
pub mod finalizer_expectations;
pub mod handlers;
pub mod indexed;
pub mod intervals;
pub mod manage;
pub mod metrics;
pub mod plan;
pub mod pod_failure_policy;
pub mod shadow;
pub mod spec;
pub mod success_policy;
pub mod tracking;

#[cfg(test)]
mod fixtures;

pub use controller::{DEFAULT_WORKERS, JobController, JobOptions};
pub use metrics::{JobMetrics, NoJobMetrics};
pub use plan::{Decision, FullPlan, PlanError, SyncInput, SyncPlan, plan_pods, plan_sync};
