//! The Job controller (upstream `pkg/controller/job`, Kubernetes 1.36).
//!
//! Same shape as the ReplicaSet controller: [`plan::plan_pods`] decides the pod writes from the
//! caches ([`claim`], [`finishing`], [`manage`]), [`tracking`] and [`finish`] decide status,
//! conditions and finalizer removals from what those writes achieved, [`plan_sync`] runs both assuming
//! success (tests, benchmarks, shadow mode), [`executor`] and [`pod_writes`] write, [`orphans`]
//! cleans the finalizers no Job sync will remove.
//!
//! Behaviour carried over, each with the test that holds it. Beside these unit tests, the whole
//! controller is judged on the local control plane against upstream's: `e2e/tests/job.rs` (18
//! differential scenarios, the same normalized outcome under both, no pod left with the tracking
//! finalizer) and `make conformance` (upstream's own Job specs that KWOK can simulate).
//!
//! | behaviour | test |
//! | --- | --- |
//! | upstream's `TestControllerSyncJob` table, 49 rows (counting, manageJob, replacement policies, backoff, finishing, suspend, Indexed) | `plan::table` |
//! | upstream's `TestTrackJobStatusAndRemoveFinalizers` table (uncounted first, removals in flight, interim then final conditions, Indexed, the 500 cap) | `tracking::tests` |
//! | entry: `managedBy` another controller, finished Jobs and unknown completion modes are skipped; the unknown mode gets its Warning event | `plan::tests::entry_checks_skip_external_finished_and_unknown_mode_jobs`, `controller::tests::an_unknown_completion_mode_gets_a_warning_event` |
//! | an invalid selector: an error retried with the queue's backoff, no event (upstream `getPodsForJob`), counted as an `error` sync; other Jobs go on | `controller::tests::an_invalid_selector_is_an_error_retried_with_backoff_and_no_event` |
//! | reading its own writes (1.36 `StaleControllerConsistencyJob`, on by default, `JobOptions::stale_controller_consistency`): no sync while the pod or Job cache is older than a pod create or status write of this controller, checked before the Job is read; `job_controller_stale_sync_skips_total` | `controller::tests::a_cache_older_than_our_own_writes_skips_the_sync`, `controller::tests::with_the_gate_off_a_stale_cache_does_not_stop_the_sync`, `executor::tests::pod_writes_follow_the_plan_and_record_consistency_versions` |
//! | start: parallelism pods created with the tracking finalizer, startTime set, active/ready/terminating written | `plan::tests::job_start_creates_parallelism_pods_and_sets_start_time` |
//! | surplus deleted in `ActivePods` order (a total order with derived-`Ord` keys; sidecar restarts break a restart tie) | `plan::tests::too_many_pods_deletes_the_earliest_stage_first`, `active_pods::tests` (property: total order) |
//! | no pod writes while expectations are pending | `plan::tests::no_writes_while_expectations_are_pending` |
//! | completions reached: `SuccessCriteriaMet` (CompletionsReached), then `Complete` and completionTime once counted | `plan::tests::completions_reached_interim_then_complete` |
//! | work-queue mode (completions nil) | `plan::tests::work_queue_mode_waits_for_the_active_pods_after_a_success` |
//! | backoffLimit: `FailureTarget` then `Failed` (BackoffLimitExceeded) once no pod terminates; completionTime only on success | `plan::tests::backoff_limit_exceeded_fails_after_the_active_pods_terminate` |
//! | `restartPolicy: OnFailure` restart counts | `plan::tests::on_failure_restarts_count_toward_the_backoff_limit` |
//! | re-creation backoff 10 s × 2^(n−1), cap 10 min, from finish times (sidecars' included); while it is waited out the status keeps the running pods active (1.36.3: 0 beside a Ready pod is refused by the API server) | `backoff::tests`, `backoff::tests::finished_time_includes_sidecars`, `plan::tests::re_creation_waits_out_the_pod_failure_backoff`, `plan::policy_tests::a_per_index_backoff_beside_a_ready_index_keeps_the_active_count`; e2e `job` scenarios `backoff-beside-a-ready-pod`, `per-index-backoff-beside-a-ready-index` |
//! | a Job's backoff record goes with its delete event (a Job re-created under the name starts afresh) | `handlers::tests::a_finished_or_deleted_job_sweeps_its_selector` |
//! | activeDeadlineSeconds: DeadlineExceeded, requeue at the deadline, never while suspended; the allowance wraps as Go's `time.Duration` does | `plan::tests::active_deadline_exceeded_and_requeue_before_it`, `plan::tests::a_huge_active_deadline_wraps_as_upstreams_duration_does` |
//! | a failed sync keeps its timed wake-up (deadline, end of a backoff) beside the rate-limited retry | `controller::tests::a_failed_sync_keeps_its_timed_wake_up` |
//! | every claim tried before the sync fails; pod patches (adoption, release, finalizer removal) recorded for the stale-cache gate | `executor::tests::a_refused_adoption_does_not_hold_back_the_others` |
//! | metrics counted as upstream: `jobs_finished_total{reason}` for succeeded Jobs, `job_pods_creation_total` attempts and failures; a ready pod whose DELETE was sent leaves `ready` | `executor::tests::the_finished_metric_names_the_completion_reason`, `executor::tests::pod_creation_metrics_count_attempts_as_upstream`, `executor::tests::a_failed_delete_of_a_ready_pod_still_leaves_the_ready_count` |
//! | a Job written finished is not synced again until the cache shows it finished (upstream `finishedJobExpectations`, also with `StaleControllerConsistencyJob` off) | `controller::tests::a_job_written_finished_is_not_synced_on_a_stale_cache` |
//! | completionTime is the time the Complete condition was prepared | `tracking::tests::succeeding_job_by_success_criteria_keeps_pending_pods_uncounted` |
//! | suspend deletes active pods (Suspended=True JobSuspended) and clears startTime (1.36 gate `MutableSchedulingDirectivesForSuspendedJobs`, on by default; `JobOptions::suspend_clears_start_time`), resume (JobResumed) sets startTime anew | `plan::tests::suspend_deletes_active_pods_clears_start_time_and_resume_resets_it`; e2e `job` scenario `suspend-resume` |
//! | Indexed: lowest pending indexes, completedIndexes, hostname, generateName ≤ 58, `JOB_COMPLETION_INDEX` from the label | `plan::tests::indexed_creates_the_lowest_pending_indexes`, `indexed::tests` |
//! | Indexed: duplicate and out-of-range index pods removed, never create and delete in one sync | `plan::tests::indexed_removes_duplicates_and_out_of_range_indexes_before_creating` |
//! | index strings as upstream | `intervals::tests` (property: parse/format round trip, merge is union) |
//! | podFailurePolicy FailJob / Ignore / Count / FailIndex, exit codes In/NotIn with containerName, pod conditions | `pod_failure_policy::tests`, `plan::policy_tests::pod_failure_policy_*` |
//! | podReplacementPolicy TerminatingOrFailed vs Failed | `plan::policy_tests::pod_replacement_policy_terminating_or_failed_counts_deleted_pods_as_failed` |
//! | backoffLimitPerIndex, failure-count annotations, per-index backoff, maxFailedIndexes | `plan::policy_tests::backoff_limit_per_index_fails_indexes_and_max_failed_indexes_fails_the_job`, `indexed::tests` |
//! | successPolicy | `success_policy::tests`, `plan::policy_tests::success_policy_meets_criteria_on_listed_indexes` |
//! | finalizer tracking: uncounted first, at most 500 per sync, counters after removal | `plan::policy_tests::at_most_500_pods_are_counted_and_unfinalized_per_sync`, `plan::policy_tests::uncounted_pods_without_finalizer_move_to_the_counters` |
//! | partial failures of finalizer removal written back: the failed UIDs stay uncounted, nothing finishes, the retry counts them once; the second status write of the sync carries the resourceVersion the first one answered (status writes decode only the name and resourceVersion of the answer, `controller::writes`) | `executor::tests::failed_finalizer_removals_are_written_back_and_stay_uncounted` |
//! | killed between the status write and the finalizer removal (or between the removal and the counting), a new process converges: no pod keeps the finalizer, nothing counted twice | `executor::tests::killed_between_the_status_write_and_the_finalizer_removal_a_new_process_converges`, `executor::tests::killed_after_the_finalizer_removal_before_counting_a_new_process_converges` |
//! | a Job deleted mid-run: foreground (its sync unfinalizes every pod), background and orphan propagation (the orphan worker) | `executor::tests::a_job_deleted_in_the_foreground_mid_run_leaves_no_finalizer`, `orphans::tests::pods_of_a_job_deleted_in_the_background_lose_the_finalizer`, `orphans::tests::pods_orphaned_by_orphan_propagation_lose_the_finalizer` |
//! | a run from creation to Complete against the fake API server: completions pods, each counted once | `executor::tests::a_run_from_creation_to_complete_counts_each_pod_once` |
//! | adoption adds the finalizer; other controllers' pods untouched | `plan::tests::adoption_adds_the_finalizer_and_foreign_pods_are_left_alone` |
//! | plans converge: after carrying a plan out, planning again asks for nothing more; a finished Job leaves no finalizer | `plan::props` (property) |
//! | condition bookkeeping (`ensureJobConditionStatus`) | `conditions::tests` |
//! | orphan queue `job_orphan_pod` keyed as upstream 1.36 (one pod, or a finished or deleted Job's selector swept); live, external and foreign pods keep the finalizer; a failed pod key retries, a sweep logs; as many orphan workers as Job workers | `orphans::tests` |
//! | pod handlers: creation and deletion expectations (a pod seen deleting is a deletion), finalizer removals observed (update without it, final delete), orphans with the finalizer to the orphan queue, batched (1 s) syncs, resyncs ignored, matching Jobs as `GetPodJobs` | `handlers::tests` |
//! | Job handlers: add (external controllers counted), a spec change syncs at once and a changed activeDeadlineSeconds again at the deadline, status-only updates batched, a finished or deleted Job sweeps its selector and a finished one is not synced again | `handlers::tests` |
//! | informer resync (KCM `--min-resync-period`, `JobOptions::resync_period`): a resynced Job is synced again (batched) | `handlers::tests::a_job_resync_syncs_it_batched` |
//! | finalizer expectations (`uidTrackingExpectations`) | `finalizer_expectations::tests` |
//! | shadow mode: a plan that would write, or a status that differs, is one line per field; an empty deletion (a suspended Job with nothing running) is none | `shadow::tests`; e2e `shadow` (the Job scenarios beside upstream's controller, no divergence; `--shadow-perturb=ignore-suspend` reported on `status.active`) |
//! | shadow mode plans with the re-creation backoff upstream holds, rebuilt from the finished pods it watched upstream count (also those gone with their finalizer), so upstream waiting out a backoff is no divergence | `observed_finishes::tests` |
//! | orphan cleanup also takes a pod its deleting Job controls but no longer selects (see below) | `orphans::tests::a_pod_its_deleting_job_no_longer_selects_loses_the_finalizer`, `handlers::tests::a_pod_its_deleting_job_no_longer_selects_goes_to_the_orphan_queue`; e2e `job::disruptive_job_deleted_in_the_foreground_with_a_stray_pod` (upstream stuck, kcm-rs done) |
//! | random operations (Jobs of random shapes created, rescaled, suspended, resumed and deleted with every propagation; pods deleted, orphaned, relabelled): every Job finishes counted exactly, no pod keeps the finalizer, no panic | e2e `job_soak` |
//! | the process killed at each crash point of the tracking protocol, then started afresh: each pod counted once, no finalizer left, upstream's outcome | e2e `job::disruptive_job_killed_between_tracking_writes_converges` (`failpoints`) |
//!
//! Where kcm-rs differs on purpose:
//! * a pod relabelled out of its Job's selector while the Job is being deleted loses the tracking
//!   finalizer (the orphan worker removes it, the owner reference stays). Upstream 1.36 neither
//!   releases it nor unfinalizes it, and a foreground deletion then never completes
//!   (`orphans::stray_of_deleting_job`; the e2e test shows both).
//! * pods equal in every tier of the deletion order are deleted by UID, then name; upstream leaves
//!   them to an unstable sort (`active_pods` docs).
//! * an event reason outside the controller's known set is recorded as `JobFailed`: the event
//!   recorder takes `&'static str` reasons (`executor::static_reason`); every reason the plan can
//!   produce is in the set.
//! * events' `involvedObject` carries no `resourceVersion` (client-go's `GetReference` sets it): the
//!   recorder's reference is built from the `Owner`, which holds none. Event aggregation keys on
//!   kind, namespace, name, UID and reason, not on it, so the events written are the same.
//! * shadow mode's backoff record is rebuilt from watched pods (above), not counted in the sync as
//!   the live controller and upstream count it; a pod deleted and gone before the shadow's informer
//!   saw it finish is missing from it.
#![forbid(unsafe_code)]

pub mod active_pods;
pub mod backoff;
pub mod claim;
pub mod conditions;
pub mod controller;
pub mod executor;
pub mod failpoints;
pub mod finalizer_expectations;
pub mod finish;
pub mod finished_jobs;
pub mod finishing;
pub mod handlers;
pub mod indexed;
pub mod intervals;
pub mod manage;
pub mod metrics;
pub mod observed_finishes;
pub mod orphans;
pub mod plan;
pub mod pod_failure_policy;
pub mod pod_writes;
pub mod shadow;
pub mod spec;
pub mod success_policy;
pub mod tracking;

#[cfg(test)]
mod fake_cluster;
#[cfg(test)]
mod fixtures;

pub use controller::{DEFAULT_WORKERS, JobController, JobOptions};
pub use metrics::{JobMetrics, NoJobMetrics};
pub use plan::{Decision, FullPlan, PlanError, SyncInput, SyncPlan, plan_pods, plan_sync};
