//! The pod garbage collector (upstream `pkg/controller/podgc`, the
//! `pod-garbage-collector-controller` of Kubernetes 1.36). Every 20 s it force-deletes, after
//! setting their phase to Failed if they had not ended:
//! - the oldest terminated pods beyond `--terminated-pod-gc-threshold` (12,500), evicted ones first;
//! - terminating pods of a node that is not ready and tainted `node.kubernetes.io/out-of-service`;
//! - pods bound to a node that no longer exists, once the API server confirms it 40 s after the
//!   cache first missed it, marked with a `DisruptionTarget` condition that Job pod failure
//!   policies match;
//! - terminating pods that were never scheduled.
//!
//! kube-controller-manager runs it by default; kcm-rs runs it only when asked
//! (`--controllers=*,pod-garbage-collector-controller`), for clusters without
//! kube-controller-manager, where pods of deleted KWOK nodes would otherwise stay forever.
//!
//! Start here: [`decide`] (`decide.rs`) is a pass's decision, a pure function of the cached pods
//! and nodes; `quarantine.rs` holds missing nodes back; `force_delete.rs` is the one write;
//! `controller.rs` runs a pass on the skeleton's queue, one key requeued after each pass.
//!
//! In shadow mode a pass writes nothing: each pod it would force-delete stands in `/debug/shadow`
//! (`shadow.rs`) until upstream's collector deletes it.
#![forbid(unsafe_code)]

mod controller;
mod decide;
mod force_delete;
mod metrics;
mod quarantine;
mod shadow;

pub use controller::{
    CHECK_PERIOD, COMPONENT, DEFAULT_TERMINATED_THRESHOLD, Options, PodGarbageCollector, QUEUE_NAME, ROLE,
};
pub use decide::{NodeState, OUT_OF_SERVICE_TAINT, Plan, Reason, decide, is_terminated, orphans};
pub use force_delete::{Disruption, NODE_GONE, failed_status, force_delete};
pub use metrics::PodGcMetrics;
pub use quarantine::{QUARANTINE, Quarantine};
