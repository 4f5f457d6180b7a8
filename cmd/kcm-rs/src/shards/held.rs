//! One held shard: its informers and controllers, its renewals, and how it ends.
//!
//! Started only after the shard's Lease was won, so the informers' first list begins after
//! acquisition and the work queues and expectations start empty, as after a restart. The task
//! renews the Lease every retry period and moves the write fence with each success. It ends in one
//! of two ways. Released (surplus, or SIGTERM): stop taking keys, let in-flight syncs finish, close
//! the fence, then give the Lease up; if the syncs did not finish in time, the Lease is left to
//! expire instead, so a write still in flight has a lease duration to land before anyone else acts.
//! Lost (no successful renewal within the renew deadline): close the fence and abort at once, as a
//! lost leader lease exits the process; the other shards keep running.

use std::{sync::Arc, time::Duration};

use controller::Started;
use informer::{Shard, ShardSet};
use leaderelection::LeaderElector;
use tokio::{task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;

use super::shared::Shared;
use crate::{
    client::SHARED_INFORMERS,
    controllers::{self, SHUTDOWN_TIMEOUT},
    metric_labels::NameLabel,
    shard_selector::SelectorLayer,
};

/// A shard this replica holds, as the manager sees it.
#[derive(Debug)]
pub struct Held {
    pub shard: Shard,
    /// When it was acquired (wall clock, for /debug/shards).
    pub since: std::time::SystemTime,
    /// Cancelled to release the shard gracefully.
    pub release: CancellationToken,
    pub task: JoinHandle<()>,
    pub synced: Arc<std::sync::atomic::AtomicBool>,
}

impl Held {
    /// Starts holding `shard`, whose Lease `elector` won in an attempt that started at `won_at`.
    pub fn start(shared: Arc<Shared>, shard: Shard, elector: Arc<LeaderElector>, won_at: Instant) -> Self {
        let release = CancellationToken::new();
        let synced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let task = tokio::spawn(hold(
            shared,
            shard,
            elector,
            won_at,
            release.clone(),
            synced.clone(),
        ));
        Held {
            shard,
            since: std::time::SystemTime::now(),
            release,
            task,
            synced,
        }
    }
}

enum End {
    Released,
    Lost,
}

async fn hold(
    shared: Arc<Shared>,
    shard: Shard,
    elector: Arc<LeaderElector>,
    won_at: Instant,
    release: CancellationToken,
    synced_flag: Arc<std::sync::atomic::AtomicBool>,
) {
    let cfg = elector.config().clone();
    shared.fence.renewed(shard, won_at + cfg.renew_deadline);
    let lease = NameLabel {
        name: cfg.name.clone(),
    };
    shared.metrics.leader.get_or_create(&lease).set(1);
    tracing::info!(%shard, selector = %shard.selector(), "holding shard");
    let token = CancellationToken::new();
    let running = match start_controllers(&shared, shard, &token) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(%shard, "cannot start the shard's controllers: {e:#}; releasing it");
            Vec::new()
        }
    };
    let checks: Vec<_> = running.iter().map(|c| c.synced.clone()).collect();
    shared.fence.caches(shard, checks.clone());
    for c in &running {
        let synced = c.synced.clone();
        shared
            .health
            .add_controller(&format!("{}/{shard}", c.name), move || synced());
    }
    let watch_synced = {
        let flag = synced_flag.clone();
        let token = token.clone();
        tokio::spawn(async move {
            while !checks.iter().all(|c| c()) {
                tokio::select! {
                    () = token.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(%shard, "shard's caches synced; writes open");
        })
    };
    let end = if running.is_empty() {
        End::Released
    } else {
        renew(&shared, shard, &elector, won_at, &release).await
    };
    watch_synced.abort();
    match end {
        End::Lost => {
            shared.fence.close(shard);
            token.cancel();
            for c in &running {
                c.task.abort();
            }
            elector.stop_leading();
            tracing::error!(%shard, "shard lease not renewed within the renew deadline; stopped its controllers without draining");
        }
        End::Released => {
            token.cancel();
            let tasks = futures::future::join_all(running.into_iter().map(|c| c.task));
            let drained = tokio::time::timeout(SHUTDOWN_TIMEOUT, tasks).await.is_ok();
            shared.fence.close(shard);
            if drained {
                elector.release().await;
            } else {
                elector.stop_leading();
                tracing::warn!(%shard, "in-flight syncs did not finish in time; leaving the lease to expire");
            }
            tracing::info!(%shard, "released shard");
        }
    }
    shared.health.remove_controllers(&format!("/{shard}"));
    shared.metrics.leader.get_or_create(&lease).set(0);
}

/// Renews every retry period until released (Released) or no renewal succeeds within the renew
/// deadline of the last success's start (Lost). Each success moves the fence.
async fn renew(
    shared: &Shared,
    shard: Shard,
    elector: &LeaderElector,
    won_at: Instant,
    release: &CancellationToken,
) -> End {
    let cfg = elector.config();
    let mut last = won_at;
    loop {
        tokio::select! {
            () = release.cancelled() => return End::Released,
            () = tokio::time::sleep(cfg.retry_period) => {}
        }
        let deadline = last + cfg.renew_deadline;
        let attempt = tokio::select! {
            () = release.cancelled() => return End::Released,
            a = tokio::time::timeout_at(deadline, elector.try_lead()) => a,
        };
        match attempt {
            Ok(Some(started)) => {
                last = started;
                shared.fence.renewed(shard, started + cfg.renew_deadline);
            }
            Ok(None) | Err(_) if Instant::now() >= deadline => return End::Lost,
            Ok(None) | Err(_) => {}
        }
    }
}

/// The enabled controllers on informers of this shard only.
fn start_controllers(
    shared: &Shared,
    shard: Shard,
    token: &CancellationToken,
) -> anyhow::Result<Vec<Started>> {
    let set = ShardSet::one(shard);
    let client = shared
        .clients
        .client_with(SHARED_INFORMERS, SelectorLayer::new(&set.selector()))?;
    let metrics = shared.metrics.for_shard(shard.to_string());
    let factory =
        controllers::informer_factory(&shared.args, client, &metrics).with_shards(set, shared.server.clone());
    let cx = controllers::StartContext {
        args: &shared.args,
        factory: &factory,
        clients: &shared.clients,
        metrics: &metrics,
        identity: &shared.identity,
        resync_period: shared.resync_period,
        shadow: None,
        cancel: token,
    };
    let running = controllers::start(&shared.enabled, &cx)?;
    factory.start(token);
    Ok(running)
}
