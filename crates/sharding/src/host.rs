//! What the binary gives the shard manager: its clients, the controllers to run on a held shard,
//! and where to report. Everything else (Leases, claims, fence, caches) the manager keeps itself,
//! so the binary knows nothing of how shards move.

use std::{sync::Arc, time::Duration};

use controller::{StartGate, Started};
use informer::{Layout, ServerSharding, Shard, ShardSet, WatchCaches};
use tokio_util::sync::CancellationToken;

/// What a [`Host`] could not do, said in its own words.
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

/// How this replica shares the work: its identity and the leader-election and shard flags.
#[derive(Debug, Clone)]
pub struct Config {
    /// The holder written into every Lease (`hostname_<random>`).
    pub identity: String,
    /// The pod this replica runs in (`POD_NAME`): its membership Lease is named after it.
    pub pod: Option<String>,
    /// `--leader-elect-resource-namespace`: where every Lease lives.
    pub namespace: String,
    /// `--leader-elect-resource-name`: the unsharded leader's lock, a claim on every shard.
    pub unsharded_lock: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    /// `--shards` cut as `--shard-cuts` says (with `auto`, where the refits start from).
    pub layout: Layout,
    /// `--shard-refit-interval`.
    pub refit_interval: Duration,
    /// How long a released shard's in-flight syncs may take to finish.
    pub drain_timeout: Duration,
}

/// How a held shard's informers read.
#[derive(Debug, Clone)]
pub enum Reads {
    /// With the shard's `shardSelector` on each list and watch (the API server filters).
    Selector,
    /// Views of the replica-wide caches: one stream per kind, whatever the shards held (it does
    /// not filter, or that is not known yet).
    Cached(Arc<WatchCaches>),
}

/// A held shard whose controllers are to start.
pub struct ShardStart<'a> {
    pub shard: Shard,
    /// The shard as informers filter it (`SharedInformerFactory::with_shards`).
    pub set: ShardSet,
    pub server: Arc<ServerSharding>,
    pub reads: Reads,
    /// The workers wait for it: the shard's write fence is open.
    pub gate: StartGate,
    /// Fires when the shard is given up.
    pub cancel: &'a CancellationToken,
}

/// A held shard's controllers, started.
pub struct Running {
    pub controllers: Vec<Started>,
    /// Called once they stopped: removes what the start registered (health checks, series).
    pub on_stop: Box<dyn FnOnce() + Send>,
}

impl std::fmt::Debug for ShardStart<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardStart")
            .field("shard", &self.shard)
            .field("reads", &self.reads)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.controllers.iter().map(|c| c.name).collect();
        f.debug_struct("Running")
            .field("controllers", &names)
            .finish_non_exhaustive()
    }
}

/// What a manager round ended with, for the gauges and the liveness check.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    pub held: usize,
    /// Shards of this replica's layout nobody holds, by its clock.
    pub free: usize,
    /// A live member runs with another layout.
    pub mixed: bool,
}

/// The binary's side of sharing the work.
pub trait Host: Send + Sync + 'static {
    /// The client Leases are read and written with (leader election's, with its own rate limit).
    fn lease_client(&self) -> Result<kube::Client, HostError>;
    /// A client for reads that span shards: the probe of the server's filtering (which sends
    /// `selector` as its `shardSelector`) and the weighing of namespaces (none).
    fn read_client(&self, selector: Option<&str>) -> Result<kube::Client, HostError>;
    /// Starts the enabled controllers on informers of this shard only.
    fn start(&self, shard: ShardStart<'_>) -> Result<Running, HostError>;
    /// Whether this replica holds the Lease `lease` (`leader_election_master_status`).
    fn leading(&self, lease: &str, leading: bool);
    /// A manager round ended.
    fn round_done(&self, round: Round);
}
