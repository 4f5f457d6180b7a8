//! Reading one's own writes (upstream KEP-5647, `StaleControllerConsistencyReplicaSet`, beta and on
//! in 1.36): remember the highest resourceVersion a controller wrote for each object it manages, and
//! refuse to sync that object until the informers have caught up to it. Without it, a sync right after
//! a create can miss the new pod in a stale cache and create it again once expectations expire
//! (kubernetes/kubernetes#129795).

use ahash::AHashMap;
use parking_lot::Mutex;

/// A sync skipped because a cache is older than a write this controller made.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error(
    "read version: {read} is not as new as written version: {written} for group resource {group_resource}"
)]
pub struct StaleCache {
    pub group_resource: &'static str,
    pub read: u64,
    pub written: u64,
}

#[derive(Debug, Default)]
struct Written {
    uid: String,
    /// Group-resource (`pods`, `replicasets.apps`) -> highest resourceVersion written.
    versions: AHashMap<&'static str, u64>,
}

/// Highest written resourceVersions, per controller key.
#[derive(Debug, Default)]
pub struct ConsistencyStore {
    written: Mutex<AHashMap<String, Written>>,
    /// Writes are not recorded: the feature gate is off. As upstream's no-op store, so that the
    /// records of a check that never runs do not pile up.
    noop: bool,
}

impl ConsistencyStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that records nothing, so that every check passes.
    pub fn noop() -> Self {
        Self {
            noop: true,
            ..Self::default()
        }
    }

    /// [`Self::new`] when the feature gate `on`, [`Self::noop`] otherwise.
    pub fn gated(on: bool) -> Self {
        if on { Self::new() } else { Self::noop() }
    }

    /// Records that a write for the object `key` (with UID `uid`) produced `resource_version` of
    /// `group_resource`. Versions that are not numbers (not etcd revisions) are ignored.
    pub fn wrote_at(
        &self,
        key: &str,
        uid: &str,
        group_resource: &'static str,
        resource_version: Option<&str>,
    ) {
        if self.noop {
            return;
        }
        let Some(rv) = resource_version.and_then(|v| v.parse::<u64>().ok()) else {
            return;
        };
        let mut written = self.written.lock();
        let w = written.entry(key.to_owned()).or_default();
        if w.uid != uid {
            // A new object under the same name: its predecessor's writes no longer matter.
            *w = Written {
                uid: uid.to_owned(),
                versions: AHashMap::new(),
            };
        }
        let v = w.versions.entry(group_resource).or_insert(0);
        *v = (*v).max(rv);
    }

    /// Whether the informers have seen every write for `key`; `read` gives each group-resource's
    /// newest resourceVersion the informer has applied. Once they have, the record is dropped, as
    /// upstream's store drops it: the caches only move forward, so it could not fail again, and a
    /// controller that wrote once for every object it ever managed would otherwise keep them all.
    pub fn ensure_ready(&self, key: &str, read: impl Fn(&'static str) -> u64) -> Result<(), StaleCache> {
        let mut written = self.written.lock();
        let Some(w) = written.get(key) else { return Ok(()) };
        for (gr, v) in &w.versions {
            let seen = read(gr);
            if seen < *v {
                return Err(StaleCache {
                    group_resource: gr,
                    read: seen,
                    written: *v,
                });
            }
        }
        written.remove(key);
        Ok(())
    }

    /// Forgets `key` (the object is gone from the cache; one of the same name made since would be
    /// there instead).
    pub fn clear(&self, key: &str) {
        self.written.lock().remove(key);
    }

    /// Forgets `key` if what it holds is for the object of `uid`: the object was deleted, or replaced
    /// under its name (upstream's `Clear` from the delete handler). A record of a newer object of
    /// that name stays.
    pub fn forget_object(&self, key: &str, uid: &str) {
        let mut written = self.written.lock();
        if written.get(key).is_some_and(|w| w.uid == uid) {
            written.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl ConsistencyStore {
        fn len(&self) -> usize {
            self.written.lock().len()
        }

        fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    #[test]
    fn waits_for_the_informer_to_reach_the_written_version() {
        let s = ConsistencyStore::new();
        s.wrote_at("ns/rs", "u1", "pods", Some("120"));
        s.wrote_at("ns/rs", "u1", "pods", Some("100"));
        let err = s.ensure_ready("ns/rs", |_| 110).unwrap_err();
        assert_eq!(
            err,
            StaleCache {
                group_resource: "pods",
                read: 110,
                written: 120
            }
        );
        assert_eq!(s.ensure_ready("ns/rs", |_| 120), Ok(()));
        assert_eq!(s.ensure_ready("ns/other", |_| 0), Ok(()));
        s.wrote_at("ns/rs", "u1", "pods", Some("130"));
        s.wrote_at("ns/rs", "u2", "pods", Some("5"));
        assert_eq!(
            s.ensure_ready("ns/rs", |_| 10),
            Ok(()),
            "a recreated object starts clean"
        );
        s.wrote_at("ns/rs", "u2", "pods", Some("not-a-number"));
        assert!(s.is_empty(), "a record is dropped once the caches pass it");
    }

    #[test]
    fn a_passed_check_drops_the_record_and_later_writes_start_a_new_one() {
        let s = ConsistencyStore::new();
        s.wrote_at("ns/rs", "u1", "pods", Some("120"));
        s.wrote_at("ns/rs", "u1", "replicasets.apps", Some("121"));
        assert!(
            s.ensure_ready("ns/rs", |gr| if gr == "pods" { 120 } else { 100 })
                .is_err()
        );
        assert_eq!(s.len(), 1, "a failed check keeps the record");
        assert_eq!(s.ensure_ready("ns/rs", |_| 121), Ok(()));
        assert!(s.is_empty());
        s.wrote_at("ns/rs", "u1", "pods", Some("140"));
        assert!(s.ensure_ready("ns/rs", |_| 130).is_err());
    }

    #[test]
    fn a_deleted_objects_record_goes_and_a_newer_ones_of_its_name_stays() {
        let s = ConsistencyStore::new();
        s.wrote_at("ns/rs", "u1", "pods", Some("120"));
        s.forget_object("ns/rs", "u0");
        assert_eq!(s.len(), 1, "another object's delete event");
        s.forget_object("ns/rs", "u1");
        assert!(s.is_empty());
        assert_eq!(s.ensure_ready("ns/rs", |_| 0), Ok(()));
    }

    #[test]
    fn a_store_behind_a_gate_that_is_off_records_nothing() {
        let s = ConsistencyStore::gated(false);
        s.wrote_at("ns/rs", "u1", "pods", Some("50"));
        assert!(s.is_empty());
        assert_eq!(s.ensure_ready("ns/rs", |_| 0), Ok(()));
    }
}
