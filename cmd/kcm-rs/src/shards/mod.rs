//! Scale-out: with `--shards=N` (N > 1) replicas of kcm-rs share the work by namespace hash, each
//! shard owned through a Lease of its own (`kcm-rs-shard-<i>-of-<N>`), read through Kubernetes 1.36's
//! server-side sharded list and watch. The design and the argument that two replicas never act on
//! one shard at once are in `docs/scale-out.md`; where to read here:
//!
//! * this file: the manager, one round every retry period: renew the membership Lease, list the
//!   Leases, let every shard's elector observe its Lease, plan, act;
//! * `plan`: the fair-share rule, pure;
//! * `members`: the membership Leases and the live count;
//! * `held`: one held shard, from acquisition to release or loss (`shared`: what it starts from);
//! * `refit`: with `--shard-cuts=auto`, the record of the cuts and when to refit them;
//! * `crate::fence`: the write fence in the controllers' clients;
//! * `crate::shard_selector`: the `shardSelector` on the shard informers' requests.

mod claims;
mod held;
mod members;
mod plan;
mod refit;
mod shared;
mod unsharded;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use anyhow::Context as _;
use informer::{ListerWatcher as _, Shard, ShardFiltered, ShardSet};
use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kube::{
    Api,
    api::{DeleteParams, ListParams, Preconditions},
};
use leaderelection::{LeaderElectionConfig, LeaderElector};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use claims::Claims;
use held::Held;
use members::{Members, member_lease_name};
pub use shared::Shared;
use shared::shard_lease_name;
pub use unsharded::Exclusion;

use crate::{
    client::{LEADER_ELECTION, SHARED_INFORMERS},
    server::LEADER_ELECTION_HEALTH_TOLERANCE,
    shard_selector::SelectorLayer,
};

/// While the API server is not known to filter by shard, a replica asks again this often, so that
/// shards taken after the gate was turned on read with their own selector again.
const PROBE_AGAIN_AFTER: Duration = Duration::from_secs(60);

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

/// Shares the work until `cancel` fires, then releases every shard and the membership Lease.
pub async fn run(
    shared: Arc<Shared>,
    status: Arc<Mutex<Status>>,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let args = &shared.args;
    let mut layout = shared.layout.clone();
    let count = layout.count();
    let client = shared.clients.client_for(LEADER_ELECTION)?;
    let elector = |name: String| -> anyhow::Result<Arc<LeaderElector>> {
        let mut cfg = LeaderElectionConfig::new(
            &args.leader_elect_resource_namespace,
            name,
            shared.identity.clone(),
        );
        cfg.lease_duration = args.leader_elect_lease_duration;
        cfg.renew_deadline = args.leader_elect_renew_deadline;
        cfg.retry_period = args.leader_elect_retry_period;
        cfg.release_on_cancel = true;
        Ok(Arc::new(
            LeaderElector::new(client.clone(), cfg).context("leader election flags")?,
        ))
    };
    let member_name = member_lease_name(&layout.to_string(), &shared.identity, shared.pod.as_deref());
    let member = elector(member_name.clone())?;
    member
        .config()
        .validate_fence_margin()
        .context("sharded leader election flags")?;
    let mut shards: Vec<Shard> = layout.shards();
    let mut electors = shards
        .iter()
        .map(|s| elector(shard_lease_name(*s)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &args.leader_elect_resource_namespace);
    let mut members = Members::new(member_name.clone(), &layout.to_string(), Instant::now());
    let mut claims = Claims::new(&args.leader_elect_resource_name);
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
    tracing::info!(shards = count, cuts = %layout.cuts_text(), identity = %shared.identity, "sharing the work by namespace hash");
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(args.leader_elect_retry_period) => {}
        }
        if member.try_lead().await.is_none() {
            tracing::warn!("could not renew this replica's membership Lease");
        }
        if shared.server.filters() != Some(true) && Instant::now() >= probe_at {
            probe_at = Instant::now() + PROBE_AGAIN_AFTER;
            let probe = probe_filtering(&shared, shards[0]);
            if tokio::time::timeout(args.leader_elect_retry_period, probe)
                .await
                .is_err()
            {
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
        let ld = args.leader_elect_lease_duration;
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
                Ok(r) => record = r.or(record),
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
                && !claims.blocks(*shard, &shared.identity, now)
            {
                free.push(shard.index());
            }
        }
        held.retain(|index, h| {
            let finished = h.task.is_finished();
            if finished && h.unsynced.load(std::sync::atomic::Ordering::Relaxed) {
                let bound = args.leader_elect_lease_duration * held::SYNC_BOUND_LEASE_DURATIONS;
                avoid.insert(*index, now + bound);
            }
            !finished
        });
        avoid.retain(|_, until| now < *until);
        free.retain(|index| !avoid.contains_key(index));
        let mine: Vec<u32> = held.keys().copied().collect();
        let mixed = members.mixed();
        let view = plan::View {
            identity: &shared.identity,
            count,
            live: members.live(),
            rank: members.rank(),
            held: &mine,
            free: &free,
            stable: members.stable(now, args.leader_elect_lease_duration),
            mixed,
            serving: claims.layout_serves(&layout, now) || (!claims.any_live(now) && members.first_layout()),
        };
        // A replica that just joined waits two rounds, so that replicas started together first see
        // each other's membership Leases instead of all taking everything.
        let plan = if now < joined + args.leader_elect_retry_period * 2 || now < acquire_after {
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
            let clashing = check_claims(&leases, &mut claims, &shards, &won, &shared.identity).await;
            if !clashing.is_empty() {
                for index in &clashing {
                    electors[*index as usize].release().await;
                }
                won.retain(|(index, ..)| !clashing.contains(index));
                acquire_after = Instant::now() + jittered(args.leader_elect_retry_period * 2);
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
            refit_at = now + args.shard_refit_interval;
            refitting = Some(tokio::spawn(refit::run(
                shared.clients.client_for(SHARED_INFORMERS)?,
                leases.clone(),
                record.clone(),
                layout.clone(),
                shared.identity.clone(),
            )));
        }
        let gauges = &shared.metrics.shards;
        gauges.held.set(i64::try_from(held.len()).unwrap_or(i64::MAX));
        gauges.free.set(i64::try_from(free.len()).unwrap_or(i64::MAX));
        gauges.mixed.set(i64::from(view.mixed));
        shared
            .health
            .round_done(args.leader_elect_lease_duration + LEADER_ELECTION_HEALTH_TOLERANCE);
        *status.lock() = Status {
            cuts: layout.cuts_text(),
            cuts_generation: record.as_ref().map(|r| r.generation),
            ..snapshot(
                &shared,
                &members,
                &held,
                plan::target(count, view.live, view.rank),
                view.mixed,
            )
        };
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

/// Asks the API server whether it filters by shard, before the first shard is held and then every
/// [`PROBE_AGAIN_AFTER`] while it does not: a one-pod LIST with a `shardSelector` carries
/// `shardInfo` only if it does. A shard held while this is unknown reads from the replica-wide
/// caches, which is right either way.
async fn probe_filtering(shared: &Shared, shard: Shard) {
    let set = ShardSet::one(shard);
    let client = match shared
        .clients
        .client_with(SHARED_INFORMERS, SelectorLayer::new(&set.selector()))
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("asking whether the API server filters by shard: {e}");
            return;
        }
    };
    let pods = ShardFiltered::new(Api::<Pod>::all(client), set, shared.server.clone(), "pods");
    match pods.list(&ListParams::default().limit(1)).await {
        Ok(_) => tracing::info!(
            filters = ?shared.server.filters(),
            "asked whether the API server filters lists and watches by shard"
        ),
        Err(e) => tracing::warn!("asking whether the API server filters by shard: {e}"),
    }
}

/// Deletes Leases nobody will renew again (membership Leases of processes gone long ago, which
/// killed ones never delete; shard Leases of ranges a refit retired), each only if unchanged since
/// it was listed.
async fn delete_unchanged(leases: &Api<Lease>, stale: Vec<(String, Option<String>)>, what: &str) {
    for (name, resource_version) in stale {
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version,
                uid: None,
            }),
            ..DeleteParams::default()
        };
        match leases.delete(&name, &dp).await {
            Ok(_) => tracing::info!(lease = %name, "deleted a {what} Lease nobody renews"),
            Err(e) => tracing::debug!(lease = %name, "deleting a stale {what} Lease: {e}"),
        }
    }
}

/// Moves the fence of every held shard whose last renewal was answered before `listed_at`, unless an
/// overlapping claim of another layout is live: then the shard is given up at once, its fence closed.
fn confirm(
    shared: &Shared,
    held: &mut BTreeMap<u32, Held>,
    claims: &Claims,
    listed_at: Instant,
    now: Instant,
) {
    let renew_deadline = shared.args.leader_elect_renew_deadline;
    for h in held.values_mut().filter(|h| !h.conflict) {
        let Some((started, suspended)) = h.unconfirmed(listed_at) else {
            continue;
        };
        if claims.blocks(h.shard, &shared.identity, now) {
            tracing::warn!(shard = %h.shard, "a claim of another layout overlaps this shard; giving it up");
            h.conflict = true;
            shared.fence.close(h.shard);
            h.release.cancel();
        } else {
            shared.fence.renewed(h.shard, started + renew_deadline, suspended);
        }
    }
}

/// After winning `won`, lists the Leases again (a read begun after the claims were committed): the
/// shards of `won` that overlap a live claim of another layout, to be given up (all of them if the
/// list fails). Each shard's claim stands or falls on its own range. Of two layouts claiming at once,
/// the later claimer always sees the earlier one; both may back off.
async fn check_claims(
    leases: &Api<Lease>,
    claims: &mut Claims,
    shards: &[Shard],
    won: &[(u32, Instant, Duration)],
    identity: &str,
) -> Vec<u32> {
    let list = match leases.list(&ListParams::default()).await {
        Ok(l) => l.items,
        Err(e) => {
            tracing::warn!("listing the Leases after claiming: {e}; giving the claims up");
            return won.iter().map(|(i, ..)| *i).collect();
        }
    };
    let now = Instant::now();
    claims.observe(&list, now);
    won.iter()
        .map(|(i, ..)| *i)
        .filter(|i| {
            let shard = shards[*i as usize];
            let clash = claims.blocks(shard, identity, now);
            if clash {
                tracing::warn!(%shard, "another layout claimed an overlapping range meanwhile; backing off");
            }
            clash
        })
        .collect()
}

/// `d` times a random factor from 1 to 2.
fn jittered(d: std::time::Duration) -> std::time::Duration {
    d.mul_f64(1.0 + rand::random::<f64>())
}

fn snapshot(
    shared: &Shared,
    members: &Members,
    held: &BTreeMap<u32, Held>,
    target: usize,
    mixed: bool,
) -> Status {
    Status {
        identity: shared.identity.clone(),
        shards: shared.args.shards,
        cuts: String::new(),
        cuts_generation: None,
        live_members: members.live_names().map(str::to_owned).collect(),
        target,
        mixed_counts: mixed,
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
