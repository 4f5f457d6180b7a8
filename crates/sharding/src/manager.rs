//! The shard manager: one round every retry period renews the membership Lease, lists the Leases
//! (one LIST feeds membership, claims, every shard's elector and the refitted cuts' record), plans
//! with the fair share, and acts: acquires free shards, releases surplus, follows refitted cuts.

use std::{collections::BTreeMap, sync::Arc};

use informer::{ServerSharding, Shard, WatchCaches};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api,
    api::{DeleteParams, ListParams},
};
use leaderelection::{ConfigError, LeaderElectionConfig, LeaderElector};
use parking_lot::Mutex;
use tokio::{task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    claims::Claims,
    fence::WriteFence,
    held::{self, Held},
    host::{Config, Host, HostError, Round},
    leases::{PROBE_AGAIN_AFTER, check_claims, confirm, delete_unchanged, jittered, probe_filtering},
    members::{self, Members, member_lease_name},
    names::shard_lease_name,
    plan, refit,
    status::{RoundState, Status, snapshot},
};

/// Why sharing the work could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("sharded leader election flags: {0}")]
    Election(#[from] ConfigError),
    #[error("sharding: {0}")]
    Host(HostError),
}

/// What the manager and every held shard work from.
pub(crate) struct Shared {
    pub config: Config,
    pub host: Arc<dyn Host>,
    pub fence: Arc<WriteFence>,
    /// What the API server's answers said of its sharding.
    pub server: Arc<ServerSharding>,
    /// One list-and-watch per kind for every held shard, when the API server does not filter.
    pub caches: Arc<WatchCaches>,
}

/// Shares the work until `cancel` fires, then releases every shard and the membership Lease.
/// `fence` is the one the controllers' clients carry; `caches` serve the held shards when the API
/// server does not filter by shard; `status` is what `/debug/shards` shows.
pub async fn run(
    config: Config,
    host: Arc<dyn Host>,
    fence: Arc<WriteFence>,
    caches: Arc<WatchCaches>,
    status: Arc<Mutex<Status>>,
    cancel: CancellationToken,
) -> Result<(), Error> {
    let shared = Arc::new(Shared {
        config,
        host,
        fence,
        server: Arc::default(),
        caches,
    });
    let cfg = &shared.config;
    let mut layout = cfg.layout.clone();
    let count = layout.count();
    let client = shared.host.lease_client().map_err(Error::Host)?;
    let elector = |name: String| -> Result<Arc<LeaderElector>, ConfigError> {
        let mut lec = LeaderElectionConfig::new(&cfg.namespace, name, cfg.identity.clone());
        lec.lease_duration = cfg.lease_duration;
        lec.renew_deadline = cfg.renew_deadline;
        lec.retry_period = cfg.retry_period;
        lec.release_on_cancel = true;
        Ok(Arc::new(LeaderElector::new(client.clone(), lec)?))
    };
    let member_name = member_lease_name(&layout.to_string(), &cfg.identity, cfg.pod.as_deref());
    let member = elector(member_name.clone())?;
    member.config().validate_fence_margin()?;
    let mut shards: Vec<Shard> = layout.shards();
    let mut electors = shards
        .iter()
        .map(|s| elector(shard_lease_name(*s)))
        .collect::<Result<Vec<_>, _>>()?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &cfg.namespace);
    let mut members = Members::new(member_name.clone(), &layout.to_string(), Instant::now());
    let mut claims = Claims::new(&cfg.unsharded_lock);
    let mut held: BTreeMap<u32, Held> = BTreeMap::new();
    let joined = Instant::now();
    // After two claimers saw each other, each waits a random while before claiming again.
    let mut acquire_after = joined;
    // Shards released because their caches did not sync, left alone until then.
    let mut avoid: BTreeMap<u32, Instant> = BTreeMap::new();
    // With refitted cuts: the version followed, the refit under way, and when the next may start.
    let mut record: Option<refit::Record> = None;
    let mut refitting: Option<JoinHandle<()>> = None;
    let mut refit_at = joined;
    // When to ask the API server again whether it filters by shard (every round while unknown).
    let mut probe_at = joined;
    tracing::info!(shards = count, cuts = %layout.cuts_text(), identity = %cfg.identity, "sharing the work by namespace hash");
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(cfg.retry_period) => {}
        }
        if member.try_lead().await.is_none() {
            tracing::warn!("could not renew this replica's membership Lease");
        }
        if shared.server.filters() != Some(true) && Instant::now() >= probe_at {
            probe_at = Instant::now() + PROBE_AGAIN_AFTER;
            let probe = probe_filtering(&shared, shards[0]);
            if tokio::time::timeout(cfg.retry_period, probe).await.is_err() {
                tracing::warn!("asking whether the API server filters by shard: no answer in time");
            }
            if shared.server.filters().is_none() {
                probe_at = Instant::now();
            }
        }
        let listed_at = Instant::now();
        let list = match leases.list(&ListParams::default()).await {
            Ok(l) => l.items,
            Err(e) => {
                tracing::warn!("listing the Leases: {e}");
                continue;
            }
        };
        let now = Instant::now();
        members.observe(&list, now);
        claims.observe(&list, now);
        let ld = cfg.lease_duration;
        delete_unchanged(&leases, members.stale(now, ld), "membership").await;
        if layout.is_auto() {
            match refit::Record::read(&list, count) {
                Ok(Some(r)) if r.layout != layout => {
                    tracing::info!(generation = r.generation, cuts = %r.layout.cuts_text(), "following refitted shard cuts");
                    for (i, shard) in r.layout.shards().into_iter().enumerate() {
                        if shard != shards[i] {
                            electors[i] = elector(shard_lease_name(shard))?;
                            shards[i] = shard;
                            if let Some(h) = held.get(&shard.index()) {
                                tracing::info!(shard = %h.shard, "releasing a shard whose range the refit moved");
                                h.release.cancel();
                            }
                        }
                    }
                    layout = r.layout.clone();
                    record = Some(r);
                }
                // The same cuts, or no record (deleted: the cuts followed stay, and the next refit
                // creates it again rather than replace what is gone).
                Ok(r) => record = r,
                Err(e) => tracing::warn!("{e}; keeping the cuts followed"),
            }
            let after = ld * members::STALE_AFTER_LEASE_DURATIONS;
            delete_unchanged(&leases, claims.retired(&layout, now, after), "retired shard").await;
        }
        confirm(&shared, &mut held, &claims, listed_at, now);
        let mut free = Vec::new();
        for (shard, e) in shards.iter().zip(&electors) {
            // A held shard's elector knows its Lease from its own renewals; observing it here would
            // wait for the elector's lock through a renewal PUT, and a round of such waits could
            // outlast a lease duration (review finding S2(b)).
            if held.contains_key(&shard.index()) {
                continue;
            }
            let name = &e.config().name;
            e.observe(list.iter().find(|l| l.metadata.name.as_ref() == Some(name)))
                .await;
            // A shard of refitted cuts may overlap one of the old cuts still held here (draining).
            if !held.values().any(|h| h.shard.overlaps(*shard))
                && !e.held_by_other().await
                && !claims.blocks(*shard, &cfg.identity, now)
            {
                free.push(shard.index());
            }
        }
        held.retain(|index, h| {
            let finished = h.task.is_finished();
            if finished && h.unsynced.load(std::sync::atomic::Ordering::Relaxed) {
                let bound = cfg.lease_duration * held::SYNC_BOUND_LEASE_DURATIONS;
                avoid.insert(*index, now + bound);
            }
            !finished
        });
        avoid.retain(|_, until| now < *until);
        free.retain(|index| !avoid.contains_key(index));
        let mine: Vec<u32> = held.keys().copied().collect();
        let mixed = members.mixed();
        let view = plan::View {
            identity: &cfg.identity,
            count,
            live: members.live(),
            rank: members.rank(),
            held: &mine,
            free: &free,
            stable: members.stable(now, cfg.lease_duration),
            mixed,
            serving: claims.layout_serves(&layout, now) || (!claims.any_live(now) && members.first_layout()),
        };
        // A replica that just joined waits two rounds, so that replicas started together first see
        // each other's membership Leases instead of all taking everything.
        let plan = if now < joined + cfg.retry_period * 2 || now < acquire_after {
            plan::Plan {
                release: plan::plan(&view).release,
                ..plan::Plan::default()
            }
        } else {
            plan::plan(&view)
        };
        if view.mixed {
            tracing::warn!(
                serving = view.serving,
                "a live member runs with another --shards; this layout {}",
                if view.serving {
                    "keeps serving and releases nothing"
                } else {
                    "waits for the other"
                }
            );
        }
        let mut won = Vec::new();
        for index in plan.acquire {
            let suspended = shared.fence.suspended_now();
            if let Some(won_at) = electors[index as usize].try_lead().await {
                won.push((index, won_at, suspended));
            }
        }
        if !won.is_empty() {
            let clashing = check_claims(&leases, &mut claims, &shards, &won, &cfg.identity).await;
            if !clashing.is_empty() {
                for index in &clashing {
                    electors[*index as usize].release().await;
                }
                won.retain(|(index, ..)| !clashing.contains(index));
                acquire_after = Instant::now() + jittered(cfg.retry_period * 2);
            }
        }
        for (index, won_at, suspended) in won {
            let shard = shards[index as usize];
            let elector = electors[index as usize].clone();
            held.insert(
                index,
                Held::start(shared.clone(), shard, elector, (won_at, suspended)),
            );
        }
        for index in plan.release {
            if let Some(h) = held.get(&index) {
                tracing::info!(shard = %h.shard, "releasing surplus shard");
                h.release.cancel();
            }
        }
        if layout.is_auto()
            && !view.mixed
            && view.rank == 0
            && view.stable
            && now >= refit_at
            && refitting.as_ref().is_none_or(JoinHandle::is_finished)
        {
            refit_at = now + cfg.refit_interval;
            match shared.host.read_client(None) {
                Ok(reader) => {
                    refitting = Some(tokio::spawn(refit::run(
                        reader,
                        leases.clone(),
                        record.clone(),
                        layout.clone(),
                        cfg.identity.clone(),
                    )));
                }
                Err(e) => tracing::warn!("weighing the namespaces to refit the shard cuts: {e}"),
            }
        }
        shared.host.round_done(Round {
            held: held.len(),
            free: free.len(),
            mixed: view.mixed,
        });
        let round = RoundState {
            layout: &layout,
            generation: record.as_ref().map(|r| r.generation),
            target: plan::target(count, view.live, view.rank),
            mixed: view.mixed,
        };
        *status.lock() = snapshot(&shared, &round, &members, &held);
    }
    if let Some(t) = refitting {
        t.abort();
    }
    tracing::info!(held = held.len(), "releasing every shard");
    for h in held.values() {
        h.release.cancel();
    }
    for (_, h) in held {
        let _ = h.task.await;
    }
    shared.caches.stop();
    // Each start makes a membership Lease of its own: this one's goes with it.
    member.stop_leading();
    if let Err(e) = leases.delete(&member_name, &DeleteParams::default()).await {
        tracing::warn!(lease = %member_name, "deleting this replica's membership Lease: {e}");
    }
    Ok(())
}
