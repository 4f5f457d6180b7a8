//! What every held shard is started from, shared by the manager and the held shards.

use std::{sync::Arc, time::Duration};

use informer::{ServerSharding, Shard};

use crate::{client::Clients, fence::WriteFence, flags::Args, metrics::Metrics, server::Health};

/// The Lease of shard `shard`.
pub fn shard_lease_name(shard: Shard) -> String {
    format!("kcm-rs-shard-{shard}")
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
