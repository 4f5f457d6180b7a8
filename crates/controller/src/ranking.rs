//! Which pods a ReplicaSet deletes first when it scales down (upstream `ActivePodsWithRanks`, with
//! pod-deletion-cost and logarithmic scale-down, both on by default since 1.22/1.31).

use std::{cmp::Ordering, collections::HashMap, sync::Arc};

use k8s_openapi::{api::core::v1::Pod, jiff::Timestamp};

use crate::pod_util::{deletion_cost, is_active, is_ready, max_container_restarts, phase, ready_since};

/// `count` pods of `pods` to delete, best candidates first. `related` are the pods of every ReplicaSet
/// with the same controller (a Deployment's ReplicaSets): a pod on a node crowded with related pods goes
/// before one that is alone, which spreads the survivors.
pub fn pods_to_delete(
    pods: &[Arc<Pod>],
    related: &[Arc<Pod>],
    count: usize,
    now: Timestamp,
) -> Vec<Arc<Pod>> {
    if count >= pods.len() {
        return pods.to_vec();
    }
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for p in related.iter().filter(|p| is_active(p)) {
        *on_node.entry(node(p)).or_default() += 1;
    }
    // Each pod's facts are computed once, not at every comparison of the sort.
    let mut ranked: Vec<(RankKey<'_>, &Arc<Pod>)> = pods
        .iter()
        .map(|p| {
            (
                RankKey::new(p, on_node.get(node(p)).copied().unwrap_or(0), now),
                p,
            )
        })
        .collect();
    ranked.sort_by(|(a, _), (b, _)| a.cmp(b));
    ranked.into_iter().take(count).map(|(_, p)| p.clone()).collect()
}

/// `Less` first: the pod to delete sooner compares smaller.
pub fn compare(a: &Pod, rank_a: usize, b: &Pod, rank_b: usize, now: Timestamp) -> Ordering {
    RankKey::new(a, rank_a, now).cmp(&RankKey::new(b, rank_b, now))
}

/// What the ranking looks at, for one pod.
struct RankKey<'a> {
    node_empty: bool,
    node: &'a str,
    phase: u8,
    ready: bool,
    cost: i32,
    rank: usize,
    /// log2 bucket of the time since Ready (None when not ready or no time).
    ready_since: Option<Timestamp>,
    ready_bucket: i64,
    restarts: i32,
    created: Option<Timestamp>,
    created_bucket: i64,
    uid: &'a str,
}

impl<'a> RankKey<'a> {
    fn new(p: &'a Pod, rank: usize, now: Timestamp) -> Self {
        let ready = is_ready(p);
        let ready_since = if ready { ready_since(p) } else { None };
        let created = created(p);
        RankKey {
            node_empty: node(p).is_empty(),
            node: node(p),
            phase: phase_ordinal(p),
            ready,
            cost: deletion_cost(p),
            rank,
            ready_since,
            ready_bucket: ready_since.map_or(0, |t| log2_age(t, now)),
            restarts: max_container_restarts(p),
            created,
            created_bucket: created.map_or(0, |t| log2_age(t, now)),
            uid: uid(p),
        }
    }

    fn cmp(&self, o: &Self) -> Ordering {
        // 1. Unassigned before assigned (only when exactly one is unassigned).
        if self.node != o.node && (self.node_empty || o.node_empty) {
            return if self.node_empty {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        // 2. Pending < Unknown < Running.
        let by_phase = self.phase.cmp(&o.phase);
        if by_phase != Ordering::Equal {
            return by_phase;
        }
        // 3. Not ready before ready.
        if self.ready != o.ready {
            return if self.ready {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        // 4. Lower pod-deletion-cost first.
        let by_cost = self.cost.cmp(&o.cost);
        if by_cost != Ordering::Equal {
            return by_cost;
        }
        // 5. More related pods on the same node first.
        if self.rank != o.rank {
            return o.rank.cmp(&self.rank);
        }
        // 6. Both ready: ready for less time first, compared in log2 buckets.
        if self.ready && o.ready && self.ready_since != o.ready_since {
            return newer_first(
                (self.ready_since, self.ready_bucket),
                (o.ready_since, o.ready_bucket),
                self.uid,
                o.uid,
            );
        }
        // 7. More container restarts first.
        let by_restarts = o.restarts.cmp(&self.restarts);
        if by_restarts != Ordering::Equal {
            return by_restarts;
        }
        // 8. Newer first, in log2 buckets.
        if self.created != o.created {
            return newer_first(
                (self.created, self.created_bucket),
                (o.created, o.created_bucket),
                self.uid,
                o.uid,
            );
        }
        Ordering::Equal
    }
}

/// A missing time counts as newest. Otherwise times are compared by the base-2 logarithm of their age
/// in nanoseconds, ties broken by pod UID (a stable pseudo-random choice), so that pods of similar age
/// are not told apart by small clock differences.
fn newer_first(
    a: (Option<Timestamp>, i64),
    b: (Option<Timestamp>, i64),
    uid_a: &str,
    uid_b: &str,
) -> Ordering {
    match (a.0, b.0) {
        (None, _) => Ordering::Less,
        (_, None) => Ordering::Greater,
        (Some(_), Some(_)) => match (a.1 - b.1).cmp(&0) {
            Ordering::Equal => uid_a.cmp(uid_b),
            other => other,
        },
    }
}

fn log2_age(t: Timestamp, now: Timestamp) -> i64 {
    let nanos = now.as_nanosecond() - t.as_nanosecond();
    if nanos <= 0 {
        return -1;
    }
    // Go's `int64(math.Log2(float64(d)))`: truncation toward zero of a non-negative value.
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
mod tests {
    use super::*;
    use crate::{pod_util::POD_DELETION_COST_ANNOTATION, testing::pod};

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
    }

    fn first_of(pods: Vec<Pod>, related: Vec<Pod>) -> Vec<String> {
        let pods: Vec<_> = pods.into_iter().map(Arc::new).collect();
        let related: Vec<_> = related.into_iter().map(Arc::new).collect();
        names(&pods_to_delete(&pods, &related, pods.len() - 1, ts(10_000)))
    }

    #[test]
    fn each_tie_breaker_in_order() {
        let now_ready = |n: &str| pod(n).node("n1").ready_at(ts(1000)).created_at(ts(500));
        // 1. unassigned first
        assert_eq!(
            first_of(vec![now_ready("a").build(), pod("b").build()], vec![]),
            ["b"]
        );
        // 2. pending < unknown < running
        let unknown = now_ready("u").phase("Unknown").build();
        let pending = now_ready("p").phase("Pending").build();
        assert_eq!(
            first_of(vec![now_ready("r").build(), unknown.clone(), pending], vec![]),
            ["p", "u"]
        );
        // 3. not ready first
        assert_eq!(
            first_of(
                vec![now_ready("r").build(), pod("n").node("n1").not_ready().build()],
                vec![]
            ),
            ["n"]
        );
        // 4. lower deletion cost first, even against rank
        let cheap = now_ready("cheap")
            .annotation(POD_DELETION_COST_ANNOTATION, "-10")
            .node("n2")
            .build();
        let crowded = now_ready("crowded").build();
        assert_eq!(
            first_of(
                vec![crowded.clone(), cheap],
                vec![crowded.clone(), now_ready("x").build()]
            ),
            ["cheap"]
        );
        // 5. more related pods on the same node first
        let alone = now_ready("alone").node("n2").build();
        assert_eq!(
            first_of(
                vec![alone, crowded.clone()],
                vec![crowded, now_ready("x").build()]
            ),
            ["crowded"]
        );
        // 6. ready for less time first (different log2 buckets)
        let old = now_ready("old").ready_at(ts(100)).build();
        let young = now_ready("young").ready_at(ts(9_990)).build();
        assert_eq!(first_of(vec![old, young], vec![]), ["young"]);
        // 7. more restarts first
        assert_eq!(
            first_of(
                vec![now_ready("calm").build(), now_ready("flappy").restarts(3).build()],
                vec![]
            ),
            ["flappy"]
        );
        // 8. newer first
        let older = now_ready("older").created_at(ts(100)).build();
        let newer = now_ready("newer").created_at(ts(9_000)).build();
        assert_eq!(first_of(vec![older, newer], vec![]), ["newer"]);
    }

    #[test]
    fn same_log2_bucket_falls_back_to_uid() {
        // Ready 1000 s and 1001 s ago: the same power-of-two bucket of nanoseconds.
        let a = pod("a").uid("uid-b").node("n").ready_at(ts(9_000)).build();
        let b = pod("b").uid("uid-a").node("n").ready_at(ts(8_999)).build();
        assert_eq!(
            first_of(vec![a, b], vec![]),
            ["b"],
            "lower UID first on a bucket tie"
        );
    }

    #[test]
    fn deleting_all_skips_sorting() {
        let pods: Vec<_> = ["x", "y"].iter().map(|n| Arc::new(pod(n).build())).collect();
        assert_eq!(names(&pods_to_delete(&pods, &[], 5, ts(0))), ["x", "y"]);
    }
}
