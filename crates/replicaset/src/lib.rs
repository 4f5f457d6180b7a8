//! The ReplicaSet controller (upstream `pkg/controller/replicaset`, Kubernetes 1.36), and over
//! ReplicationControllers the replication manager (`pkg/controller/replication`), which upstream
//! builds from the same base controller behind conversion adapters: [`ReplicationManager`], the
//! seam in `kind.rs` ([`ReplicaKind`]).
//!
//! Start here: `plan.rs` decides, `executor.rs` writes, `controller.rs` wires. Read [`plan_sync`]
//! first: a pure function from what the caches show (the ReplicaSet and the pods it owns or could
//! adopt) to a [`SyncPlan`]: the pods to adopt or release, to create or delete, and the status to
//! write. The executor (`executor.rs`) carries a plan out against the API server.
//! [`ReplicaSetController`] wires the informers, the handlers (`handlers.rs`) that turn pod and
//! ReplicaSet changes into keys, the work queue and the workers; `shadow.rs` compares plans with what
//! upstream did instead of carrying them out (`--shadow`).
//!
//! Which test holds each behaviour carried over from upstream: `crates/replicaset/TESTING.md`. The
//! whole controller is compared with upstream's on a local control plane by `e2e/tests/replicaset.rs`.
//!
//! Where kcm-rs differs on purpose:
//! * pods equal in every tier of the scale-down ranking go by UID, where upstream leaves them to its
//!   unstable sort; where upstream's comparison has a cycle, kcm-rs's merge sort (which Rust's sorts,
//!   liable to panic on such a comparison, could not be) gives some order, as Go's does
//!   (`controller::ranking`).
//! * a sync that panics is logged, counted and retried, and the worker goes on, where upstream's
//!   process would crash (`controller::worker`).
#![forbid(unsafe_code)]

mod controller;
mod executor;
mod handlers;
mod kind;
mod metrics;
mod plan;
mod shadow;
mod status;
mod status_writer;

pub use controller::{COMPONENT, QUEUE_NAME, ReplicaSetController, ReplicaSetOptions, ReplicationManager};
pub use executor::SyncError;
pub use kind::ReplicaKind;
pub use metrics::{NoReplicaSetMetrics, ReplicaSetMetrics};
pub use plan::{BURST_REPLICAS, PlanError, ReplicaChange, SyncInput, SyncPlan, plan_sync, plan_sync_for};
