//! The Deployment controller (upstream `pkg/controller/deployment`, Kubernetes 1.36).
//!
//! Start here: `plan.rs` decides, `executor.rs` writes, `controller.rs` wires. Read [`plan_sync`]
//! first: a pure function from what the caches show (the Deployment and its ReplicaSets) to a
//! [`SyncPlan`]: ReplicaSet creations, updates and deletions, the Deployment's status or, for a
//! rollback, its spec, and the events. Its steps follow upstream's files: `rolling.rs`,
//! `recreate.rs`, `scale.rs`, `rollback.rs`, `progress.rs`, `cleanup.rs`; `spec.rs` resolves
//! maxSurge and maxUnavailable, `hash.rs` computes upstream's `pod-template-hash`. `executor.rs`
//! carries a plan out; [`DeploymentController`] wires the informers, the handlers (`handlers.rs`),
//! the work queue and the workers; `shadow.rs` compares plans with what upstream did (`--shadow`).
//!
//! Which test holds each behaviour carried over from upstream: `crates/deployment/TESTING.md`. The
//! whole controller is compared with upstream's on a local control plane by
//! `e2e/tests/deployment.rs` and by upstream's own specs (`make conformance`).
//!
//! Where kcm-rs differs on purpose (the end state is upstream's in each case):
//! * one write per object per sync, the status last (`plan.rs`): upstream's later status writes
//!   in a sync reuse a stale resourceVersion and conflict. When a ReplicaSet write after the new
//!   ReplicaSet's creation fails (other than a rolling update's best-effort old scale-down), or in
//!   a rollback sync, the status is not written, so the Progressing reason NewReplicaSetCreated
//!   can be skipped for that rollout.
//! * a create answered AlreadyExists with the Deployment's own ReplicaSet of the same template ends
//!   the sync and plans again at once; upstream goes on with that ReplicaSet in the same sync.
//! * a stuck rollout less than a second from its deadline is looked at again at the deadline plus a
//!   second, not every few milliseconds (`progress::requeue_stuck`).
//! * errors are retried without upstream's limit of 15, an invalid selector or strategy (an
//!   unparsable maxSurge percentage) among them, logged at each try as upstream's are. Such a plan
//!   error writes nothing, claims included, where upstream has adopted and released ReplicaSets
//!   before it finds the strategy wrong.
//! * an unparsable revision sorts as revision 0 in the history cleanup, where upstream's comparator
//!   can cycle (`replica_sets.rs`).
//! * proportional scaling multiplies in 64 bits where upstream's int32 wraps past about 46,341
//!   replicas on both sides (`scale::replica_set_fraction`,
//!   `scale::tests::large_shares_are_computed_without_wrapping`); everywhere else int32 wraps as
//!   upstream's does.
//! * a pod deleted under a Recreate Deployment wakes it at once, without upstream's live LIST of its
//!   ReplicaSets per pod delete (`handlers::tests::pod_deletions_wake_only_recreate_deployments`).
//! * a maxSurge percentage whose share leaves int64 converts as on amd64, where Go leaves it to the
//!   platform (`spec::scaled_value`).
#![forbid(unsafe_code)]

mod annotations;
mod cleanup;
mod conditions;
mod controller;
mod executor;
mod handlers;
mod hash;
mod new_rs;
mod plan;
mod progress;
mod recreate;
mod replica_sets;
mod rollback;
mod rolling;
mod scale;
mod shadow;
mod spec;
mod status;
mod work;

#[cfg(test)]
mod fixtures;

pub use controller::{COMPONENT, DeploymentController, DeploymentOptions};
pub use executor::SyncError;
pub use hash::compute_hash;
pub use plan::{Actions, Decision, PlanError, SyncInput, SyncPlan, plan_sync, plan_sync_with};
