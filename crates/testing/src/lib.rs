//! Test support for kcm-rs's crates, used only as a dev-dependency.
//!
//! Executors are tested against [`ApiServer`], an in-memory API server behind kube's real `Client`,
//! so a test goes through kube's URL building, encoding and error decoding as production does, and
//! asserts on what the server holds afterwards rather than on calls made to a mock. A scripted mock
//! (tower-test's, as kube's own tests use) only replays answers; the controllers' tests need state
//! that moves with their writes: a patch answered with the next resourceVersion, a deleted pod gone
//! from the next read, a finalizer that keeps a deleted object until it is patched away.
//! [`FakeClock`] is the wall clock the server and the executors share, and the builders make the
//! objects the controllers' tests start from.
#![forbid(unsafe_code)]

mod api_server;
mod clock;
mod queue;
mod replica_set;

pub use api_server::{ApiServer, Request, Verb, When};
pub use clock::FakeClock;
pub use controller::testing::{PodBuilder, pod};
pub use queue::drain;
pub use replica_set::{ReplicaSetBuilder, replica_set};
