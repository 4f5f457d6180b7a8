use proptest::prelude::*;

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
fn the_gate_off_ignores_deletion_cost() {
    let base = |n: &str| pod(n).node("n1").ready_at(ts(1000)).created_at(ts(500));
    let cheap = Arc::new(
        base("cheap")
            .annotation(POD_DELETION_COST_ANNOTATION, "-10")
            .build(),
    );
    let flappy = Arc::new(base("flappy").restarts(2).build());
    let pods = [cheap, flappy];
    let off = RankingOptions {
        pod_deletion_cost: false,
    };
    assert_eq!(names(&pods_to_delete(&pods, &[], 1, ts(10_000))), ["cheap"]);
    assert_eq!(
        names(&pods_to_delete_with(&pods, &[], 1, ts(10_000), off)),
        ["flappy"]
    );
}

#[test]
fn sidecar_restarts_decide_when_regular_restarts_tie() {
    let base = |n: &str| {
        pod(n)
            .node("n1")
            .ready_at(ts(1000))
            .created_at(ts(500))
            .restarts(1)
    };
    assert_eq!(
        first_of(
            vec![base("calm").build(), base("sidecar").sidecar_restarts(5).build()],
            vec![]
        ),
        ["sidecar"]
    );
    // Regular restarts still come first.
    assert_eq!(
        first_of(
            vec![
                base("regular").restarts(2).build(),
                base("sidecar").sidecar_restarts(5).build()
            ],
            vec![]
        ),
        ["regular"]
    );
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
fn exactly_equal_times_fall_through_to_the_next_tier() {
    // Same ready time: restarts decide, whatever the UIDs say (upstream skips tier 6 on equality).
    let a = pod("a").uid("uid-a").node("n").ready_at(ts(9_000)).build();
    let b = pod("b")
        .uid("uid-b")
        .node("n")
        .ready_at(ts(9_000))
        .restarts(1)
        .build();
    assert_eq!(first_of(vec![a, b], vec![]), ["b"]);
}

/// The cycle upstream's `Less` has: a and b Ready at the same second, c a second later in the same
/// bucket, `uid(a) < uid(c) < uid(b)`, and b restarted more than a. Some order comes out, the same
/// each time, and no panic.
#[test]
fn the_upstream_cycle_sorts_without_panicking() {
    let a = pod("a").uid("1").node("n").ready_at(ts(9_000)).build();
    let b = pod("b")
        .uid("3")
        .node("n")
        .ready_at(ts(9_000))
        .restarts(2)
        .build();
    let c = pod("c").uid("2").node("n").ready_at(ts(9_001)).build();
    let now = ts(10_000);
    let pods: Vec<_> = [a, b, c].into_iter().map(Arc::new).collect();
    let keys = rank_keys(&pods, &[], now, RankingOptions::default());
    assert!(less(&keys[0], &keys[2]) && less(&keys[2], &keys[1]) && less(&keys[1], &keys[0]));
    let first = names(&pods_to_delete(&pods, &[], 2, now));
    assert_eq!(first.len(), 2);
    assert_eq!(names(&pods_to_delete(&pods, &[], 2, now)), first);
}

/// Where equal and distinct times share a bucket and upstream's order has no cycle, the order is
/// upstream's: a and c Ready in the same second, b a second later, `uid(a) < uid(b) < uid(c)`, a
/// restarted once. Upstream: a < b and b < c by UID, a < c by restarts; scaling 3 to 1 deletes a and
/// b, not a and c.
#[test]
fn equal_and_distinct_times_in_one_bucket_keep_upstreams_order() {
    let a = pod("a")
        .uid("1")
        .node("n")
        .ready_at(ts(9_000))
        .restarts(1)
        .build();
    let b = pod("b").uid("2").node("n").ready_at(ts(9_001)).build();
    let c = pod("c").uid("3").node("n").ready_at(ts(9_000)).build();
    let pods: Vec<_> = [c, b, a].into_iter().map(Arc::new).collect();
    assert_eq!(names(&pods_to_delete(&pods, &[], 2, ts(10_000))), ["a", "b"]);
}

/// The reproduction of the scale-down ranking panic: 28 not-ready pods on one node, created within 3 seconds of
/// each other, with random UIDs. Rust's sort used to panic on it.
#[test]
fn not_ready_pods_created_together_sort_without_panicking() {
    use rand::{Rng as _, SeedableRng as _};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..200 {
        let pods: Vec<_> = (0..28)
            .map(|i| {
                let uid = format!("{:032x}", rng.random::<u128>());
                Arc::new(
                    pod(&format!("p{i}"))
                        .uid(&uid)
                        .node("n1")
                        .not_ready()
                        .created_at(ts(9_990 + rng.random_range(0..3)))
                        .build(),
                )
            })
            .collect();
        assert_eq!(pods_to_delete(&pods, &pods, 23, ts(10_000)).len(), 23);
    }
}

#[test]
fn deleting_all_skips_sorting() {
    let pods: Vec<_> = ["x", "y"].iter().map(|n| Arc::new(pod(n).build())).collect();
    assert_eq!(names(&pods_to_delete(&pods, &[], 5, ts(0))), ["x", "y"]);
}

/// A pod with every ranked fact drawn from a few values, so that ties happen in every tier, times
/// land in the same and in different log2 buckets, and some are exactly equal.
fn arb_pod() -> impl Strategy<Value = Pod> {
    (
        (0..3usize, 0..4usize, any::<bool>(), 0..3usize),
        (0..6usize, 0..3i32, 0..2i32, 0..7usize),
        any::<u16>(),
    )
        .prop_map(
            |((node, phase, ready, cost), (ready_at, restarts, sidecar, created), uid)| {
                // Seconds before "now" (10_000): 0 (not in the past), 1, 2, 3 (one bucket), 1000, 1001
                // (another); index 6 of `created` means no creation time.
                const AGO: [i64; 6] = [0, 1, 2, 3, 1000, 1001];
                const PHASES: [&str; 4] = ["Pending", "Unknown", "Running", "Succeeded"];
                let mut b = pod("p").uid(&format!("{uid:05}"));
                b = if ready {
                    b.ready_at(ts(10_000 - AGO[ready_at]))
                } else {
                    b.not_ready()
                };
                b = b.phase(PHASES[phase]);
                if node > 0 {
                    b = b.node(&format!("n{node}"));
                }
                if cost > 0 {
                    b = b.annotation(POD_DELETION_COST_ANNOTATION, ["", "-1", "5"][cost]);
                }
                if let Some(ago) = AGO.get(created) {
                    b = b.created_at(ts(10_000 - ago));
                }
                b.restarts(restarts).sidecar_restarts(sidecar).build()
            },
        )
}

/// Whether `less` is a strict total order on `keys`: asymmetric, total and transitive.
fn is_strict_total_order(keys: &[RankKey<'_>]) -> bool {
    let n = keys.len();
    (0..n).all(|i| {
        (0..n).all(|j| {
            i == j
                || (less(&keys[i], &keys[j]) != less(&keys[j], &keys[i])
                    && (0..n).all(|k| {
                        !(less(&keys[i], &keys[j]) && less(&keys[j], &keys[k])) || less(&keys[i], &keys[k])
                    }))
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Sorting never panics, whatever cycles upstream's comparison has, and the chosen pods are the
    /// first ones of the sorted order.
    #[test]
    fn sorting_never_panics_and_takes_the_first_of_its_order(
        pods in prop::collection::vec(arb_pod(), 0..500),
        count in 0..500usize,
    ) {
        let pods: Vec<_> = pods.into_iter().map(Arc::new).collect();
        let now = ts(10_000);
        let chosen = pods_to_delete(&pods, &pods, count, now);
        prop_assert_eq!(chosen.len(), count.min(pods.len()));
        if count < pods.len() {
            let all = pods_to_delete(&pods, &pods, pods.len() - 1, now);
            prop_assert_eq!(names(&chosen), names(&all[..count]));
        }
    }

    /// Where upstream's comparison is a strict total order on the pods, the sorted pods are in that
    /// order: every pod goes before every later one.
    #[test]
    fn where_upstreams_order_has_no_cycle_the_sort_is_that_order(
        pods in prop::collection::vec(arb_pod(), 0..10),
    ) {
        let mut uids: Vec<_> = pods.iter().map(|p| p.metadata.uid.clone()).collect();
        uids.sort();
        uids.dedup();
        prop_assume!(uids.len() == pods.len());
        let pods: Vec<_> = pods.into_iter().map(Arc::new).collect();
        let keys = rank_keys(&pods, &pods, ts(10_000), RankingOptions::default());
        prop_assume!(is_strict_total_order(&keys));
        let mut order: Vec<usize> = (0..keys.len()).collect();
        merge_sort(&mut order, |&i, &j| less(&keys[i], &keys[j]));
        for (x, &i) in order.iter().enumerate() {
            for &j in &order[x + 1..] {
                prop_assert!(less(&keys[i], &keys[j]), "{:?} before {:?}", keys[i], keys[j]);
            }
        }
    }

    /// The merge sort sorts: for a total order it agrees with the standard library's sort.
    #[test]
    fn the_merge_sort_agrees_with_the_standard_sort_on_a_total_order(
        mut items in prop::collection::vec(any::<(u8, u16)>(), 0..300),
    ) {
        let mut expected = items.clone();
        expected.sort_by_key(|&(k, _)| k);
        merge_sort(&mut items, |a, b| a.0 < b.0);
        prop_assert_eq!(items, expected, "stable, as sort_by_key");
    }
}

/// restartCount is not validated; upstream's maxContainerRestarts counts from 0, so -1 ties with 0 and
/// the creation time decides (newer first).
#[test]
fn a_negative_restart_count_counts_as_none() {
    let base = |n: &str| pod(n).node("n").ready_at(ts(1000));
    let negative = base("negative").restarts(-1).created_at(ts(9_000)).build();
    let zero = base("zero").restarts(0).created_at(ts(100)).build();
    assert_eq!(first_of(vec![zero, negative], vec![]), ["negative"]);
}

/// Go's `now.Sub(t)` saturates at about 292 years, so times older than that share the top bucket and
/// the UID decides between them.
#[test]
fn ages_past_a_go_duration_share_its_bucket() {
    const YEAR_1000: i64 = -30_610_224_000;
    const YEAR_1500: i64 = -14_831_769_600;
    let a = pod("a").uid("1").node("n").ready_at(ts(YEAR_1000)).build();
    let b = pod("b").uid("2").node("n").ready_at(ts(YEAR_1500)).build();
    assert_eq!(first_of(vec![b, a], vec![]), ["a"]);
}
