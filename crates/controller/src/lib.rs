//! What the workload controllers share, after upstream's `pkg/controller` helpers and
//! controller-runtime's one `Controller` for every reconciler.
//!
//! Start here: [`Controller`] and [`run`] (`skeleton.rs`) are how every controller runs: wait for the
//! handlers' initial lists, run the workers ([`run_workers`]: panic isolation, a bounded drain).
//! [`Build`] is how every controller is made, from one [`Context`] (`context.rs`). A controller
//! crate supplies its informers and handlers (in a [`Wiring`]) and the [`Steps`] of its sync, which
//! [`sync`] (`steps.rs`) runs in the one order; it plans with what this crate decides and executes
//! with what it writes:
//! - deciding, pure: claims over candidates ([`plan_claims`], [`decide`]), the scale-down ranking
//!   ([`pods_to_delete`]), slow start, pod predicates (`pod_util`), expectations, feature gates;
//! - finding: the owner index and candidates (`owners.rs`);
//! - writing: [`execute_claims`] with [`recheck_owner`], pod control with events ([`KubePodControl`],
//!   `events`: client-go's recorder and correlator), API writes that decode only the name and
//!   resourceVersion of the answer (`writes`), reading one's own writes ([`ConsistencyStore`]);
//! - comparing, for shadow mode: `shadow` (what upstream did against what kcm-rs planned);
//! - discovering what the API server serves, as client-go does (`discovery`): the namespace
//!   controller and the garbage collector act on every kind, not on a few known ones.
//!
//! The pod as the controllers cache it is `compact_pod`: a typed projection decoded from the watch's
//! JSON or protobuf.
#![forbid(unsafe_code)]

mod claim;
mod clock;
pub mod compact_pod;
mod consistency;
mod context;
pub mod discovery;
mod errors;
pub mod events;
mod expectations;
pub mod features;
mod metrics;
mod owners;
mod path_segment;
mod pod_control;
pub mod pod_util;
mod ranking;
mod ref_manager;
pub mod shadow;
mod skeleton;
mod slow_start;
mod steps;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod worker;
pub mod writes;

pub use claim::{ClaimOutcome, ClaimWrites, PodClaims, execute_claims, get_verb, recheck_owner};
pub use clock::{Clock, SystemClock};
pub use compact_pod::Pod as CompactPod;
pub use consistency::{ConsistencyStore, StaleCache};
pub use context::{Build, CommonOptions, Context, DEFAULT_WORKERS};
pub use errors::{ControlError, NAMESPACE_TERMINATING_CAUSE, RefusedHere};
pub use events::{EventRecorder, PlannedEvent};
pub use expectations::Expectations;
pub use features::FeatureGates;
pub use metrics::{ControllerMetrics, SyncMetrics};
pub use owners::{
    OWNER_INDEX, candidates, controlled_by, controlled_pods, orphans_in, owned_by, owner_index,
    pod_candidates, resolve_controller, selecting,
};
pub use path_segment::{InvalidPathSegment, path_segment};
pub use pod_control::{KubePodControl, NoWrites, PodControl, object_reference, pod_from_template};
pub use ranking::{RankingOptions, pods_to_delete, pods_to_delete_with};
pub use ref_manager::{Claim, ClaimPlan, Owner, adopt_patch, decide, plan_claims, release_patch};
pub use skeleton::{Controller, Probe, StartGate, Started, Wiring, run, run_gated, spawn, spawn_gated};
pub use slow_start::slow_start_batch;
pub use steps::{Comparison, Decided, Freshness, Steps, sync};
pub use worker::{DEFAULT_DRAIN_TIMEOUT, Reconciler, WorkerOptions, run_workers};
pub use writes::Written;
