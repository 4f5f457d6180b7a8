//! The Deployment controller (upstream `pkg/controller/deployment`, Kubernetes 1.36).
//!
//! Same shape as the ReplicaSet controller: [`plan_sync`] decides from the caches what one sync
//! writes (ReplicaSet creations, updates and deletions, the Deployment's status or, for a rollback,
//! its spec, and the events), [`executor`] writes it.
//!
//! Behaviour carried over, each with the test that holds it. Beside these unit tests, the whole
//! controller is judged on the local control plane against upstream's: `e2e/tests/deployment.rs`
//! (16 differential scenarios, the same normalized outcome under both) and `make conformance`
//! (upstream's own Deployment specs).
//!
//! | behaviour | test |
//! | --- | --- |
//! | sync priority: being deleted (status only) > paused > rollback annotation > scaling event > rollout by strategy; an unknown strategy is reported (event), not retried | `plan::tests::a_deleting_deployment_only_gets_its_status`, `plan::tests::a_paused_deployment_scales_but_does_not_roll_out`, `plan::tests::a_scaling_event_comes_before_the_rollout`, `plan::tests::an_unknown_strategy_is_an_error_naming_the_deployment` |
//! | empty selector: `SelectingAll` warning, only observedGeneration written | `plan::tests::empty_selector_only_records_the_generation` |
//! | ReplicaSet ownership: matching orphans adopted (after a fresh GET of the Deployment), owned ones that stop matching released, others' ignored | `plan::tests::adopts_matching_orphans_releases_mismatches_and_ignores_others` (the GET: `executor`, not unit-tested) |
//! | claims: every adoption and release tried; an orphan gone when adopted is planned without, any other adoption error fails the sync; a release gone or refused as invalid is done | `claims::tests::only_a_gone_orphan_is_skipped_and_every_claim_is_tried` (the re-plan: `controller`, not unit-tested) |
//! | new ReplicaSet = oldest with the template ignoring `pod-template-hash` | `replica_sets::tests::the_oldest_matching_replica_set_is_the_new_one`, `replica_sets::tests::templates_compare_without_their_hash_label` |
//! | template hash equal to upstream's: FNV-1a-32 of the go-spew dump of the Go template (`hash::upstream_dump`, byte for byte) and collisionCount, upstream's safe encoding; name `<deployment>-<hash>`, the Deployment's part cut so the name fits 253 characters; hash in labels, selector and template | `hash::tests` (`dump_and_hash_match_upstreams_byte_for_byte`: templates with the dump and hashes upstream's code gave them, `tests-data/pod-template-hash`), `new_rs::tests::built_replica_set_carries_the_hash_everywhere`, `new_rs::tests::long_deployment_names_are_cut_to_fit_the_replica_set_name`, `new_rs::tests::replica_set_names_as_upstream_generates_them`; e2e `long-name` |
//! | creation: first size, revision, replicas annotations, `ScalingReplicaSet` event, Deployment revision and NewReplicaSetCreated | `plan::tests::first_sync_creates_the_new_replica_set_and_records_the_revision` |
//! | AlreadyExists (the reason, not any 409): ours and equal → plan again; else collisionCount raised and retried; other errors: Progressing=False ReplicaSetCreateError and a Warning | `executor::tests::only_the_already_exists_reason_is_an_existing_replica_set` (the rest of `executor::create_failed` needs an API) |
//! | annotations: revision (max old + 1, int64), revision-history (trimmed to 2000 chars; replaced when its first entry is empty), desired/max-replicas (unsigned, at most MaxInt32, else absent), copy skip list, rollback annotation copy | `annotations::tests` |
//! | maxSurge/maxUnavailable: percentages (surge up, unavailable down), both 0 → unavailable 1, capped, 0 outside RollingUpdate | `spec::tests` |
//! | RollingUpdate: grow new within maxTotal, shrink above replicas; cleanupUnhealthyReplicas then scale old down within the budget (unavailable new pods count against it; only old ReplicaSets active at the start, and the new one, count as available); an old ReplicaSet reporting more available than its size stops the scale-down for that sync; old scale-downs are best-effort writes (the status is still written); one direction per sync | `rolling::tests`, `plan::tests::a_given_up_scale_down_still_writes_the_status` |
//! | Recreate: old to 0, wait while old pods run (pod-delete handler requeues), then new at full size | `plan::tests::recreate_scales_old_to_zero_waits_for_pods_then_creates_at_full_size`, `handlers::tests::pod_deletions_wake_only_recreate_deployments` |
//! | scaling events and proportional scaling (sorting, rounding half away from zero, leftovers to the largest; a max-replicas that is absent, invalid or 0 falls back to status.replicas; each event says up or down by its own ReplicaSet's change), the e2e figure 8 + 5 → 20 + 13 | `scale::tests::upstream_scale_cases`, `scale::tests::the_e2e_proportional_scaling_figure`, `scale::tests::a_max_replicas_of_zero_falls_back_to_the_deployments_pod_count`, `scale::tests::each_replica_set_names_its_own_direction`, property `scale::tests::proportional_scaling_conserves_replicas` |
//! | pause/resume: Progressing=Unknown DeploymentPaused/DeploymentResumed, a timeout kept | `progress::tests::pause_and_resume_set_progressing_unknown_unless_timed_out` |
//! | rollback to a revision, to the last, not found, template unchanged, with upstream's events; annotation cleared | `plan::tests::rollback_to_a_revision_and_to_the_last`, `plan::tests::rollback_not_found_and_unchanged_warn_and_clear_the_annotation` |
//! | progressDeadlineSeconds: NewReplicaSetAvailable / ReplicaSetUpdated / ProgressDeadlineExceeded, requeue at the deadline (+1 s) | `progress::tests::progressing_reasons_in_upstream_order`, `progress::tests::a_stuck_rollout_is_looked_at_again_at_its_deadline`, `status::tests::timed_out_after_the_deadline_since_the_last_update` |
//! | revisionHistoryLimit: drained old ReplicaSets, lowest revision first | `plan::tests::history_cleanup_deletes_drained_old_replica_sets_lowest_revision_first` |
//! | status: replicas, updated, ready, available, unavailable, terminating (1.36 rules; unset with the DeploymentReplicaSetTerminatingReplicas gate off, `DeploymentOptions::features`), observedGeneration, collisionCount; Available; ReplicaFailure from the new ReplicaSet first | `status::tests`, `replica_sets::tests::terminating_counts_skip_unsynced_and_give_up_on_unknown`, `progress::tests::replica_failure_is_copied_from_the_new_replica_set_first`, `plan::tests::terminating_replicas_only_with_its_feature_gate` |
//! | condition bookkeeping (`SetDeploymentCondition`) | `conditions::tests` |
//! | sort orders are total (derived-`Ord` keys) and agree with upstream's | `replica_sets::tests::orders_are_total`, `replica_sets::tests::size_orders_agree_with_upstream` |
//! | ReplicaSets taken oldest first (then by name), the new one last, whatever the cache's order; writes in the order upstream makes them (proportional scaling by size) | `plan::order_tests` |
//! | int32 arithmetic wraps as upstream's (sums, replicas + maxSurge, the new ReplicaSet's size, percentages truncated to int32); no value the API accepts panics a debug build | `plan::overflow_tests::max_int32_replicas_wrap_as_upstream`, property `plan::overflow_tests::plans_never_panic_on_extreme_values` |
//! | a plan over its own result asks for nothing more | `plan::tests::an_up_to_date_deployment_plans_nothing` |
//! | informer handlers: Deployment events; ReplicaSets to their owner or, orphans with labels, to every matching Deployment; pod deletes for Recreate | `handlers::tests` |
//! | shadow mode: a plan that would write, or a status that differs, one line per field; `--shadow-perturb=ignore-paused` (`DeploymentOptions::ignore_paused`) is reported on the right object | e2e `shadow` (the Deployment scenarios beside upstream's controller: no divergence) |
//! | random operations (scaling, image and strategy changes, pause, minReadySeconds, pods and ReplicaSets deleted, ReplicaSets orphaned): every Deployment fully rolled out to one ReplicaSet at the end, no panic | e2e `deployment_soak` |
//! | informer resync (KCM `--min-resync-period`, `DeploymentOptions::resync_period`): a resynced Deployment is synced again, a resynced ReplicaSet is not | `handlers::tests::a_deployment_resync_enqueues_it`, `handlers::tests::replica_sets_wake_their_owner_and_orphans_every_matching_deployment` |
//!
//! Where kcm-rs differs on purpose:
//! * one write per object per sync. Upstream's later status writes in a sync reuse a stale
//!   resourceVersion and fail with a conflict; the end state is the same, reached one sync sooner
//!   (`plan` docs). The status is written last: if a ReplicaSet write after the creation of the new
//!   ReplicaSet fails (other than a rolling update's old scale-down, which is best-effort as
//!   upstream's), or in a rollback sync, that sync's status is not written, so the Progressing
//!   reason NewReplicaSetCreated can be skipped for that rollout; upstream writes it right after
//!   the creation. The end state is the same.
//! * a create answered AlreadyExists with a ReplicaSet that is the Deployment's and has its template
//!   ends the sync and plans again at once; upstream goes on with that ReplicaSet in the same sync.
//! * a stuck rollout less than a second from its deadline is looked at again at the deadline plus a
//!   second, not every few milliseconds with the rate limiter (`progress::requeue_stuck`).
//! * errors are retried with the rate limiter without upstream's limit of 15 retries; an invalid
//!   selector or strategy gets a Warning event instead of 15 retries and a log line.
//! * an unparsable revision sorts as revision 0 in the history cleanup (upstream's comparator can
//!   cycle there; `replica_sets` docs).
//! * a ReplicaSet's share in proportional scaling multiplies its size by the new maximum in 64
//!   bits. Upstream does it in int32, which wraps once the product passes MaxInt32 (from about
//!   46,341 replicas on both sides) and then shrinks ReplicaSets during a scale-up or sizes them
//!   below 0, which the API refuses. ReplicaSets of 50,000, 40,000 and 10,000 scaled to 120,000
//!   become 102,950, 5,050 and 12,000 upstream; 60,000, 48,000 and 12,000 here
//!   (`scale::replica_set_fraction`, `scale::tests::large_shares_are_computed_without_wrapping`).
//!   Everywhere else int32 wraps as upstream's does.
//! * a pod deleted under a Recreate Deployment wakes it at once; upstream first LISTs the
//!   Deployment's ReplicaSets from the API server (a live request per pod delete) and wakes it only
//!   when the cache holds none of its pods. Only the number of syncs and requests differs
//!   (`handlers::tests::pod_deletions_wake_only_recreate_deployments`).
//! * a maxSurge percentage so large that its share of the replicas leaves int64 converts as on
//!   amd64 (the minimum int64), where Go leaves the result to the platform (`spec::scaled_value`).
#![forbid(unsafe_code)]

pub mod annotations;
pub mod claims;
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
pub use plan::{Actions, Decision, PlanError, SyncInput, SyncPlan, plan_sync, plan_sync_with};
