//! The garbage collector (upstream `pkg/controller/garbagecollector`, Kubernetes 1.36): deletes
//! objects whose owners are all gone, finishes foreground deletions (`foregroundDeletion`: the
//! dependents first, then the owner) and orphaning ones (`orphan`: the dependents lose their
//! references, then the owner goes).
//!
//! kube-controller-manager runs it by default; kcm-rs runs it only when asked
//! (`--controllers=*,garbage-collector-controller`), for clusters without kube-controller-manager
//! (envtest, slim planes), where `kubectl delete deployment` otherwise leaves its ReplicaSets and
//! pods, and every foreground deletion (the TTL-after-finished controller's among them) hangs.
//!
//! Start here: [`Graph::apply`] (`graph.rs`) is how the collector learns who owns whom, a pure
//! state machine over the monitors' events; [`decide`] (`decide.rs`) is what it does with an object
//! once its owners are looked up. `collect.rs` is a worker's pass over one object: everything it
//! deletes it first reads live from the API server, with its owners, as upstream's does; the graph
//! only says where to look. `monitors.rs` watches every resource discovery finds deletable as
//! metadata only; `controller.rs` wires the queues, the graph task and the discovery loop onto
//! the skeleton. In shadow mode every decision is made and none written: `shadow.rs` files what
//! would be with `/debug/shadow` until upstream's collector has done it.
#![forbid(unsafe_code)]

mod absent;
mod collect;
mod controller;
mod decide;
mod error;
mod graph;
mod identity;
mod monitors;
mod operations;
mod shadow;

pub use absent::{ABSENT_OWNERS, AbsentOwners};
pub use controller::{
    COMPONENT, DEFAULT_WORKERS, DELETE_QUEUE, GarbageCollector, INVALID_NAMESPACE, ORPHAN_QUEUE, ROLE,
    SYNC_PERIOD,
};
pub use decide::{Action, Dependents, OwnerState, Policy, decide};
pub use error::GcError;
pub use graph::{Change, Effects, Graph, Node, Observed};
pub use identity::{FOREGROUND, Identity, ORPHAN};
pub use monitors::{IGNORED, deletable};
