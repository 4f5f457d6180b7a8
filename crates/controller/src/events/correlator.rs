//! What becomes of each event before it is written (client-go `tools/record/events_cache.go`,
//! `EventCorrelator`): aggregation of similar events, counting of identical ones, and the per-object
//! spam filter, in that order, with client-go's keys, thresholds and windows.
//!
//! * Similar events (same object, type and reason, any message): once ten distinct messages have
//!   been seen within ten minutes of each other, every further one is written as a single event
//!   `(combined from similar events): <message>` whose count grows.
//! * Identical events (same object, type, reason and message) update the count of the event already
//!   written instead of creating another.
//! * Each object may burst 25 events, refilled at one per 5 minutes; the rest are dropped.
//!
//! Kept in memory per recorder, each cache bounded at client-go's 4096 entries (least recently used
//! out first, by the `lru` crate, as client-go's `k8s.io/utils/lru`), so a long-running process does
//! not grow without bound. Where client-go keys its caches by the strings of the object, type, reason
//! and message joined, these hold 128 bits of hash of the same strings, and a set of similar events
//! holds its messages' hashes: a recorder whose caches are full holds about a third of what the
//! strings cost (the `event_memory` bench; figures in `benches/results/`), and an event is correlated
//! without building a string.

use std::{hash::Hash, time::Duration};

use ahash::RandomState;
use lru::LruCache;
use tokio::time::Instant;

use super::record::EventRecord;

/// Entries each cache holds (client-go `maxLruCacheEntries`).
pub const CACHE_ENTRIES: usize = 4096;
/// Distinct messages of similar events before they are combined (client-go `defaultAggregateMaxEvents`).
pub const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long after the last similar event a new one starts a fresh count (client-go
/// `defaultAggregateIntervalInSeconds`).
pub const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// The prefix of a combined event's message (client-go `EventAggregatorByReasonMessageFunc`).
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";
/// Per-object burst of the spam filter (client-go `defaultSpamBurst`).
pub const SPAM_BURST: f64 = 25.0;
/// Per-object refill period of the spam filter (client-go `defaultSpamQPS` = 1/300).
pub const SPAM_REFILL: Duration = Duration::from_secs(300);

/// A key of the correlator's caches: the strings of client-go's key, hashed to 128 bits. Three caches
/// of 4,096 live keys make two different events share a key with a probability under 2^-100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventKey(u128);

impl EventKey {
    /// The hash's bits, as random as the seeds of the correlator that made it.
    pub(super) fn bits(self) -> u128 {
        self.0
    }
}

/// The event observed under a key (written or not), to patch rather than create again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Existing {
    /// The nanoseconds it was first observed at, which its name is made of (`super::name`); its
    /// namespace is the object's, as for every event about that object.
    pub stamp: u64,
    /// Its count so far.
    pub count: i32,
}

/// What to write for one recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The key it was observed under.
    pub key: EventKey,
    /// The message to write: the event's own, or the combined one.
    pub message: String,
    /// Whether this is a combined event (it carries no reporting controller or instance upstream).
    pub combined: bool,
    /// The event observed under this key before (written or not), to patch with a count one
    /// higher.
    pub existing: Option<Existing>,
    /// What to write: the first event's stamp and this one's count (one more than `existing`'s).
    pub observed: Existing,
}

/// The correlator's state: one per event recorder.
#[derive(Debug)]
pub struct Correlator {
    /// Hashes the keys; two halves from independently seeded hashers.
    hashers: [RandomState; 2],
    similar: LruCache<EventKey, Similar>,
    observed: LruCache<EventKey, Existing>,
    spam: LruCache<EventKey, Bucket>,
}

impl Default for Correlator {
    fn default() -> Self {
        Correlator {
            hashers: [RandomState::new(), RandomState::new()],
            similar: LruCache::unbounded(),
            observed: LruCache::unbounded(),
            spam: LruCache::unbounded(),
        }
    }
}

/// Similar events seen lately: the hashes of their distinct messages, never more than
/// [`AGGREGATE_MAX_EVENTS`] - 1 between events.
#[derive(Debug, Clone)]
struct Similar {
    messages: Vec<u64>,
    last: Instant,
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Correlator {
    /// Decides what `ev` becomes at `now`; `None` when the spam filter drops it. Every event is
    /// counted under its key before the filter sees it, as client-go's `eventObserve` runs before its
    /// `filterFunc`: a repeat that the filter lets through later carries every occurrence in its
    /// count, and a first event, named by its stamp (nanoseconds since 1970), keeps that name for the
    /// repeats whether or not it was written. That stamp is `recorded`, when the event was recorded,
    /// or for a combined event, which the correlator makes, `made`.
    pub fn correlate(
        &mut self,
        ev: &EventRecord,
        now: Instant,
        recorded: u64,
        made: u64,
    ) -> Option<Decision> {
        let o = &ev.object;
        let object = (
            o.kind.as_deref(),
            o.namespace.as_deref(),
            o.name.as_deref(),
            o.uid.as_deref(),
            o.api_version.as_deref(),
        );
        let similar_key = self.key((object, ev.type_, &*ev.reason));
        let message = self.hashers[0].hash_one(&ev.message);
        let similar = self.similar.get_or_insert_mut(similar_key, || Similar {
            messages: Vec::new(),
            last: now,
        });
        if now.saturating_duration_since(similar.last) > AGGREGATE_INTERVAL {
            similar.messages.clear();
        }
        if !similar.messages.contains(&message) {
            similar.messages.push(message);
        }
        similar.last = now;
        let combine = similar.messages.len() >= AGGREGATE_MAX_EVENTS;
        if combine {
            // The set never grows past the threshold: one message leaves (client-go `PopAny`).
            similar.messages.remove(0);
        }
        bound(&mut self.similar);
        let (key, message) = if combine {
            (similar_key, format!("{COMBINED_PREFIX}{}", ev.message))
        } else {
            (
                self.key((object, ev.type_, &*ev.reason, &ev.message)),
                ev.message.clone(),
            )
        };
        let existing = self.observed.get(&key).copied();
        let stamp = if combine { made } else { recorded };
        let observed = existing.map_or(Existing { stamp, count: 1 }, |e| Existing {
            stamp: e.stamp,
            count: e.count.saturating_add(1),
        });
        self.observed.put(key, observed);
        bound(&mut self.observed);
        // The spam filter sees every event after aggregation and counting, as upstream's, with a
        // bucket per object and type (client-go `getSpamKey`).
        if !self.take_token(self.key((object, ev.type_)), now) {
            return None;
        }
        Some(Decision {
            key,
            message,
            combined: combine,
            existing,
            observed,
        })
    }

    fn key(&self, parts: impl Hash) -> EventKey {
        let [low, high] = &self.hashers;
        EventKey(u128::from(high.hash_one(&parts)) << 64 | u128::from(low.hash_one(&parts)))
    }

    fn take_token(&mut self, object: EventKey, now: Instant) -> bool {
        let bucket = self.spam.get_or_insert_mut(object, || Bucket {
            tokens: SPAM_BURST,
            last: now,
        });
        let refill = now.saturating_duration_since(bucket.last).as_secs_f64() / SPAM_REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + refill).min(SPAM_BURST);
        bucket.last = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        bound(&mut self.spam);
        allowed
    }
}

/// Forgets the least recently used entries beyond [`CACHE_ENTRIES`]. (The caches are unbounded to
/// `lru` and bounded here, because a bounded `LruCache` allocates its whole table up front.)
fn bound<V>(cache: &mut LruCache<EventKey, V>) {
    while cache.len() > CACHE_ENTRIES {
        cache.pop_lru();
    }
}

#[cfg(test)]
#[path = "correlator_tests.rs"]
mod tests;
