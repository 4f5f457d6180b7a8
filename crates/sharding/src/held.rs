//! One held shard: its informers and controllers, its renewals, and how it ends.
//!
//! Started only after the shard's Lease was won and a list after that showed no overlapping claim of
//! another layout (`claims`), so the informers' first list begins after acquisition and the work
//! queues and expectations start empty, as after a restart. The task renews the Lease every retry
//! period; each success is a new claim, which moves the write fence only once the manager's next list,
//! begun after it, shows no overlapping claim either (a holder paused past its lease renews its own
//! Lease fine while another layout serves the range). It ends in one
//! of two ways. Released (surplus, or SIGTERM): stop taking keys and let in-flight syncs finish while
//! the renewals go on, so the fence stays open for the drain; then close the fence, abort whatever
//! is left of the shard's tasks (a write waiting to be retried among them), wait until every write
//! that passed the fence has its answer (an Event on its way among them), and give the Lease up; or,
//! if the syncs did not finish in time or a write ended without an answer (aborted, dropped at its
//! window's end, answered 504), leave it to expire, so that a write the server may still apply has a
//! lease duration to land before anyone else acts. Lost (no successful renewal within the
//! renew deadline, also during a drain): close the fence and abort at once, as a lost leader lease
//! exits the process; the other shards keep running.

use std::{sync::Arc, time::Duration};

use informer::{Shard, ShardSet};
use leaderelection::LeaderElector;
use parking_lot::Mutex;
use tokio::{task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    host::{Reads, Running, ShardStart},
    manager::Shared,
    renewals::{Renewal, Renewals},
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
    /// The successful renewals not yet confirmed.
    renewed: Arc<Mutex<Renewals>>,
    /// Another layout's claim overlapped it: being given up, never confirmed again.
    pub conflict: bool,
    /// Released because its caches did not sync within the bound.
    pub unsynced: Arc<std::sync::atomic::AtomicBool>,
    /// Its informers read views of the replica-wide caches (the API server does not filter).
    pub cached: bool,
}

/// A held shard whose caches have not synced after this many lease durations is released, so that
/// another replica tries it (a replica-local fault moves; a poison object shows in every replica's
/// log), and this replica leaves it alone for as long again.
pub const SYNC_BOUND_LEASE_DURATIONS: u32 = 8;

impl Held {
    /// Starts holding `shard`, whose Lease `elector` won in an attempt that started at `won_at`, when
    /// the machine had been suspended for `won_at.1`.
    pub fn start(
        shared: Arc<Shared>,
        shard: Shard,
        elector: Arc<LeaderElector>,
        won_at: (Instant, Duration),
    ) -> Self {
        let release = CancellationToken::new();
        let synced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let renewed = Arc::new(Mutex::new(Renewals::default()));
        let unsynced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cached = shared.server.filters() != Some(true);
        let task = tokio::spawn(hold(
            Hold {
                shared,
                shard,
                cached,
                elector,
                renewed: renewed.clone(),
                unsynced: unsynced.clone(),
            },
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
            renewed,
            conflict: false,
            unsynced,
            cached,
        }
    }

    /// The start of the newest successful renewal answered before `listed_at` (and the suspend
    /// clock then), taken: a list begun then that shows no overlapping claim confirms it.
    pub fn unconfirmed(&self, listed_at: Instant) -> Option<(Instant, Duration)> {
        let r = self.renewed.lock().confirmable(listed_at)?;
        Some((r.started, r.suspended))
    }
}

/// What the holding task works with.
struct Hold {
    shared: Arc<Shared>,
    shard: Shard,
    cached: bool,
    elector: Arc<LeaderElector>,
    renewed: Arc<Mutex<Renewals>>,
    unsynced: Arc<std::sync::atomic::AtomicBool>,
}

enum End {
    /// Asked to release; the last successful renewal started then.
    Released(Instant),
    Lost,
}

async fn hold(
    h: Hold,
    (won_at, suspended): (Instant, Duration),
    release: CancellationToken,
    synced_flag: Arc<std::sync::atomic::AtomicBool>,
) {
    let (shared, shard, elector) = (h.shared.clone(), h.shard, h.elector.clone());
    let cfg = elector.config().clone();
    shared
        .fence
        .renewed(shard, won_at + cfg.renew_deadline, suspended);
    shared.host.leading(&cfg.name, true);
    tracing::info!(%shard, selector = %shard.selector(), "holding shard");
    let token = CancellationToken::new();
    let Running {
        controllers: mut running,
        on_stop,
    } = match start_controllers(&shared, shard, h.cached, &token) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(%shard, "cannot start the shard's controllers: {e}; releasing it");
            Running {
                controllers: Vec::new(),
                on_stop: Box::new(|| {}),
            }
        }
    };
    let checks: Vec<_> = running.iter().map(|c| c.synced.clone()).collect();
    shared.fence.caches(shard, checks.clone());
    let watch_synced = {
        let flag = synced_flag.clone();
        let token = token.clone();
        let (release, unsynced) = (release.clone(), h.unsynced.clone());
        let bound = cfg.lease_duration * SYNC_BOUND_LEASE_DURATIONS;
        tokio::spawn(async move {
            let deadline = Instant::now() + bound;
            while !checks.iter().all(|c| c()) {
                if Instant::now() >= deadline {
                    tracing::error!(%shard, ?bound, "shard's caches did not sync in time; releasing it for another replica to try");
                    unsynced.store(true, std::sync::atomic::Ordering::Relaxed);
                    release.cancel();
                    return;
                }
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
        End::Released(won_at)
    } else {
        renew(&h, won_at, &release).await
    };
    watch_synced.abort();
    token.cancel();
    let drained = match end {
        End::Lost => false,
        End::Released(last) => {
            let tasks = futures::future::join_all(running.iter_mut().map(|c| &mut c.task));
            let never = CancellationToken::new();
            tokio::select! {
                done = tokio::time::timeout(shared.config.drain_timeout, tasks) => done.is_ok(),
                // Lost while draining: stop at once, as below.
                _ = renew(&h, last, &never) => false,
            }
        }
    };
    let window_end = shared.fence.window_end(shard);
    shared.fence.close(shard);
    for c in &running {
        c.task.abort();
    }
    // The Lease goes only once every write of this hold was answered (an Event still on its way
    // among them); a write aborted or dropped unanswered may yet be applied, so then it expires.
    let settled = match (&end, window_end) {
        (End::Released(_), Some(until)) if drained => shared.fence.settle(shard, until).await,
        _ => false,
    };
    match (end, drained && settled) {
        (End::Released(_), true) => {
            elector.release().await;
            tracing::info!(%shard, "released shard");
        }
        (End::Released(_), false) => {
            elector.stop_leading();
            tracing::warn!(
                %shard,
                drained,
                "in-flight syncs or writes did not finish with an answer in time; leaving the lease to expire"
            );
        }
        (End::Lost, _) => {
            elector.stop_leading();
            tracing::error!(%shard, "shard lease not renewed within the renew deadline; stopped its controllers without draining");
        }
    }
    on_stop();
    shared.host.leading(&cfg.name, false);
}

/// Renews every retry period until released (Released, with the last success's start) or no renewal
/// succeeds within the renew deadline of the last success's start (Lost). Each success waits for the
/// manager's confirmation to move the fence.
async fn renew(h: &Hold, won_at: Instant, release: &CancellationToken) -> End {
    let elector = &h.elector;
    let cfg = elector.config();
    let mut last = won_at;
    loop {
        tokio::select! {
            () = release.cancelled() => return End::Released(last),
            () = tokio::time::sleep(cfg.retry_period) => {}
        }
        let deadline = last + cfg.renew_deadline;
        let suspended = h.shared.fence.suspended_now();
        let attempt = tokio::select! {
            () = release.cancelled() => return End::Released(last),
            a = tokio::time::timeout_at(deadline, elector.try_lead()) => a,
        };
        match attempt {
            Ok(Some(started)) => {
                last = started;
                h.renewed.lock().push(Renewal {
                    started,
                    suspended,
                    answered: Instant::now(),
                });
            }
            Ok(None) | Err(_) if Instant::now() >= deadline => return End::Lost,
            Ok(None) | Err(_) => {}
        }
    }
}

/// Whether the shard's write fence lets writes out now: every controller of the shard synced and the
/// hold confirmed. Each controller's workers wait for it, so that none syncs while the others' caches
/// still fill (its writes would be refused as "waits for its caches to sync").
fn fence_open(shared: &Shared, shard: Shard) -> controller::StartGate {
    let fence = shared.fence.clone();
    Arc::new(move || fence.shard_open(shard, Instant::now()).is_ok())
}

/// The host's controllers on informers of this shard only: read with the shard's selector from the
/// API server, or (`cached`) from views of the replica-wide caches.
fn start_controllers(
    shared: &Shared,
    shard: Shard,
    cached: bool,
    token: &CancellationToken,
) -> Result<Running, crate::HostError> {
    shared.host.start(ShardStart {
        shard,
        set: ShardSet::one(shard),
        server: shared.server.clone(),
        reads: if cached {
            Reads::Cached(shared.caches.clone())
        } else {
            Reads::Selector
        },
        gate: fence_open(shared, shard),
        cancel: token,
    })
}
