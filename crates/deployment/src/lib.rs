//! The Deployment controller (upstream `pkg/controller/deployment`, Kubernetes 1.36).
//!
//! Same shape as the ReplicaSet controller: [`plan_sync`] decides from the caches what one sync
//! writes (ReplicaSet creations, updates and deletions, the Deployment's status or, for a rollback,
//! its spec, and the events), [`executor`] writes it.
//!
//! Behaviour carried over, each with the test that holds it. Beside these unit tests, the whole
//! controller is judged on the local control plane against upstream's: `e2e/tests/deployment.rs`
//! (15 differential scenarios, the same normalized outcome under both) and `make conformance`
//! (upstream's own Deployment specs).
//!
//! | behaviour | test |
//! | --- | --- |
//! | sync priority: being deleted (status only) > paused > rollback annotation > scaling event > rollout by strategy; an unknown strategy is reported (event), not retried | `plan::tests::a_deleting_deployment_only_gets_its_status`, `plan::tests::a_paused_deployment_scales_but_does_not_roll_out`, `plan::tests::a_scaling_event_comes_before_the_rollout`, `plan::tests::an_unknown_strategy_is_an_error_naming_the_deployment` |
//! | empty selector: `SelectingAll` warning, only observedGeneration written | `plan::tests::empty_selector_only_records_the_generation` |
//! | ReplicaSet ownership: matching orphans adopted (after a fresh GET of the Deployment), owned ones that stop matching released, others' ignored | `plan::tests::adopts_matching_orphans_releases_mismatches_and_ignores_others` (the GET: `executor`, not unit-tested) |
//! | new ReplicaSet = oldest with the template ignoring `pod-template-hash` | `replica_sets::tests::the_oldest_matching_replica_set_is_the_new_one`, `replica_sets::tests::templates_compare_without_their_hash_label` |
//! | template hash: FNV-1a-32 of the template's JSON and collisionCount, upstream's safe encoding; name `<deployment>-<hash>`, hash in labels, selector and template | `hash::tests`, `new_rs::tests::built_replica_set_carries_the_hash_everywhere` |
//! | creation: first size, revision, replicas annotations, `ScalingReplicaSet` event, Deployment revision and NewReplicaSetCreated | `plan::tests::first_sync_creates_the_new_replica_set_and_records_the_revision` |
//! | AlreadyExists: ours and equal → plan again; else collisionCount raised and retried; other errors: Progressing=False ReplicaSetCreateError and a Warning | `executor::create_failed` (not unit-tested: needs an API) |
//! | annotations: revision (max old + 1, int64), revision-history (trimmed to 2000 chars), desired/max-replicas, copy skip list, rollback annotation copy | `annotations::tests` |
//! | maxSurge/maxUnavailable: percentages (surge up, unavailable down), both 0 → unavailable 1, capped, 0 outside RollingUpdate | `spec::tests` |
//! | RollingUpdate: grow new within maxTotal, shrink above replicas; cleanupUnhealthyReplicas then scale old down within the budget (unavailable new pods count against it); one direction per sync | `rolling::tests` |
//! | Recreate: old to 0, wait while old pods run (pod-delete handler requeues), then new at full size | `plan::tests::recreate_scales_old_to_zero_waits_for_pods_then_creates_at_full_size`, `handlers::tests::pod_deletions_wake_only_recreate_deployments` |
//! | scaling events and proportional scaling (sorting, rounding half away from zero, leftovers to the largest), the e2e figure 8 + 5 → 20 + 13 | `scale::tests::upstream_scale_cases`, `scale::tests::the_e2e_proportional_scaling_figure`, property `scale::tests::proportional_scaling_conserves_replicas` |
//! | pause/resume: Progressing=Unknown DeploymentPaused/DeploymentResumed, a timeout kept | `progress::tests::pause_and_resume_set_progressing_unknown_unless_timed_out` |
//! | rollback to a revision, to the last, not found, template unchanged, with upstream's events; annotation cleared | `plan::tests::rollback_to_a_revision_and_to_the_last`, `plan::tests::rollback_not_found_and_unchanged_warn_and_clear_the_annotation` |
//! | progressDeadlineSeconds: NewReplicaSetAvailable / ReplicaSetUpdated / ProgressDeadlineExceeded, requeue at the deadline (+1 s) | `progress::tests::progressing_reasons_in_upstream_order`, `progress::tests::a_stuck_rollout_is_looked_at_again_at_its_deadline`, `status::tests::timed_out_after_the_deadline_since_the_last_update` |
//! | revisionHistoryLimit: drained old ReplicaSets, lowest revision first | `plan::tests::history_cleanup_deletes_drained_old_replica_sets_lowest_revision_first` |
//! | status: replicas, updated, ready, available, unavailable, terminating (1.36 rules), observedGeneration, collisionCount; Available; ReplicaFailure from the new ReplicaSet first | `status::tests`, `replica_sets::tests::terminating_counts_skip_unsynced_and_give_up_on_unknown`, `progress::tests::replica_failure_is_copied_from_the_new_replica_set_first` |
//! | condition bookkeeping (`SetDeploymentCondition`) | `conditions::tests` |
//! | sort orders are total (derived-`Ord` keys) and agree with upstream's | `replica_sets::tests::orders_are_total`, `replica_sets::tests::size_orders_agree_with_upstream` |
//! | a plan over its own result asks for nothing more | `plan::tests::an_up_to_date_deployment_plans_nothing` |
//! | informer handlers: Deployment events; ReplicaSets to their owner or, orphans, to every matching Deployment; pod deletes for Recreate | `handlers::tests` |
//! | shadow mode: a plan that would write, or a status that differs, one line per field; `--shadow-perturb=ignore-paused` (`DeploymentOptions::ignore_paused`) is reported on the right object | e2e `shadow` (the Deployment scenarios beside upstream's controller: no divergence) |
//! | random operations (scaling, image and strategy changes, pause, minReadySeconds, pods and ReplicaSets deleted, ReplicaSets orphaned): every Deployment fully rolled out to one ReplicaSet at the end, no panic | e2e `deployment_soak` |
//! | informer resync (KCM `--min-resync-period`, `DeploymentOptions::resync_period`): a resynced Deployment is synced again, a resynced ReplicaSet is not | `handlers::tests::a_deployment_resync_enqueues_it`, `handlers::tests::replica_sets_wake_their_owner_and_orphans_every_matching_deployment` |
//!
//! Where kcm-rs differs on purpose:
//! * one write per object per sync. Upstream's later status writes in a sync reuse a stale
//!   resourceVersion and fail with a conflict; the end state is the same, reached one sync sooner
//!   (`plan` docs).
//! * a stuck rollout less than a second from its deadline is looked at again at the deadline plus a
//!   second, not every few milliseconds with the rate limiter (`progress::requeue_stuck`).
//! * errors are retried with the rate limiter without upstream's limit of 15 retries; an invalid
//!   selector or strategy gets a Warning event instead of 15 retries and a log line.
//! * an unparsable revision sorts as revision 0 in the history cleanup (upstream's comparator can
//!   cycle there; `replica_sets` docs).
#![forbid(unsafe_code)]

pub mod annotations;
pub mod cleanup;
pub mod conditions;
pub mod controller;
pub mod executor;
pub mod handlers;
pub mod hash;
pub mod new_rs;
pub mod plan;
pub mod progress;
pub mod recreate;
pub mod replica_sets;
pub mod rollback;
pub mod rolling;
pub mod scale;
pub mod shadow;
pub mod spec;
pub mod status;
pub mod work;

#[cfg(test)]
mod fixtures;

pub use controller::{DEFAULT_WORKERS, DeploymentController, DeploymentOptions};
pub use plan::{Actions, Decision, PlanError, SyncInput, SyncPlan, plan_sync};
