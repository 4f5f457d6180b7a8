//! The binary's side of sharing the work (`sharding::Host`): the clients the shard manager reads
//! and writes Leases with, the enabled controllers started on a held shard's informers (read with
//! the shard's `shardSelector`, or from the replica-wide caches), and the health checks and metrics
//! that report on it.

use std::sync::Arc;

use sharding::{HostError, Reads, Round, Running, ShardStart};

use crate::{
    client::{Clients, LEADER_ELECTION, SHARED_INFORMERS},
    controllers,
    flags::Args,
    healthz::{Health, LEADER_ELECTION_HEALTH_TOLERANCE},
    metric_labels::NameLabel,
    metrics::Metrics,
    shard_selector::SelectorLayer,
};

/// What a held shard's controllers start from.
pub struct Host {
    pub args: Arc<Args>,
    pub clients: Clients,
    pub metrics: Metrics,
    pub health: Arc<Health>,
    pub identity: String,
    pub enabled: Vec<&'static str>,
    pub resync_period: Option<std::time::Duration>,
}

impl sharding::Host for Host {
    fn lease_client(&self) -> Result<kube::Client, HostError> {
        Ok(self.clients.client_for(LEADER_ELECTION)?)
    }

    fn read_client(&self, selector: Option<&str>) -> Result<kube::Client, HostError> {
        Ok(match selector {
            Some(s) => self
                .clients
                .client_with(SHARED_INFORMERS, SelectorLayer::new(s))?,
            None => self.clients.client_for(SHARED_INFORMERS)?,
        })
    }

    fn start(&self, s: ShardStart<'_>) -> Result<Running, HostError> {
        let shard = s.shard;
        let metrics = self.metrics.for_shard(shard.to_string());
        let factory = match s.reads {
            Reads::Selector => {
                let client = self.read_client(Some(&s.set.selector()))?;
                controllers::informer_factory(&self.args, client, &metrics).with_shards(s.set, s.server)
            }
            // Each shard's own request would carry the whole kind: read views of one instead.
            Reads::Cached(caches) => {
                let client = self.read_client(None)?;
                controllers::informer_factory(&self.args, client, &metrics)
                    .with_shards(s.set, s.server)
                    .with_watch_caches(caches)
            }
        };
        let cx = controllers::StartContext {
            args: &self.args,
            factory: &factory,
            clients: &self.clients,
            metrics: &metrics,
            identity: &self.identity,
            resync_period: self.resync_period,
            shadow: None,
            start_gate: Some(s.gate),
            cancel: s.cancel,
        };
        let running = match controllers::start(&self.enabled, &cx) {
            Ok(r) => r,
            Err(e) => {
                metrics.remove_shard_series();
                return Err(format!("{e:#}").into());
            }
        };
        factory.start(s.cancel);
        for c in &running {
            let (synced, stopped) = (c.synced.clone(), c.stopped.clone());
            self.health.add_controller(
                &format!("{}/{shard}", c.name),
                move || synced(),
                move || stopped(),
            );
        }
        let health = self.health.clone();
        Ok(Running {
            controllers: running,
            on_stop: Box::new(move || {
                health.remove_controllers(&format!("/{shard}"));
                metrics.remove_shard_series();
            }),
        })
    }

    fn leading(&self, lease: &str, leading: bool) {
        let name = NameLabel { name: lease.into() };
        self.metrics.leader.get_or_create(&name).set(i64::from(leading));
    }

    fn round_done(&self, round: Round) {
        let gauges = &self.metrics.shards;
        gauges.held.set(i64::try_from(round.held).unwrap_or(i64::MAX));
        gauges.free.set(i64::try_from(round.free).unwrap_or(i64::MAX));
        gauges.mixed.set(i64::from(round.mixed));
        self.health
            .round_done(self.args.leader_elect_lease_duration + LEADER_ELECTION_HEALTH_TOLERANCE);
    }
}
