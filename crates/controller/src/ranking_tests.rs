use std::cmp::Ordering;

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
/// bucket, `uid(a) < uid(c) < uid(b)`, and b restarted more than a.
#[test]
fn the_upstream_cycle_gets_one_consistent_order() {
    let a = pod("a").uid("1").node("n").ready_at(ts(9_000)).build();
    let b = pod("b")
        .uid("3")
        .node("n")
        .ready_at(ts(9_000))
        .restarts(2)
        .build();
    let c = pod("c").uid("2").node("n").ready_at(ts(9_001)).build();
    let now = ts(10_000);
    assert_eq!(upstream_pair_order(&a, 0, &c, 0, now), Ordering::Less);
    assert_eq!(upstream_pair_order(&c, 0, &b, 0, now), Ordering::Less);
    assert_eq!(
        upstream_pair_order(&b, 0, &a, 0, now),
        Ordering::Less,
        "upstream's cycle"
    );
    let pods: Vec<_> = [a, b, c].into_iter().map(Arc::new).collect();
    let mut keys = rank_keys(&pods, &[], now, RankingOptions::default());
    keys.sort();
    // The group {a, b} (smallest UID "1") goes before {c} ("2"); inside it, restarts decide.
    let uids: Vec<_> = keys.iter().map(|k| k.uid).collect();
    assert_eq!(uids, ["3", "1", "2"]);
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

fn check_total_order(keys: &[RankKey<'_>], triples: &[(usize, usize, usize)]) -> Result<(), TestCaseError> {
    for &(i, j, k) in triples {
        let (a, b, c) = (&keys[i], &keys[j], &keys[k]);
        prop_assert_eq!(a.cmp(b), b.cmp(a).reverse(), "antisymmetric");
        if a <= b && b <= c {
            prop_assert!(a <= c, "transitive: {:?} <= {:?} <= {:?}", a, b, c);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The comparator is a total order (antisymmetric, transitive), sorting never panics, and the
    /// chosen pods are the first ones of that order.
    #[test]
    fn the_ranking_is_a_total_order(
        pods in prop::collection::vec(arb_pod(), 0..500),
        count in 0..500usize,
        seed in any::<u64>(),
    ) {
        use rand::{Rng as _, SeedableRng as _};
        let pods: Vec<_> = pods.into_iter().map(Arc::new).collect();
        let keys = rank_keys(&pods, &pods, ts(10_000), RankingOptions::default());
        let n = keys.len();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let triples: Vec<_> = if n == 0 {
            Vec::new()
        } else {
            (0..3000).map(|_| (rng.random_range(0..n), rng.random_range(0..n), rng.random_range(0..n))).collect()
        };
        check_total_order(&keys, &triples)?;
        let chosen = pods_to_delete(&pods, &pods, count, ts(10_000));
        prop_assert_eq!(chosen.len(), count.min(n));
        let mut sorted = keys.clone();
        sorted.sort();
        for w in sorted.windows(2) {
            prop_assert!(w[0] <= w[1]);
        }
    }

    /// Any two pods on their own are ordered as upstream's `Less` orders them (pods equal in every
    /// tier are left to the UID here, to the sort upstream).
    #[test]
    fn any_two_pods_are_ordered_as_upstream(a in arb_pod(), b in arb_pod()) {
        prop_assume!(a.metadata.uid != b.metadata.uid);
        let now = ts(10_000);
        let pods = [Arc::new(a.clone()), Arc::new(b.clone())];
        let keys = rank_keys(&pods, &[], now, RankingOptions::default());
        let expected = upstream_pair_order(&a, 0, &b, 0, now);
        if expected != Ordering::Equal {
            prop_assert_eq!(keys[0].cmp(&keys[1]), expected);
        }
    }
}
