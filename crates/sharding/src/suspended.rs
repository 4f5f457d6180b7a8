//! How long the machine has been suspended since boot: `CLOCK_BOOTTIME` minus `CLOCK_MONOTONIC`.
//!
//! Every timer and `Instant` in the process runs on `CLOCK_MONOTONIC`, which stops while a VM or host
//! is suspended. A holder suspended past its lease would wake to a write fence that still reads open
//! for the rest of its window, beside the replica that took the shard meanwhile. The fence shortens
//! each window by the suspend that happened since it was set. (SIGSTOP, cgroup freezes and live
//! migration keep both clocks running; upstream's Go clock is monotonic too, so KCM has the same gap.)
//! Elsewhere than Linux and Android there is no `CLOCK_BOOTTIME`; there no suspend is counted, the
//! gap KCM has.

use std::{sync::Arc, time::Duration};

#[cfg(any(target_os = "linux", target_os = "android"))]
use rustix::time::{ClockId, Timespec, clock_gettime};

/// Time spent suspended since boot; injected, so that tests can suspend.
pub type SuspendClock = Arc<dyn Fn() -> Duration + Send + Sync>;

/// The machine's own.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn system() -> SuspendClock {
    Arc::new(|| {
        let boot = duration(clock_gettime(ClockId::Boottime));
        let monotonic = duration(clock_gettime(ClockId::Monotonic));
        boot.saturating_sub(monotonic)
    })
}

/// Without `CLOCK_BOOTTIME`: nothing counted.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn system() -> SuspendClock {
    Arc::new(|| Duration::ZERO)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn duration(t: Timespec) -> Duration {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(t.tv_nsec).unwrap_or(0);
    Duration::new(secs, nanos)
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_reads_a_plausible_value() {
        let suspended = system()();
        // Less than the time since boot, which CLOCK_BOOTTIME counts: a sanity bound, not a figure.
        let boot = duration(clock_gettime(ClockId::Boottime));
        assert!(
            suspended <= boot,
            "{suspended:?} suspended of {boot:?} since boot"
        );
    }
}
