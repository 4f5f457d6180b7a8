//! Crash points in the finalizer-tracking protocol, for the e2e suite that kills the controller
//! where a lost write would count a pod twice or leave it holding the tracking finalizer.
//!
//! A unit test can stop an executor between two writes; only a real process killed on a real
//! control plane shows that a new one converges from what the API server kept. tikv's `fail` crate
//! supplies the switchboard (`FAILPOINTS=name=return`, read by the binary at start); its own
//! actions end in a panic at most, which the worker loop catches and retries, so the action here
//! aborts the process outright, as `kill -9` would: no drain, no lease release. Without the
//! `failpoints` feature (every shipped build) the points compile to nothing.

/// After the status write that records finished pods in `uncountedTerminatedPods`, before any of
/// their finalizers is removed.
pub(crate) const AFTER_UNCOUNTED_STATUS: &str = "job-after-uncounted-status";
/// After finalizers were removed, before the status write that moves the pods from
/// `uncountedTerminatedPods` into the counters.
pub(crate) const AFTER_FINALIZER_REMOVAL: &str = "job-after-finalizer-removal";

/// Aborts the process if the crash point `name` is switched on.
#[cfg_attr(not(feature = "failpoints"), allow(unused_variables))]
pub(crate) fn crash_at(name: &'static str) {
    fail::fail_point!(name, |_| {
        tracing::error!(failpoint = name, "crash point reached: aborting");
        std::process::abort()
    });
}
