//! Machinery shared by the workload controllers, after upstream's `pkg/controller` helpers: the pod as
//! the controllers cache it (`compact_pod`: a typed projection decoded from the watch's JSON or
//! protobuf, tested in `compact_pod::tests` and `compact_pod::protobuf_tests`), expectations, pod
//! control with events, controller-reference claims, the scale-down ranking, slow start, pod
//! predicates, and the worker loop every controller runs (`worker`: panic isolation and a bounded
//! shutdown). Decisions here are pure functions; the few functions that
//! write (`pod_control`, `claim`, `events`, and `writes`, which decodes only the name and resourceVersion
//! of a write's answer) are the executors' building blocks.
#![forbid(unsafe_code)]

mod claim;
mod clock;
pub mod compact_pod;
mod consistency;
mod errors;
pub mod events;
mod expectations;
pub mod features;
mod metrics;
mod owners;
mod pod_control;
pub mod pod_util;
mod ranking;
mod ref_manager;
pub mod shadow;
mod skeleton;
mod slow_start;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod worker;
pub mod writes;

pub use claim::{ClaimOutcome, ClaimWrites, PodClaims, execute_claims, recheck_owner};
pub use clock::{Clock, SystemClock};
pub use compact_pod::Pod as CompactPod;
pub use consistency::{ConsistencyStore, StaleCache};
pub use errors::{ControlError, NAMESPACE_TERMINATING_CAUSE};
pub use events::{EventRecorder, PlannedEvent};
pub use expectations::Expectations;
pub use features::FeatureGates;
pub use metrics::{ControllerMetrics, SyncMetrics};
pub use owners::{
    OWNER_INDEX, candidates, controlled_by, orphans_in, owned_by, owner_index, resolve_controller, selecting,
};
pub use pod_control::{KubePodControl, NoWrites, PodControl, object_reference, pod_from_template};
pub use ranking::{RankingOptions, pods_to_delete, pods_to_delete_with};
pub use ref_manager::{Claim, ClaimPlan, Owner, adopt_patch, decide, plan_claims, release_patch};
pub use skeleton::{Controller, Started, Wiring, run, spawn};
pub use slow_start::slow_start_batch;
pub use worker::{DEFAULT_DRAIN_TIMEOUT, Reconciler, WorkerOptions, run_workers};
pub use writes::Written;
