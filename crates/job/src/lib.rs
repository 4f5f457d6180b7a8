//! The Job controller (upstream `pkg/controller/job`, Kubernetes 1.36).
//!
//! Start here: `plan/mod.rs` decides, `executor/mod.rs` writes, `controller.rs` wires (informers,
//! handlers, the work queue, workers). Read [`plan_sync`] first: one sync as a pure function of
//! what the caches show, its steps in upstream's order, one module each under `plan/`. The
//! executor carries the plan out around the real writes; `orphans.rs` removes the tracking
//! finalizer from pods that no Job sync will unfinalize. Which test holds which behaviour is in
//! `TESTING.md`, beside this crate's `Cargo.toml`.
//!
//! The controller's waits (the pod-failure backoff, its cap, the batch period) are upstream's unless
//! a test asks for shorter ones through [`JobDelays`], as upstream's integration tests do.
//!
//! Where kcm-rs differs on purpose:
//! * a pod relabelled out of its Job's selector while the Job is being deleted loses the tracking
//!   finalizer (the orphan worker removes it, the owner reference stays). Upstream 1.36 neither
//!   releases it nor unfinalizes it, and a foreground deletion then never completes
//!   (`orphans::stray_of_deleting_job`).
//! * pods equal in every tier of the deletion order are deleted by UID, then name; upstream leaves
//!   them to an unstable sort (`active_pods`).
//! * events' `involvedObject` carries no `resourceVersion`: the recorder's reference is built from
//!   the `Owner`, which holds none. Aggregation does not key on it, so the events are the same.
//! * shadow mode's backoff record is rebuilt from watched pods (`observed_finishes`), not counted
//!   in the sync; a pod deleted and gone before the shadow's informer saw it finish is missing.
#![forbid(unsafe_code)]

mod active_pods;
mod backoff;
mod conditions;
mod controller;
mod delays;
mod executor;
mod failpoints;
mod finalizer_expectations;
mod finished_jobs;
mod handlers;
mod indexed;
mod intervals;
mod metrics;
mod observed_finishes;
mod orphans;
mod ownership;
mod plan;
mod pod_failure_policy;
mod shadow;
mod spec;
mod success_policy;

#[cfg(test)]
mod fixtures;

pub use backoff::BackoffRecord;
pub use controller::{COMPONENT, JobController, JobOptions, QUEUE_NAME};
pub use delays::{
    DEFAULT_POD_FAILURE_BACKOFF, JobDelays, JobDelaysError, MAX_POD_FAILURE_BACKOFF, SYNC_JOB_BATCH_PERIOD,
};
pub use metrics::JobMetrics;
pub use plan::{Decision, FullPlan, PlanError, SyncInput, plan_sync};
pub use spec::JOB_TRACKING_FINALIZER;
