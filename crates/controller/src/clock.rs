//! Wall-clock time for decisions that compare with API timestamps (readiness age, availability).
//! Durations and deadlines use tokio's clock instead, so tests can pause it.

use k8s_openapi::jiff::Timestamp;

/// Where controllers get "now" from. Plans take `now` as an argument; only executors call this.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}
