//! Profiles on demand, as KCM serves them under `--profiling`, in the pprof protobuf `go tool pprof`
//! reads: CPU (`/debug/pprof/profile?seconds=N`) and heap (`/debug/pprof/heap?seconds=N`, `heap.rs`). CPU
//! sampling is `pprof`'s (SIGPROF at [`SAMPLE_HZ`], the stacks symbolized in the process); that
//! profile is encoded here (`proto.rs`, `encode.rs`).
//!
//! There is no contention profile: `--contention-profiling` turns on Go's block profile, which has
//! no counterpart in a Rust process; the flag is accepted and says so.

mod encode;
mod heap;
mod proto;

pub use heap::heap_profile;

use std::{sync::mpsc, time::Duration};

use prost::Message as _;

/// Samples per second: Go's CPU profiler's rate (`runtime/pprof`).
pub const SAMPLE_HZ: i32 = 100;
/// Frames from these libraries are not unwound from the signal handler: `pprof`'s advice, against
/// deadlocks in the system unwinder and vDSO's broken unwind tables. `pprof` drops a sample whose
/// library path merely contains one of these, the executable included: hence file names anchored
/// at a slash, or a binary installed as `/opt/glibc-tools/kcm-rs` would profile as empty.
const BLOCKLIST: [&str; 5] = ["/libc.so", "/libc-", "/libgcc_s.so", "/libpthread", "linux-vdso"];
/// How long a profile lasts when `seconds` is absent, zero or not a number (Go's `pprof.Profile`).
pub const DEFAULT_SECONDS: u64 = 30;

/// Why no profile was taken.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Another profile is being taken (Go's text).
    #[error("cpu profiling already in use")]
    InUse,
    #[error("{0}")]
    Profiler(pprof::Error),
    #[error("the profiling thread ended: {0}")]
    Thread(tokio::task::JoinError),
}

/// Samples the whole process for `duration` (less if the returned future is dropped: the caller
/// went away) and returns the profile, pprof protobuf.
pub async fn cpu_profile(duration: Duration) -> Result<Vec<u8>, ProfileError> {
    // Dropping `_stop` (this future dropped) wakes the sampling thread early.
    let (_stop, stopped) = mpsc::channel::<()>();
    // The profiler's guard and report hold raw frame pointers (not `Send`): one blocking thread
    // starts, waits and reports.
    tokio::task::spawn_blocking(move || {
        let guard = pprof::ProfilerGuardBuilder::default()
            .frequency(SAMPLE_HZ)
            .blocklist(&BLOCKLIST)
            .build()
            .map_err(|e| match e {
                pprof::Error::Running => ProfileError::InUse,
                e => ProfileError::Profiler(e),
            })?;
        let _ = stopped.recv_timeout(duration);
        let report = guard.report().build().map_err(ProfileError::Profiler)?;
        Ok(encode::profile(&report).encode_to_vec())
    })
    .await
    .map_err(ProfileError::Thread)?
}

/// The seconds a request asks for, if it asks: Go's rule (a positive integer). The heap profile's
/// window.
pub fn asked_seconds(query: Option<&str>) -> Option<Duration> {
    query
        .and_then(|q| form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "seconds"))
        .and_then(|(_, v)| v.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
}

/// The CPU profile's seconds: as asked, else [`DEFAULT_SECONDS`].
pub fn seconds(query: Option<&str>) -> Duration {
    asked_seconds(query).unwrap_or(Duration::from_secs(DEFAULT_SECONDS))
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
