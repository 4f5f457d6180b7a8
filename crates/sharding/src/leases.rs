//! The manager's requests on Leases beside the electors' own: the look after claiming, the
//! clean-up of Leases nobody renews, the moving of fences after a confirmed renewal, and the
//! probe of whether the API server filters by shard.

use std::{collections::BTreeMap, time::Duration};

use informer::{ListerWatcher as _, Shard, ShardFiltered, ShardSet};
use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kube::{
    Api,
    api::{DeleteParams, ListParams, Preconditions},
};
use tokio::time::Instant;

use crate::{claims::Claims, held::Held, manager::Shared};

/// While the API server is not known to filter by shard, a replica asks again this often, so that
/// shards taken after the gate was turned on read with their own selector again.
pub(crate) const PROBE_AGAIN_AFTER: Duration = Duration::from_secs(60);

/// Asks the API server whether it filters by shard, before the first shard is held and then every
/// [`PROBE_AGAIN_AFTER`] while it does not: a one-pod LIST with a `shardSelector` carries
/// `shardInfo` only if it does. A shard held while this is unknown reads from the replica-wide
/// caches, which is right either way.
pub(crate) async fn probe_filtering(shared: &Shared, shard: Shard) {
    let set = ShardSet::one(shard);
    let client = match shared.host.read_client(Some(&set.selector())) {
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
pub(crate) async fn delete_unchanged(leases: &Api<Lease>, stale: Vec<(String, Option<String>)>, what: &str) {
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
pub(crate) fn confirm(
    shared: &Shared,
    held: &mut BTreeMap<u32, Held>,
    claims: &Claims,
    listed_at: Instant,
    now: Instant,
) {
    let renew_deadline = shared.config.renew_deadline;
    for h in held.values_mut().filter(|h| !h.conflict) {
        let Some((started, suspended)) = h.unconfirmed(listed_at) else {
            continue;
        };
        if claims.blocks(h.shard, &shared.config.identity, now) {
            tracing::warn!(shard = %h.shard, "a claim of another layout overlaps this shard; giving it up");
            h.conflict = true;
            shared.fence.close(h.shard);
            h.release.cancel();
        } else {
            shared.fence.extend(h.shard, started + renew_deadline, suspended);
        }
    }
}

/// After winning `won`, lists the Leases again (a read begun after the claims were committed): the
/// shards of `won` that overlap a live claim of another layout, to be given up (all of them if the
/// list fails). Each shard's claim stands or falls on its own range. Of two layouts claiming at once,
/// the later claimer always sees the earlier one; both may back off.
pub(crate) async fn check_claims(
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
pub(crate) fn jittered(d: std::time::Duration) -> std::time::Duration {
    d.mul_f64(1.0 + rand::random::<f64>())
}
