//! A small map whose entries expire: the token and access-review caches.
//!
//! The API server's delegating authenticator and authorizer cache each answer for a fixed time
//! (k8s.io/apiserver `pkg/authentication/token/cache`, `pkg/authorization/authorizerfactory`), so a
//! scraper polling `/metrics` every few seconds costs one review per TTL, not one per scrape.
//! Entries expire on tokio's clock, so tests run it with a paused clock.

use std::{collections::HashMap, hash::Hash, time::Duration};

use parking_lot::Mutex;
use tokio::time::Instant;

/// How many entries a cache holds before expired ones are swept on insert. Reviews are cheap to
/// redo, so the bound only keeps a flood of distinct tokens from growing the map without limit.
pub const MAX_ENTRIES: usize = 4096;

#[derive(Debug)]
pub struct TtlCache<K, V> {
    /// Each value with the instant it stops being served.
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash, V: Clone> Default for TtlCache<K, V> {
    fn default() -> Self {
        TtlCache {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// The value stored under `key`, if it has not expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let now = Instant::now();
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some((v, until)) if *until > now => Some(v.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores `value` for `ttl`; a zero TTL stores nothing (the flags' way to turn caching off).
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (value, now + ttl));
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn entries_expire_after_their_ttl_and_a_zero_ttl_caches_nothing() {
        let c = TtlCache::default();
        c.insert("a", 1, Duration::from_secs(10));
        c.insert("b", 2, Duration::ZERO);
        assert_eq!(c.get(&"a"), Some(1));
        assert_eq!(c.get(&"b"), None);
        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert_eq!(c.get(&"a"), Some(1));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(c.get(&"a"), None);
        assert_eq!(c.len(), 0, "an expired entry is dropped when read");
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_keys_stays_bounded() {
        let c = TtlCache::default();
        for i in 0..(3 * MAX_ENTRIES) {
            c.insert(i, i, Duration::from_secs(10));
        }
        assert!(c.len() <= MAX_ENTRIES);
        assert_eq!(c.get(&(3 * MAX_ENTRIES - 1)), Some(3 * MAX_ENTRIES - 1));
    }
}
