//! Pods whose tracking-finalizer removal this controller asked for and has not yet seen (upstream
//! `uidTrackingExpectations` in `tracking_utils.go`). While a removal is in flight the pod is already
//! counted in the status: a sync must neither count it again nor ask for its removal again.

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;

/// Per Job key, the UIDs whose finalizer removal is expected.
#[derive(Debug, Default)]
pub(crate) struct FinalizerExpectations {
    by_job: Mutex<HashMap<String, HashSet<String>>>,
}

impl FinalizerExpectations {
    pub(crate) fn expected(&self, key: &str) -> HashSet<String> {
        self.by_job.lock().get(key).cloned().unwrap_or_default()
    }

    pub(crate) fn expect_removed(&self, key: &str, uids: impl IntoIterator<Item = String>) {
        self.by_job.lock().entry(key.to_owned()).or_default().extend(uids);
    }

    /// The removal was seen (pod update without the finalizer, final delete) or failed.
    pub(crate) fn removal_observed(&self, key: &str, uid: &str) {
        let mut by_job = self.by_job.lock();
        if let Some(set) = by_job.get_mut(key) {
            set.remove(uid);
            if set.is_empty() {
                by_job.remove(key);
            }
        }
    }

    pub(crate) fn delete(&self, key: &str) {
        self.by_job.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_uids_per_job() {
        let e = FinalizerExpectations::default();
        e.expect_removed("ns/a", ["u1".to_owned(), "u2".to_owned()]);
        e.removal_observed("ns/a", "u1");
        e.removal_observed("ns/b", "u2");
        assert_eq!(e.expected("ns/a"), HashSet::from(["u2".to_owned()]));
        e.delete("ns/a");
        assert!(e.expected("ns/a").is_empty());
    }
}
