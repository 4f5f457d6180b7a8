//! The namespace controller (upstream `pkg/controller/namespace`, Kubernetes 1.36): empties a
//! namespace being deleted of every namespaced object, then removes its `kubernetes` finalizer so
//! that the API server can delete it.
//!
//! kube-controller-manager runs it by default; kcm-rs runs it only when asked
//! (`--controllers=*,namespace-controller`), for clusters without kube-controller-manager (envtest,
//! slim planes), where deleted namespaces otherwise stay `Terminating` for ever.
//!
//! Start here: [`delete`] (`deleter.rs`) is one pass over a namespace, step by step. The decisions
//! in it are pure functions: which kinds to empty (the namespaced ones of
//! `controller::discovery`, as client-go discovers them), what leftovers mean and how long to give them ([`left_over`],
//! [`grace_estimate`]), the five conditions the namespace carries ([`Findings`]) and the finalize
//! request ([`finalized`]). Unlike the workload controllers', a pass is not one plan and its
//! writes: each kind's deletion is a request whose answer decides the next, so the pass reads and
//! writes the API server as it goes, as upstream's does. `controller.rs` wires the Namespace
//! informer and the queue onto the skeleton.
//!
//! Upstream records no events here, and neither does kcm-rs.
#![forbid(unsafe_code)]

mod conditions;
mod content;
mod controller;
mod deleter;
mod error;

pub use conditions::{CONDITION_TYPES, Findings};
pub use content::{FINALIZER_ESTIMATE_SECONDS, Outcome, Remaining, grace_estimate, left_over, within_grace};
pub use controller::{
    COMPONENT, DEFAULT_SYNC_PERIOD, DEFAULT_WORKERS, DELETION_GRACE, NamespaceController, NamespaceOptions,
    QUEUE_NAME, ROLE, requeue_after,
};
pub use deleter::{Deletion, FINALIZER, delete, finalized};
pub use error::DeleteError;
