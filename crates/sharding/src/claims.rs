//! Every claim on the namespace-hash space this replica can see, whatever the layout: the shard Leases
//! of any shard count or cuts (`kcm-rs-shard-<i>-of-<M>[c<tag>-<start>-<end>]`, the range the name
//! says) and the unsharded lock
//! (`--leader-elect-resource-name`, the whole space). Exclusion between layouts rests on these
//! claims, not on membership, which fences nothing: a replica takes a shard only when no overlapping
//! claim of anyone else is live by its own clock, and looks again once its own claim is committed
//! (`docs/scale-out.md`, "Changing the layout").
//!
//! A claim is live while it names a holder and its record changed within its lease duration, by
//! this replica's clock (the elector's rule). A Lease seen and then missing keeps its last record
//! until that record would have expired: deleting a Lease does not free its range early.

use std::collections::HashMap;

use informer::{Layout, Shard};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use tokio::time::Instant;

use crate::names::{shard_lease_name, shard_of_lease_name};

/// The whole hash space, `[0, 2^64)`.
const ALL: Range = Range {
    count: 1,
    tag: 0,
    start: 0,
    end: 1 << 64,
};

/// A claimed part of the hash space and the layout claiming it: its shard count (1: unsharded) and
/// tag (0: equal ranges, else a hash of its cuts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    count: u32,
    tag: u32,
    start: u128,
    end: u128,
}

impl Range {
    fn of(shard: Shard) -> Self {
        Self {
            count: shard.count(),
            tag: shard.tag(),
            start: shard.start(),
            end: shard.end(),
        }
    }

    fn overlaps(self, other: Range) -> bool {
        self.start < other.end && other.start < self.end
    }
}

#[derive(Debug, Clone)]
struct Seen {
    range: Range,
    record: LeaseSpec,
    changed_at: Instant,
    /// In the last list.
    present: bool,
    resource_version: Option<String>,
}

impl Seen {
    fn live(&self, now: Instant) -> bool {
        let holder = self.record.holder_identity.as_deref().unwrap_or_default();
        !holder.is_empty() && now < self.changed_at + leaderelection::duration_of(&self.record)
    }

    fn holder(&self) -> &str {
        self.record.holder_identity.as_deref().unwrap_or_default()
    }
}

/// What this replica has seen of every claim, by Lease name.
#[derive(Debug, Clone)]
pub struct Claims {
    /// The unsharded lock's name.
    unsharded: String,
    seen: HashMap<String, Seen>,
}

impl Claims {
    pub fn new(unsharded: &str) -> Self {
        Self {
            unsharded: unsharded.to_owned(),
            seen: HashMap::new(),
        }
    }

    /// Takes in one list of the namespace's Leases, read at `now`.
    pub fn observe(&mut self, leases: &[Lease], now: Instant) {
        for seen in self.seen.values_mut() {
            seen.present = false;
        }
        for lease in leases {
            let Some(name) = lease.metadata.name.as_deref() else {
                continue;
            };
            let range = if name == self.unsharded {
                ALL
            } else if let Some(shard) = shard_of_lease_name(name) {
                Range::of(shard)
            } else {
                continue;
            };
            let record = lease.spec.clone().unwrap_or_default();
            let resource_version = lease.metadata.resource_version.clone();
            match self.seen.get_mut(name) {
                Some(s) => {
                    if s.record != record {
                        s.record = record;
                        s.changed_at = now;
                    }
                    s.present = true;
                    s.resource_version = resource_version;
                }
                None => {
                    self.seen.insert(
                        name.to_owned(),
                        Seen {
                            range,
                            record,
                            changed_at: now,
                            present: true,
                            resource_version,
                        },
                    );
                }
            }
        }
        self.seen.retain(|_, s| s.present || s.live(now));
    }

    /// Someone other than `identity` holds a live claim overlapping `shard`, under another Lease than
    /// `shard`'s own (which its elector judges). By name, not by range: two versions of refitted
    /// cuts may give one range to shards of other indexes, under two Leases.
    pub fn blocks(&self, shard: Shard, identity: &str, now: Instant) -> bool {
        let (mine, own) = (Range::of(shard), shard_lease_name(shard));
        self.seen
            .iter()
            .any(|(name, s)| *name != own && s.range.overlaps(mine) && s.holder() != identity && s.live(now))
    }

    /// Someone other than `identity` holds a live shard claim of any layout (for the unsharded
    /// candidate, whose lock covers every shard).
    pub fn any_shard_claim(&self, identity: &str, now: Instant) -> bool {
        self.seen
            .values()
            .any(|s| s.range != ALL && s.holder() != identity && s.live(now))
    }

    /// A live claim of `layout` exists, this replica's own included.
    pub fn layout_serves(&self, layout: &Layout, now: Instant) -> bool {
        self.seen
            .values()
            .any(|s| (s.range.count, s.range.tag) == (layout.count(), layout.tag()) && s.live(now))
    }

    /// The shard Leases of earlier versions of `layout` (refitted cuts: same count and tag) whose
    /// range it no longer has, not live and unchanged for `after`, with the resourceVersion seen: each
    /// refit leaves the Leases of the ranges it moved behind, and these are deleted.
    pub fn retired(
        &self,
        layout: &Layout,
        now: Instant,
        after: std::time::Duration,
    ) -> Vec<(String, Option<String>)> {
        let current: Vec<String> = layout.shards().into_iter().map(shard_lease_name).collect();
        self.seen
            .iter()
            .filter(|(name, s)| {
                layout.is_auto()
                    && s.present
                    && (s.range.count, s.range.tag) == (layout.count(), layout.tag())
                    && !current.contains(name)
                    && !s.live(now)
                    && now >= s.changed_at + after
            })
            .map(|(name, s)| (name.clone(), s.resource_version.clone()))
            .collect()
    }

    /// Any live claim at all.
    pub fn any_live(&self, now: Instant) -> bool {
        self.seen.values().any(|s| s.live(now))
    }

    /// What is kept, in a form a state-space search can compare: name, holder, renew time (seconds),
    /// how long ago the record changed (whole seconds, at most `cap`: older records behave alike),
    /// whether in the last list.
    #[cfg(test)]
    fn key(&self, now: Instant, cap: u64) -> Vec<(String, String, i64, u64, bool)> {
        let mut key: Vec<_> = self
            .seen
            .iter()
            .map(|(name, s)| {
                let renewed = s.record.renew_time.as_ref().map_or(0, |t| t.0.as_second());
                let age = (now - s.changed_at).as_secs().min(cap);
                (name.clone(), s.holder().to_owned(), renewed, age, s.present)
            })
            .collect();
        key.sort();
        key
    }
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "claims_search_tests.rs"]
mod search_tests;
