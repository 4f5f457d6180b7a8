//! Jobs this controller wrote finished, until its cache shows them finished (upstream
//! `finishedJobExpectations`).
//!
//! Between the status write that adds Complete or Failed and the Job informer's update, a sync (for
//! example one woken by the finalizer removals' pod events) would read the Job as unfinished beside
//! pods that no longer carry the tracking finalizer: it could count them again or create pods for a
//! finished Job. Such a sync is skipped instead. With `StaleControllerConsistencyJob` on, the
//! resourceVersion gate skips it too; this one also holds with the gate off, as upstream's does.

use std::collections::HashSet;

use parking_lot::Mutex;

/// Job UIDs written finished and not yet seen finished in the cache.
#[derive(Debug, Default)]
pub(crate) struct FinishedJobs(Mutex<HashSet<String>>);

impl FinishedJobs {
    /// The finishing status write for the Job `uid` succeeded.
    pub(crate) fn written(&self, uid: &str) {
        self.0.lock().insert(uid.to_owned());
    }

    /// The cache shows the Job finished, or it was deleted: nothing is awaited for it any more.
    pub(crate) fn observed(&self, uid: &str) {
        self.0.lock().remove(uid);
    }

    /// Whether a sync of the Job `uid` must wait for the cache to show it finished.
    pub(crate) fn awaited(&self, uid: &str) -> bool {
        self.0.lock().contains(uid)
    }
}
