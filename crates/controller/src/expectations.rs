//! Expectations (upstream `ControllerExpectations` + `UIDTrackingControllerExpectations`): what a
//! controller has asked the API server to create and delete and has not yet seen in its informer.
//!
//! Informer caches lag behind writes. A ReplicaSet that just created 5 pods would see too few on its
//! next sync and create them again; expectations make that sync wait until the 5 creations are
//! observed (or the record expires).

use std::time::Duration;

use ahash::{AHashMap, AHashSet};
use parking_lot::Mutex;
use tokio::time::Instant;

/// After this long a record no longer blocks syncs: a lost watch event must not stall a controller
/// forever (upstream `ExpectationsTimeout`, 5 minutes).
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Per-controller-key expectations. Deletions are tracked by pod key (`namespace/name`), so that a
/// pod seen first with a deletionTimestamp and later deleted counts once.
#[derive(Debug, Default)]
pub struct Expectations {
    records: Mutex<AHashMap<String, Record>>,
}

#[derive(Debug)]
struct Record {
    /// Creations still to observe; at or below zero means none.
    add: i64,
    /// Deletions still to observe; at or below zero means none.
    del: i64,
    /// When the record was last set (not when it was last lowered).
    set_at: Instant,
    /// Pod keys whose deletion is still to observe. Invariant: `del` was set to its size when it was
    /// stored, and each observed key lowers `del` once and leaves the set.
    deleting: AHashSet<String>,
}

impl Expectations {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the controller may act: no record, a fulfilled one, or an expired one.
    pub fn satisfied(&self, key: &str) -> bool {
        let records = self.records.lock();
        match records.get(key) {
            None => true,
            Some(r) => (r.add <= 0 && r.del <= 0) || r.set_at.elapsed() > EXPECTATIONS_TIMEOUT,
        }
    }

    /// Expects `n` creations, replacing the counts (upstream `ExpectCreations` sets, not adds).
    pub fn expect_creations(&self, key: &str, n: usize) {
        let mut records = self.records.lock();
        let deleting = records.remove(key).map(|r| r.deleting).unwrap_or_default();
        let add = i64::try_from(n).unwrap_or(i64::MAX);
        records.insert(
            key.to_owned(),
            Record {
                add,
                del: 0,
                set_at: Instant::now(),
                deleting,
            },
        );
    }

    /// Expects the deletion of these pods (by `namespace/name`), replacing the counts.
    pub fn expect_deletions(&self, key: &str, pod_keys: impl IntoIterator<Item = String>) {
        let deleting: AHashSet<String> = pod_keys.into_iter().collect();
        let mut records = self.records.lock();
        if records.get(key).is_some_and(|r| !r.deleting.is_empty()) {
            tracing::error!(key, "clobbering expected deletions that were never observed");
        }
        let del = i64::try_from(deleting.len()).unwrap_or(i64::MAX);
        records.insert(
            key.to_owned(),
            Record {
                add: 0,
                del,
                set_at: Instant::now(),
                deleting,
            },
        );
    }

    /// One creation was observed (or will never be: a failed or skipped create).
    pub fn creation_observed(&self, key: &str) {
        if let Some(r) = self.records.lock().get_mut(key) {
            r.add -= 1;
        }
    }

    /// The deletion of `pod_key` was observed (or will never be: a failed delete). Counted once.
    pub fn deletion_observed(&self, key: &str, pod_key: &str) {
        if let Some(r) = self.records.lock().get_mut(key)
            && r.deleting.remove(pod_key)
        {
            r.del -= 1;
        }
    }

    /// Forgets the controller (it was deleted).
    pub fn delete(&self, key: &str) {
        self.records.lock().remove(key);
    }

    /// Outstanding (creations, deletions) for `key`, for logs and tests.
    pub fn pending(&self, key: &str) -> Option<(i64, i64)> {
        self.records.lock().get(key).map(|r| (r.add, r.del))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn creations_block_until_observed() {
        let e = Expectations::new();
        assert!(e.satisfied("ns/rs"));
        e.expect_creations("ns/rs", 2);
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn deletions_count_each_pod_once() {
        let e = Expectations::new();
        e.expect_deletions("ns/rs", ["ns/a".to_owned(), "ns/b".to_owned()]);
        e.deletion_observed("ns/rs", "ns/a"); // deletionTimestamp seen
        e.deletion_observed("ns/rs", "ns/a"); // then the delete itself
        assert!(!e.satisfied("ns/rs"), "b is still expected");
        e.deletion_observed("ns/rs", "ns/unrelated");
        assert_eq!(e.pending("ns/rs"), Some((0, 1)));
        e.deletion_observed("ns/rs", "ns/b");
        assert!(e.satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn records_expire_after_five_minutes() {
        let e = Expectations::new();
        e.expect_creations("ns/rs", 1);
        tokio::time::advance(EXPECTATIONS_TIMEOUT).await;
        assert!(!e.satisfied("ns/rs"), "not yet expired at exactly the timeout");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(e.satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn delete_forgets() {
        let e = Expectations::new();
        e.expect_creations("ns/rs", 3);
        e.delete("ns/rs");
        assert!(e.satisfied("ns/rs"));
        assert_eq!(e.pending("ns/rs"), None);
    }
}
