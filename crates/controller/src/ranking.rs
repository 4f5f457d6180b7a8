//! Which pods a ReplicaSet deletes first when it scales down (upstream `ActivePodsWithRanks`, with
//! pod-deletion-cost and logarithmic scale-down, both on by default since 1.22/1.31).
//!
//! # A total order, where upstream's is not
//!
//! Upstream's `Less` is not a strict weak order. In the two time tiers (6: ready since, 8: created)
//! two pods whose times differ but fall in the same log2 bucket are ordered by UID, while two pods
//! whose times are *exactly* equal fall through to the next tier. With `a` and `b` Ready in the same
//! second and `c` one second later in the same bucket, `uid(a) < uid(c) < uid(b)` gives `a < c`,
//! `c < b`, and then restarts or creation time may well say `b < a`: a cycle. Go's `sort.Sort`
//! tolerates that (the result is just some order); Rust's sorts may panic on it, and did, in the
//! workers of this controller.
//!
//! Here every pod gets a key and keys compare lexicographically, which is a total order by
//! construction. In a time tier, pods with the same preceding tiers are grouped by their exact time;
//! a group's place within its bucket is the smallest UID in the group, and the pods of one group
//! (exactly equal times) fall through to the next tier, as upstream. So the two orders agree:
//! * for any two pods on their own (upstream decides every pair consistently);
//! * whenever every time in a bucket is distinct (upstream: UID order) or all are equal (upstream:
//!   the next tiers).
//!
//! They can differ only where a bucket mixes equal and distinct times, which is exactly where
//! upstream's own order depends on how its sort happens to visit the pods. The last tie-break, for
//! pods equal in every tier, is the UID (upstream leaves such ties to its unstable sort).

use crate::compact_pod::Pod;
use std::{cmp::Reverse, collections::HashMap, sync::Arc};

use k8s_openapi::jiff::Timestamp;

use crate::pod_util::{
    deletion_cost, is_active, is_ready, max_container_restarts, max_sidecar_restarts, phase, ready_since,
};

/// What the ranking may look at besides the pods (feature gates that change it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankingOptions {
    /// Tier 4 (gate `PodDeletionCost`, on by default since 1.22).
    pub pod_deletion_cost: bool,
}

impl Default for RankingOptions {
    fn default() -> Self {
        RankingOptions {
            pod_deletion_cost: true,
        }
    }
}

/// `count` pods of `pods` to delete, best candidates first. `related` are the pods of every ReplicaSet
/// with the same controller (a Deployment's ReplicaSets): a pod on a node crowded with related pods goes
/// before one that is alone, which spreads the survivors.
pub fn pods_to_delete(
    pods: &[Arc<Pod>],
    related: &[Arc<Pod>],
    count: usize,
    now: Timestamp,
) -> Vec<Arc<Pod>> {
    pods_to_delete_with(pods, related, count, now, RankingOptions::default())
}

/// [`pods_to_delete`] with explicit feature gates.
pub fn pods_to_delete_with(
    pods: &[Arc<Pod>],
    related: &[Arc<Pod>],
    count: usize,
    now: Timestamp,
    options: RankingOptions,
) -> Vec<Arc<Pod>> {
    if count >= pods.len() {
        return pods.to_vec();
    }
    let mut ranked: Vec<(RankKey<'_>, &Arc<Pod>)> = rank_keys(pods, related, now, options)
        .into_iter()
        .zip(pods)
        .collect();
    ranked.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
    ranked.into_iter().take(count).map(|(_, p)| p.clone()).collect()
}

/// Each pod's key, in the order of `pods`. Each pod's facts are computed once, not at every
/// comparison of the sort.
pub(crate) fn rank_keys<'a>(
    pods: &'a [Arc<Pod>],
    related: &[Arc<Pod>],
    now: Timestamp,
    options: RankingOptions,
) -> Vec<RankKey<'a>> {
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for p in related.iter().filter(|p| is_active(p)) {
        *on_node.entry(node(p)).or_default() += 1;
    }
    let mut keys: Vec<RankKey<'a>> = pods
        .iter()
        .map(|p| {
            let rank = on_node.get(node(p)).copied().unwrap_or(0);
            RankKey::new(p, rank, now, options)
        })
        .collect();
    // Tier 6: the group of pods Ready at exactly the same time, among those equal in tiers 1-5.
    let ready_times: Vec<Option<i128>> = pods
        .iter()
        .zip(&keys)
        .map(|(p, k)| {
            if k.ready {
                ready_since(p).map(|t| t.as_nanosecond())
            } else {
                None
            }
        })
        .collect();
    let groups = smallest_uid_per_group(&keys, &ready_times, RankKey::before_ready_age);
    for ((key, time), group) in keys.iter_mut().zip(&ready_times).zip(groups) {
        if let (Some(_), TimeRank::At { group_uid, .. }) = (time, &mut key.ready_age) {
            *group_uid = group;
        }
    }
    // Tier 8: the group of pods created at exactly the same time, among those equal in tiers 1-7.
    let created_times: Vec<Option<i128>> = pods
        .iter()
        .map(|p| created(p).map(|t| t.as_nanosecond()))
        .collect();
    let groups = smallest_uid_per_group(&keys, &created_times, RankKey::before_created_age);
    for ((key, time), group) in keys.iter_mut().zip(&created_times).zip(groups) {
        if let (Some(_), TimeRank::At { group_uid, .. }) = (time, &mut key.created_age) {
            *group_uid = group;
        }
    }
    keys
}

/// For each key with a time, the smallest UID among the keys with the same `prefix` and exactly the
/// same time ("" for keys without a time).
fn smallest_uid_per_group<'a, P: Eq + std::hash::Hash>(
    keys: &[RankKey<'a>],
    times: &[Option<i128>],
    prefix: impl Fn(&RankKey<'a>) -> P,
) -> Vec<&'a str> {
    let mut smallest: HashMap<(P, i128), &'a str> = HashMap::new();
    for (key, time) in keys.iter().zip(times) {
        if let Some(t) = time {
            smallest
                .entry((prefix(key), *t))
                .and_modify(|u| *u = (*u).min(key.uid))
                .or_insert(key.uid);
        }
    }
    keys.iter()
        .zip(times)
        .map(|(key, time)| time.map_or("", |t| smallest[&(prefix(key), t)]))
        .collect()
}

/// What the ranking looks at, for one pod, in comparison order: smaller goes first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RankKey<'a> {
    /// 1. Unassigned before assigned.
    pub(crate) assigned: bool,
    /// 2. Pending < Unknown < Running.
    pub(crate) phase: u8,
    /// 3. Not ready before ready.
    pub(crate) ready: bool,
    /// 4. Lower pod-deletion-cost first (0 with the gate off).
    pub(crate) cost: i32,
    /// 5. More active related pods on the same node first.
    pub(crate) rank: Reverse<usize>,
    /// 6. Both ready: ready for less time first (`TimeRank::None` when not ready).
    pub(crate) ready_age: TimeRank<'a>,
    /// 7. More restarts of regular containers first, then of sidecar (restartable init) containers.
    pub(crate) restarts: Reverse<i32>,
    pub(crate) sidecar_restarts: Reverse<i32>,
    /// 8. Newer first.
    pub(crate) created_age: TimeRank<'a>,
    /// Equal in every tier: a stable, arbitrary choice.
    pub(crate) uid: &'a str,
}

/// A time in a ranking tier. `Zero` (no time) sorts first, as upstream's zero `metav1.Time`; then
/// the base-2 logarithm of the age in nanoseconds (younger first), so that pods of similar age are
/// not told apart by small clock differences; then the group of exactly equal times (see the module
/// docs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum TimeRank<'a> {
    /// The tier does not apply (tier 6 for pods that are not ready): equal to every other `None`.
    None,
    Zero,
    At {
        bucket: i64,
        group_uid: &'a str,
    },
}

type ReadyPrefix = (bool, u8, bool, i32, Reverse<usize>);

impl<'a> RankKey<'a> {
    fn new(p: &'a Pod, rank: usize, now: Timestamp, options: RankingOptions) -> Self {
        let ready = is_ready(p);
        let ready_age = if ready {
            time_rank(ready_since(p), now)
        } else {
            TimeRank::None
        };
        RankKey {
            assigned: !node(p).is_empty(),
            phase: phase_ordinal(p),
            ready,
            cost: if options.pod_deletion_cost {
                deletion_cost(p)
            } else {
                0
            },
            rank: Reverse(rank),
            ready_age,
            restarts: Reverse(max_container_restarts(p)),
            sidecar_restarts: Reverse(max_sidecar_restarts(p)),
            created_age: time_rank(created(p), now),
            uid: uid(p),
        }
    }

    fn before_ready_age(&self) -> ReadyPrefix {
        (self.assigned, self.phase, self.ready, self.cost, self.rank)
    }

    fn before_created_age(&self) -> (ReadyPrefix, TimeRank<'a>, Reverse<i32>, Reverse<i32>) {
        (
            self.before_ready_age(),
            self.ready_age.clone(),
            self.restarts,
            self.sidecar_restarts,
        )
    }
}

/// A missing time is upstream's zero time; the group is filled in by [`rank_keys`].
fn time_rank<'a>(t: Option<Timestamp>, now: Timestamp) -> TimeRank<'a> {
    match t {
        None => TimeRank::Zero,
        Some(t) => TimeRank::At {
            bucket: log2_age(t, now),
            group_uid: "",
        },
    }
}

/// Go's `int64(math.Log2(float64(now - t)))`, and -1 for a time not in the past.
fn log2_age(t: Timestamp, now: Timestamp) -> i64 {
    let nanos = now.as_nanosecond() - t.as_nanosecond();
    if nanos <= 0 {
        return -1;
    }
    // Truncation toward zero of a non-negative value, as Go's conversion.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let r = (nanos as f64).log2() as i64;
    r
}

fn phase_ordinal(p: &Pod) -> u8 {
    match phase(p) {
        "Pending" => 0,
        "Unknown" => 1,
        "Running" => 2,
        // Upstream's map has no other entries, so any other phase ranks as 0 too.
        _ => 0,
    }
}

fn node(p: &Pod) -> &str {
    p.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

fn created(p: &Pod) -> Option<Timestamp> {
    p.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

fn uid(p: &Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

/// Upstream's pairwise `Less` as a comparison, for tests: what the order must agree with on any two
/// pods taken on their own.
#[cfg(test)]
pub(crate) fn upstream_pair_order(
    a: &Pod,
    rank_a: usize,
    b: &Pod,
    rank_b: usize,
    now: Timestamp,
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let pods = [Arc::new(a.clone()), Arc::new(b.clone())];
    let ka = RankKey::new(&pods[0], rank_a, now, RankingOptions::default());
    let kb = RankKey::new(&pods[1], rank_b, now, RankingOptions::default());
    // Exactly equal times fall through; otherwise bucket then UID.
    let time_tier = |ta: Option<Timestamp>, tb: Option<Timestamp>, ra: &TimeRank<'_>, rb: &TimeRank<'_>| {
        if ta == tb {
            return Ordering::Equal;
        }
        match (ra, rb) {
            (TimeRank::At { bucket: x, .. }, TimeRank::At { bucket: y, .. }) if x == y => ka.uid.cmp(kb.uid),
            (TimeRank::At { bucket: x, .. }, TimeRank::At { bucket: y, .. }) => x.cmp(y),
            _ => ra.cmp(rb),
        }
    };
    let ready_a = ready_since(a).filter(|_| ka.ready);
    let ready_b = ready_since(b).filter(|_| kb.ready);
    ka.before_ready_age()
        .cmp(&kb.before_ready_age())
        .then_with(|| {
            if ka.ready && kb.ready {
                time_tier(ready_a, ready_b, &ka.ready_age, &kb.ready_age)
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| ka.restarts.cmp(&kb.restarts))
        .then_with(|| ka.sidecar_restarts.cmp(&kb.sidecar_restarts))
        .then_with(|| time_tier(created(a), created(b), &ka.created_age, &kb.created_age))
}

#[cfg(test)]
#[path = "ranking_tests.rs"]
mod tests;
