//! The TTL-after-finished controller (upstream `pkg/controller/ttlafterfinished`, Kubernetes 1.36):
//! deletes a finished Job `spec.ttlSecondsAfterFinished` seconds after it finished, with its pods
//! (foreground propagation).
//!
//! Start here: [`decide`] (`expiry.rs`) is the whole decision, a pure function of the Job and the
//! time: nothing, look again after the TTL's remainder, or delete. `controller.rs` wires the shared
//! Job informer and the queue onto the skeleton, and its sync decides on the cached Job; a Job due
//! goes to [`delete_if_due`] (`cleanup.rs`), which decides again on a fresh read from the API server
//! and deletes with the UID it read as a precondition, as upstream does: a TTL raised, or a Job re-created under the same name, after the
//! cache last saw it is not deleted. In shadow mode (`--shadow`) a Job whose TTL ran out is a
//! disagreement until upstream deletes it.
//!
//! Upstream records no events here, and neither does kcm-rs. The deletion's lateness is
//! `ttl_after_finished_controller_job_deletion_duration_seconds`, as upstream's.
#![forbid(unsafe_code)]

mod cleanup;
mod controller;
mod error;
mod expiry;
mod metrics;

pub use cleanup::{Cleanup, delete_if_due};
pub use controller::{COMPONENT, QUEUE_NAME, TtlAfterFinishedController, TtlAfterFinishedOptions};
pub use error::SyncError;
pub use expiry::{Decision, ExpiryError, decide, needs_cleanup};
pub use metrics::{NoTtlMetrics, TtlMetrics};
