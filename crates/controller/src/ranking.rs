//! Which pods a ReplicaSet deletes first when it scales down (upstream `ActivePodsWithRanks`, with
//! pod-deletion-cost and logarithmic scale-down, both on by default since 1.22/1.31).
//!
//! # Upstream's comparison, and a sort that takes it
//!
//! Upstream's `Less` is not a strict weak order. In the two time tiers (6: ready since, 8: created)
//! two pods whose times differ but fall in the same log2 bucket are ordered by UID, while two pods
//! whose times are *exactly* equal fall through to the next tier. With `a` and `b` Ready in the same
//! second and `c` one second later in the same bucket, `uid(a) < uid(c) < uid(b)` gives `a < c`,
//! `c < b`, and then restarts or creation time may well say `b < a`: a cycle. Go's `sort.Sort`
//! tolerates that (the result is just some order); Rust's sorts may panic on it, and did, in the
//! workers of this controller.
//!
//! So the comparison here is upstream's, tier by tier ([`less`]), and the pods are sorted by a merge
//! sort of this module's own ([`merge_sort`]), which neither panics nor loops whatever the comparison
//! says. Where upstream's comparison orders the pods consistently (often with pods Ready or created
//! in the same second, as KWOK's and a kubelet's batches are), that order is the only one there is,
//! and both sorts find it; only where it has a cycle is the result some order, as upstream's is. Pods
//! equal in every tier, which upstream leaves to its unstable sort, go by UID.

use crate::compact_pod::Pod;
use std::{collections::HashMap, sync::Arc};

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
    let keys = rank_keys(pods, related, now, options);
    let mut order: Vec<usize> = (0..pods.len()).collect();
    merge_sort(&mut order, |&i, &j| less(&keys[i], &keys[j]));
    order.into_iter().take(count).map(|i| pods[i].clone()).collect()
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
    pods.iter()
        .map(|p| {
            let rank = on_node.get(node(p)).copied().unwrap_or(0);
            RankKey::new(p, rank, now, options)
        })
        .collect()
}

/// Sorts `items` by `less`, stably. Unlike the standard library's sorts it neither panics nor loops
/// on a comparison that is no strict weak order (it only ever compares two items it holds, and moves
/// each item once per pass); where `less` is a strict total order on `items`, the result is the one
/// order it defines. Bottom-up, O(n log n) comparisons.
pub(crate) fn merge_sort<T: Copy>(items: &mut Vec<T>, less: impl Fn(&T, &T) -> bool) {
    let n = items.len();
    let mut from = std::mem::take(items);
    let mut into = from.clone();
    let mut width = 1;
    while width < n {
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut l, mut r) = (start, mid);
            for slot in &mut into[start..end] {
                // Take from the right only when it goes strictly first: equal items keep their order.
                let right = r < end && (l == mid || less(&from[r], &from[l]));
                *slot = if right { from[r] } else { from[l] };
                if right { r += 1 } else { l += 1 }
            }
        }
        std::mem::swap(&mut from, &mut into);
        width *= 2;
    }
    *items = from;
}

/// Upstream's `Less`, tier by tier: whether `a` goes before `b`. Pods equal in every tier go by UID.
pub(crate) fn less(a: &RankKey<'_>, b: &RankKey<'_>) -> bool {
    if a.assigned != b.assigned {
        return !a.assigned;
    }
    if a.phase != b.phase {
        return a.phase < b.phase;
    }
    if a.ready != b.ready {
        return !a.ready;
    }
    if a.cost != b.cost {
        return a.cost < b.cost;
    }
    if a.rank != b.rank {
        return a.rank > b.rank;
    }
    if a.ready
        && let Some(first) = time_first(a.ready_since, b.ready_since, a.uid, b.uid)
    {
        return first;
    }
    if a.restarts != b.restarts {
        return a.restarts > b.restarts;
    }
    if a.sidecar_restarts != b.sidecar_restarts {
        return a.sidecar_restarts > b.sidecar_restarts;
    }
    if let Some(first) = time_first(a.created, b.created, a.uid, b.uid) {
        return first;
    }
    a.uid < b.uid
}

/// A time tier of upstream's `Less`: `None` when the times are exactly equal (the next tier decides);
/// else a zero time first, then the younger log2 bucket, then within a bucket the smaller UID.
fn time_first(a: TimeFact, b: TimeFact, uid_a: &str, uid_b: &str) -> Option<bool> {
    if a.nanos == b.nanos {
        return None;
    }
    Some(match (a.nanos, b.nanos) {
        (None, _) => true,
        (_, None) => false,
        _ if a.bucket == b.bucket => uid_a < uid_b,
        _ => a.bucket < b.bucket,
    })
}

/// What the ranking looks at, for one pod, tier by tier (see [`less`]).
#[derive(Debug, Clone, PartialEq, Eq)]
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
    pub(crate) rank: usize,
    /// 6. Both ready: ready for less time first (a zero time when not ready: never compared).
    pub(crate) ready_since: TimeFact,
    /// 7. More restarts of regular containers first, then of sidecar (restartable init) containers.
    pub(crate) restarts: i32,
    pub(crate) sidecar_restarts: i32,
    /// 8. Newer first.
    pub(crate) created: TimeFact,
    /// Equal in every tier: a stable, arbitrary choice.
    pub(crate) uid: &'a str,
}

/// A time of a ranking tier: exact, for the equality test, and its log2 age bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeFact {
    /// Nanoseconds since 1970; `None` for upstream's zero time.
    pub(crate) nanos: Option<i128>,
    /// Go's `int(math.Log2(float64(now - t)))`; -1 for a time not in the past (or a zero one).
    pub(crate) bucket: i64,
}

impl<'a> RankKey<'a> {
    fn new(p: &'a Pod, rank: usize, now: Timestamp, options: RankingOptions) -> Self {
        let ready = is_ready(p);
        RankKey {
            assigned: !node(p).is_empty(),
            phase: phase_ordinal(p),
            ready,
            cost: if options.pod_deletion_cost {
                deletion_cost(p)
            } else {
                0
            },
            rank,
            ready_since: time_fact(ready_since(p).filter(|_| ready), now),
            restarts: max_container_restarts(p),
            sidecar_restarts: max_sidecar_restarts(p),
            created: time_fact(created(p), now),
            uid: uid(p),
        }
    }
}

/// A missing time is upstream's zero time.
fn time_fact(t: Option<Timestamp>, now: Timestamp) -> TimeFact {
    TimeFact {
        nanos: t.map(|t| t.as_nanosecond()),
        bucket: t.map_or(-1, |t| log2_age(t, now)),
    }
}

/// Go's `int64(math.Log2(float64(now.Sub(t))))`, and -1 for a time not in the past. `Sub` saturates
/// at the int64 nanoseconds of a `time.Duration` (about 292 years): older times share its bucket.
fn log2_age(t: Timestamp, now: Timestamp) -> i64 {
    let nanos = (now.as_nanosecond() - t.as_nanosecond()).clamp(i128::from(i64::MIN), i128::from(i64::MAX));
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

#[cfg(test)]
#[path = "ranking_tests.rs"]
mod tests;
