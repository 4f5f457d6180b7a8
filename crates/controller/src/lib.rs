//! Machinery shared by the workload controllers, after upstream's `pkg/controller` helpers: the pod as
//! the controllers cache it (`compact_pod`: a typed projection decoded from the watch's JSON or
//! protobuf, tested in `compact_pod::tests` and `compact_pod::protobuf_tests`), expectations, pod
//! control with events, controller-reference claims, the scale-down ranking, slow start, pod
//! predicates, and the worker loop every controller runs (`worker`: panic isolation and a bounded
//! shutdown). Decisions here are pure functions; the few functions that
//! write (`pod_control`, `claim`, `events`, and `writes`, which decodes only the name and resourceVersion
//! of a write's answer) are the executors' building blocks.
#![forbid(unsafe_code)]

pub mod claim;
pub mod clock;
pub mod compact_pod;
pub mod consistency;
pub mod errors;
pub mod event_correlator;
pub mod events;
pub mod expectations;
pub mod features;
pub mod index;
pub mod pod_control;
pub mod pod_util;
pub mod ranking;
pub mod ref_manager;
pub mod shadow;
pub mod slow_start;
pub mod status_writer;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod worker;
pub mod writes;

pub use clock::{Clock, SystemClock};
pub use compact_pod::Pod as CompactPod;
pub use errors::ControlError;
pub use events::EventRecorder;
pub use expectations::Expectations;
pub use features::FeatureGates;
pub use pod_control::{KubePodControl, PodControl};
pub use ref_manager::{Claim, Owner};
pub use worker::{Reconciler, WorkerOptions, run_workers};
pub use writes::Written;
