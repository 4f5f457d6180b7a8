//! What every held shard is started from, shared by the manager and the held shards.

use std::{sync::Arc, time::Duration};

use informer::{ServerSharding, Shard};

use crate::{client::Clients, fence::WriteFence, flags::Args, metrics::Metrics, server::Health};

/// Every shard Lease's name starts with this.
const SHARD_PREFIX: &str = "kcm-rs-shard-";

/// The Lease of shard `shard`.
pub fn shard_lease_name(shard: Shard) -> String {
    format!("{SHARD_PREFIX}{shard}")
}

/// The shard a shard Lease name stands for, of whatever count.
pub fn shard_of_lease_name(name: &str) -> Option<Shard> {
    let (index, count) = name.strip_prefix(SHARD_PREFIX)?.split_once("-of-")?;
    Shard::new(index.parse().ok()?, count.parse().ok()?).ok()
}

/// What every held shard is started from.
pub struct Shared {
    pub args: Arc<Args>,
    pub clients: Clients,
    pub metrics: Metrics,
    pub health: Arc<Health>,
    pub identity: String,
    pub enabled: Vec<&'static str>,
    pub resync_period: Option<Duration>,
    pub fence: Arc<WriteFence>,
    pub server: Arc<ServerSharding>,
}
