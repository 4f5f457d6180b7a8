//! The ReplicaSet controller (upstream `pkg/controller/replicaset`, Kubernetes 1.36).
//!
//! Behaviour carried over, each with the test that holds it:
//!
//! | behaviour | test |
//! | --- | --- |
//! | only active pods count: Failed and terminating pods are replaced at once | `plan::tests::failed_and_terminating_pods_are_replaced_at_once` |
//! | scale up by at most 500 (`BurstReplicas`) per sync, in slow-start batches | `plan::tests::scales_up_to_the_desired_count_capped_by_the_burst`, `controller::slow_start` tests |
//! | no creates or deletes while expectations are pending or the ReplicaSet is being deleted | `plan::tests::does_not_act_while_expectations_are_pending_or_while_being_deleted` |
//! | scale-down ranking with all of upstream's tie-breakers, sidecar restarts included, as a total order that agrees with upstream wherever upstream's own order is consistent (where they can differ: `controller::ranking` docs) | `plan::tests::scales_down_not_ready_pods_first`, `controller::ranking::tests` (property tests: total order, pairwise agreement with upstream; the 28-pod reproduction) |
//! | a sync that panics is caught, logged with the key, counted (`kcm_rs_controller_sync_panics_total`) and retried with backoff; the worker goes on; shutdown waits at most 30 s for syncs in flight | `controller::worker::tests` |
//! | adoption of matching orphans, release of pods that stop matching, never touching another controller's pods | `plan::tests::adopts_matching_orphans_and_releases_pods_that_stopped_matching`, `plan::tests::never_touches_pods_controlled_by_someone_else` |
//! | an adoption that finds its pod deleted (NotFound) is skipped, and the same sync scales and writes status with the pods it did claim (upstream `ClaimObject`) | `executor::tests::an_adoption_that_finds_the_pod_gone_is_skipped_and_the_sync_still_scales_and_writes_status`, `plan::tests::adoptions_that_find_the_pod_gone_are_decided_again_without_it` |
//! | status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (minReadySeconds), terminatingReplicas, observedGeneration | `plan::tests::status_counts_fully_labeled_ready_and_available_pods`, `plan::tests::unchanged_status_is_not_written` |
//! | a requeue when a ready pod will become available: the pod due first when the status was computed, re-measured after the status write (upstream `FindMinNextPodAvailabilityCheck`); minReadySeconds when no pod gives a time | `plan::tests::status_counts_fully_labeled_ready_and_available_pods`, `plan::tests::the_availability_requeue_picks_the_pod_at_the_status_time_and_measures_from_now` |
//! | status and that requeue as of the clock after scaling, not the sync's start (a 500-pod scale-up takes seconds) | `executor::tests::status_and_the_availability_requeue_use_the_time_after_scaling` |
//! | `ReplicaFailure` (FailedCreate / FailedDelete) added on a failed scale, kept as first written, removed after a clean sync | `plan::tests::replica_failure_*` |
//! | messages as upstream's `RealPodControl`: ReplicaFailure shows `unable to delete pods: <err>`, the server's message for a failed create, `unable to create pods, no labels`; events `Error creating: <err>` / `Error deleting: <err>` (none for NotFound deletes, terminating namespaces, missing labels) | `executor::tests::a_failed_delete_writes_replica_failure_with_upstreams_message`, `controller::pod_control::tests` |
//! | pod deletes carry no UID precondition (upstream's empty DeleteOptions): a pod recreated under the same name is deleted, not a FailedDelete | `controller::pod_control::tests::a_delete_sends_no_uid_precondition_so_a_reused_name_is_deleted` |
//! | an invalid selector is reported and not retried; other ReplicaSets go on | `plan::tests::an_invalid_selector_is_an_error_naming_the_replicaset` |
//! | informer handlers: pod add/update/delete map to the owning or matching ReplicaSets; a changed controllerRef enqueues both | `handlers::tests` |
//! | reading its own writes (1.36 `StaleControllerConsistencyReplicaSet`): no sync while the pod or ReplicaSet cache is older than a create, adoption patch or status write this controller made; counted in `replicaset_controller_stale_sync_skips_total` | `controller::consistency` tests, `executor::tests::adoption_patches_feed_the_consistency_store`, `informer::shared_tests` (last synced resourceVersion) |
//! | `replicaset_controller_sorting_deletion_age_ratio` | `plan::tests::deletion_age_ratio_is_each_chosen_ready_pods_age_over_the_youngest_ready_pods` |
//! | `--feature-gates`: `PodDeletionCost` off ignores the cost in the ranking, `DeploymentReplicaSetTerminatingReplicas` off leaves `terminatingReplicas` unset, `StaleControllerConsistencyReplicaSet` off skips the read-your-writes check | `plan::tests::feature_gates_switch_the_deletion_cost_and_terminating_replicas_off` |
//! | everything end to end, compared with upstream | `e2e/tests/replicaset.rs` |
#![forbid(unsafe_code)]

pub mod controller;
pub mod executor;
#[cfg(test)]
mod fake_server;
pub mod handlers;
pub mod plan;
pub mod shadow;
pub mod status;

pub use controller::{DEFAULT_WORKERS, ReplicaSetController, ReplicaSetOptions};
pub use plan::{BURST_REPLICAS, ReplicaChange, SyncInput, SyncPlan, plan_sync};
