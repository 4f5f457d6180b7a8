//! What becomes of each event before it is written (client-go `tools/record/events_cache.go`,
//! `EventCorrelator`): aggregation of similar events, counting of identical ones, and the per-object
//! spam filter, in that order, with client-go's keys, thresholds and windows.
//!
//! * Similar events (same object, type and reason, any message): once ten distinct messages have
//!   been seen within ten minutes of each other, every further one is written as a single event
//!   "(combined from similar events): <message>" whose count grows.
//! * Identical events (same object, type, reason and message) update the count of the event already
//!   written instead of creating another.
//! * Each object may burst 25 events, refilled at one per 5 minutes; the rest are dropped.
//!
//! Kept in memory per recorder, each cache bounded at client-go's 4096 entries (least recently used
//! out first), so a long-running process does not grow without bound.

use std::time::Duration;

use ahash::AHashMap;
use tokio::time::Instant;

use crate::events::EventRecord;

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

/// What to write for one recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The key to report the written event under ([`Correlator::written`]).
    pub key: String,
    /// The message to write: the event's own, or the combined one.
    pub message: String,
    /// Whether this is a combined event (it carries no reporting controller or instance upstream).
    pub combined: bool,
    /// The event already written under this key, to patch with `count`: (name, namespace, count).
    pub existing: Option<(String, String, i32)>,
}

/// The correlator's state: one per event recorder.
#[derive(Debug, Default)]
pub struct Correlator {
    similar: Bounded<Similar>,
    written: Bounded<(String, String, i32)>,
    spam: Bounded<Bucket>,
}

#[derive(Debug, Clone)]
struct Similar {
    messages: Vec<String>,
    last: Instant,
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Correlator {
    /// Decides what `ev` becomes at `now`; `None` when the spam filter drops it.
    pub fn correlate(&mut self, ev: &EventRecord, now: Instant) -> Option<Decision> {
        let object = object_key(ev);
        let similar_key = format!("{object}/{}/{}", ev.type_, ev.reason);
        let mut similar = self
            .similar
            .get(&similar_key)
            .filter(|s| now.saturating_duration_since(s.last) <= AGGREGATE_INTERVAL)
            .unwrap_or(Similar {
                messages: Vec::new(),
                last: now,
            });
        if !similar.messages.contains(&ev.message) {
            similar.messages.push(ev.message.clone());
        }
        similar.last = now;
        let combine = similar.messages.len() >= AGGREGATE_MAX_EVENTS;
        if combine {
            // The set never grows past the threshold: one message leaves (client-go `PopAny`).
            similar.messages.remove(0);
        }
        self.similar.put(similar_key.clone(), similar);
        let (key, message) = if combine {
            (similar_key, format!("{COMBINED_PREFIX}{}", ev.message))
        } else {
            (
                format!("{object}/{}/{}/{}", ev.type_, ev.reason, ev.message),
                ev.message.clone(),
            )
        };
        let existing = self.written.get(&key);
        // The spam filter sees every event after aggregation and counting, as upstream's.
        if !self.take_token(&object, now) {
            return None;
        }
        Some(Decision {
            key,
            message,
            combined: combine,
            existing,
        })
    }

    /// Records that the event for `key` now exists as `name` in `namespace` with `count`.
    pub fn written(&mut self, key: String, name: String, namespace: String, count: i32) {
        self.written.put(key, (name, namespace, count));
    }

    fn take_token(&mut self, object: &str, now: Instant) -> bool {
        let mut bucket = self.spam.get(object).unwrap_or(Bucket {
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
        self.spam.put(object.to_owned(), bucket);
        allowed
    }
}

fn object_key(ev: &EventRecord) -> String {
    let o = &ev.object;
    format!(
        "{}/{}/{}/{}/{}",
        o.kind.as_deref().unwrap_or(""),
        o.namespace.as_deref().unwrap_or(""),
        o.name.as_deref().unwrap_or(""),
        o.uid.as_deref().unwrap_or(""),
        o.api_version.as_deref().unwrap_or("")
    )
}

/// A map that forgets its least recently used entry beyond [`CACHE_ENTRIES`].
#[derive(Debug)]
struct Bounded<T> {
    entries: AHashMap<String, (T, u64)>,
    tick: u64,
}

impl<T> Default for Bounded<T> {
    fn default() -> Self {
        Bounded {
            entries: AHashMap::new(),
            tick: 0,
        }
    }
}

impl<T: Clone> Bounded<T> {
    fn get(&mut self, key: &str) -> Option<T> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(key).map(|(v, used)| {
            *used = tick;
            v.clone()
        })
    }

    fn put(&mut self, key: String, value: T) {
        self.tick += 1;
        self.entries.insert(key, (value, self.tick));
        if self.entries.len() > CACHE_ENTRIES
            && let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            self.entries.remove(&oldest);
        }
    }
}

#[cfg(test)]
#[path = "event_correlator_tests.rs"]
mod tests;
