//! What `/debug/shards` shows of a replica sharing the work.

use std::collections::BTreeMap;

use informer::Layout;
use serde::Serialize;

use crate::{held::Held, manager::Shared, members::Members, names::shard_lease_name};

/// What `/debug/shards` shows.
#[derive(Debug, Default, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub identity: String,
    pub shards: u32,
    /// `--shard-cuts`, or the refitted cuts now followed (empty: equal ranges).
    pub cuts: String,
    /// With `--shard-cuts=auto`: the version of the cuts record followed (null: none written yet).
    pub cuts_generation: Option<u64>,
    pub live_members: Vec<String>,
    pub target: usize,
    /// A live member runs with another `--shards`: nothing is acquired meanwhile.
    pub mixed_counts: bool,
    /// Whether the API server filters by shard, by its last definite answer (null: not known yet).
    pub server_filters: Option<bool>,
    /// List answers without `shardInfo` and objects outside the shards seen so far.
    pub unfiltered_seen: u64,
    pub held: Vec<HeldStatus>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldStatus {
    pub shard: String,
    pub lease: String,
    pub selector: String,
    pub since: String,
    pub synced: bool,
    /// Read from the replica-wide caches rather than with the shard's selector.
    pub cached: bool,
}

/// The parts of a round's outcome the status reports beside the members and the held shards.
pub(crate) struct RoundState<'a> {
    pub layout: &'a Layout,
    /// The version of refitted cuts followed.
    pub generation: Option<u64>,
    pub target: usize,
    pub mixed: bool,
}

/// What `/debug/shards` shows after a round.
pub(crate) fn snapshot(
    shared: &Shared,
    round: &RoundState<'_>,
    members: &Members,
    held: &BTreeMap<u32, Held>,
) -> Status {
    Status {
        identity: shared.config.identity.clone(),
        shards: round.layout.count(),
        cuts: round.layout.cuts_text(),
        cuts_generation: round.generation,
        live_members: members.live_names().map(str::to_owned).collect(),
        target: round.target,
        mixed_counts: round.mixed,
        server_filters: shared.server.filters(),
        unfiltered_seen: shared.server.unfiltered_seen(),
        held: held
            .values()
            .map(|h| HeldStatus {
                shard: h.shard.to_string(),
                lease: shard_lease_name(h.shard),
                selector: h.shard.selector(),
                since: k8s_openapi::jiff::Timestamp::try_from(h.since)
                    .map(|t| t.to_string())
                    .unwrap_or_default(),
                synced: h.synced.load(std::sync::atomic::Ordering::Relaxed),
                cached: h.cached,
            })
            .collect(),
    }
}
