//! The wall clock of tests.

use std::{
    sync::atomic::{AtomicI64, Ordering},
    time::Duration,
};

use controller::Clock;
use k8s_openapi::jiff::Timestamp;

/// A [`Clock`] that stands still until the test (or [`crate::ApiServer`], for writes a rule says
/// take time) moves it, so the timestamps a sync compares with and writes are exact.
#[derive(Debug)]
pub struct FakeClock {
    /// Nanoseconds since the epoch: an atomic, so the server can move it while an executor reads it.
    nanos: AtomicI64,
}

impl FakeClock {
    pub fn at(t: Timestamp) -> Self {
        FakeClock {
            nanos: AtomicI64::new(nanos(t)),
        }
    }

    pub fn set(&self, t: Timestamp) {
        self.nanos.store(nanos(t), Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_nanos()).expect("a duration shorter than 292 years");
        self.nanos.fetch_add(by, Ordering::SeqCst);
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::at(Timestamp::UNIX_EPOCH)
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanosecond(i128::from(self.nanos.load(Ordering::SeqCst))).expect("a valid time")
    }
}

fn nanos(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanosecond()).expect("a time between 1677 and 2262")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_only_when_told() {
        let clock = FakeClock::at(Timestamp::from_second(100).unwrap());
        assert_eq!(clock.now(), Timestamp::from_second(100).unwrap());
        clock.advance(Duration::from_millis(1500));
        assert_eq!(clock.now(), Timestamp::from_millisecond(101_500).unwrap());
        clock.set(Timestamp::UNIX_EPOCH);
        assert_eq!(clock.now(), Timestamp::UNIX_EPOCH);
    }
}
