use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use proptest::prelude::*;

use super::*;
use crate::{
    fixtures::{RsBuilder, deployment, int, pct, rs, sizes, work},
    spec::max_surge,
};

/// Upstream TestScale's set-up: every ReplicaSet sized for `old` (desired/max-replicas), then
/// `d` scaled.
fn scale_case(
    d: &Deployment,
    old: &Deployment,
    new: Option<RsBuilder>,
    olds: Vec<RsBuilder>,
) -> BTreeMap<String, i32> {
    let annotate = |b: RsBuilder| b.desired(spec::replicas(old), max_surge(old)).build();
    let mut w = work(
        d,
        new.map(annotate),
        olds.into_iter().map(|b| annotate(b.image("old"))).collect(),
    );
    w.scale_all();
    sizes(&w)
}

fn expect(pairs: &[(&str, i32)]) -> BTreeMap<String, i32> {
    pairs.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect()
}

#[test]
fn upstream_scale_cases() {
    let d = |r| deployment("foo", r).build();
    let ds = |r, surge| deployment("foo", r).rolling(int(surge), int(0)).build();
    let (new_t, old_t, older_t) = (300, 200, 100);
    // normal scaling events
    assert_eq!(
        scale_case(&d(12), &d(10), Some(rs("foo-v1", 10, new_t)), vec![]),
        expect(&[("foo-v1", 12)])
    );
    assert_eq!(
        scale_case(&d(5), &d(10), Some(rs("foo-v1", 10, new_t)), vec![]),
        expect(&[("foo-v1", 5)])
    );
    // proportional scaling
    #[allow(clippy::type_complexity)]
    let cases: Vec<(
        i32,
        i32,
        Option<(&str, i32)>,
        Vec<(&str, i32, i64)>,
        Vec<(&str, i32)>,
    )> = vec![
        (
            10,
            5,
            Some(("foo-v2", 2)),
            vec![("foo-v1", 3, old_t)],
            vec![("foo-v2", 4), ("foo-v1", 6)],
        ),
        (
            3,
            5,
            Some(("foo-v2", 2)),
            vec![("foo-v1", 3, old_t)],
            vec![("foo-v2", 1), ("foo-v1", 2)],
        ),
        (
            4,
            9,
            Some(("foo-v2", 8)),
            vec![("foo-v1", 1, old_t)],
            vec![("foo-v2", 4), ("foo-v1", 0)],
        ),
        (
            10,
            7,
            Some(("foo-v3", 2)),
            vec![("foo-v2", 3, old_t), ("foo-v1", 2, older_t)],
            vec![("foo-v3", 3), ("foo-v2", 4), ("foo-v1", 3)],
        ),
        (
            8,
            13,
            Some(("foo-v3", 2)),
            vec![("foo-v2", 8, old_t), ("foo-v1", 3, older_t)],
            vec![("foo-v3", 1), ("foo-v2", 5), ("foo-v1", 2)],
        ),
        // leftovers go to the largest; among equals, the newest when growing, the oldest when shrinking
        (
            4,
            3,
            Some(("foo-v3", 1)),
            vec![("foo-v2", 1, old_t), ("foo-v1", 1, older_t)],
            vec![("foo-v3", 2), ("foo-v2", 1), ("foo-v1", 1)],
        ),
        (
            2,
            3,
            Some(("foo-v3", 1)),
            vec![("foo-v2", 1, old_t), ("foo-v1", 1, older_t)],
            vec![("foo-v3", 1), ("foo-v2", 1), ("foo-v1", 0)],
        ),
        // no new ReplicaSet: the latest grows first
        (
            5,
            4,
            None,
            vec![("foo-v2", 2, old_t), ("foo-v1", 2, older_t)],
            vec![("foo-v2", 3), ("foo-v1", 2)],
        ),
        // to zero, and from zero (only the new one)
        (
            0,
            6,
            Some(("foo-v3", 3)),
            vec![("foo-v2", 2, old_t), ("foo-v1", 1, older_t)],
            vec![("foo-v3", 0), ("foo-v2", 0), ("foo-v1", 0)],
        ),
        (
            6,
            6,
            Some(("foo-v3", 0)),
            vec![("foo-v2", 0, old_t), ("foo-v1", 0, older_t)],
            vec![("foo-v3", 6), ("foo-v2", 0), ("foo-v1", 0)],
        ),
    ];
    for (to, from, new, olds, want) in cases {
        let got = scale_case(
            &d(to),
            &d(from),
            new.map(|(n, s)| rs(n, s, new_t)),
            olds.into_iter().map(|(n, s, t)| rs(n, s, t)).collect(),
        );
        assert_eq!(got, expect(&want), "{from} -> {to}");
    }
    // with surge
    assert_eq!(
        scale_case(
            &ds(20, 2),
            &ds(10, 2),
            Some(rs("foo-v2", 6, new_t)),
            vec![rs("foo-v1", 6, old_t)]
        ),
        expect(&[("foo-v2", 11), ("foo-v1", 11)])
    );
    assert_eq!(
        scale_case(
            &ds(50, 6),
            &ds(10, 3),
            Some(rs("foo-v2", 5, new_t)),
            vec![rs("foo-v1", 8, old_t)]
        ),
        expect(&[("foo-v2", 22), ("foo-v1", 34)])
    );
    // size and template changed together: no new ReplicaSet yet
    assert_eq!(
        scale_case(
            &d(14),
            &d(10),
            None,
            vec![rs("foo-v2", 7, new_t), rs("foo-v1", 3, old_t)]
        ),
        expect(&[("foo-v2", 10), ("foo-v1", 4)])
    );
}

#[test]
fn a_replica_set_sized_for_another_size_takes_its_share() {
    // Upstream's "failed rs update" case: foo-v2 was last sized for 3 replicas.
    let d = deployment("foo", 5).build();
    let mut w = work(
        &d,
        Some(rs("foo-v3", 2, 300).desired(5, 0).build()),
        vec![
            rs("foo-v2", 1, 200).image("old").desired(3, 0).build(),
            rs("foo-v1", 1, 100).image("older").desired(5, 0).build(),
        ],
    );
    w.scale_all();
    assert_eq!(sizes(&w), expect(&[("foo-v3", 2), ("foo-v2", 2), ("foo-v1", 1)]));
}

#[test]
fn a_saturated_but_unavailable_new_replica_set_leaves_old_pods_alone() {
    let d = deployment("foo", 2).rolling(int(1), int(1)).build();
    let mut w = work(
        &d,
        Some(rs("foo-v2", 2, 300).available(0).desired(2, 1).build()),
        vec![rs("foo-v1", 1, 200).image("old").desired(2, 1).build()],
    );
    w.scale_all();
    assert_eq!(sizes(&w), expect(&[("foo-v2", 2), ("foo-v1", 1)]));
    assert!(w.slots.iter().all(|s| s.modified.is_none()), "nothing to write");
}

#[test]
fn a_saturated_available_new_replica_set_takes_everything() {
    let d = deployment("foo", 3).build();
    let mut w = work(
        &d,
        Some(rs("new", 3, 300).desired(3, 0).build()),
        vec![rs("old", 2, 200).image("old").desired(3, 0).build()],
    );
    w.scale_all();
    assert_eq!(sizes(&w), expect(&[("new", 3), ("old", 0)]));
    assert_eq!(
        w.slots[0].events[0].message,
        "Scaled down replica set old from 2 to 0"
    );
}

#[test]
fn the_e2e_proportional_scaling_figure() {
    // test/e2e/apps/deployment.go "should support proportional scaling": 10 replicas, maxSurge 3,
    // maxUnavailable 2, a new template that never becomes available: 8 + 5; scaled to 30: 20 + 13.
    let d = deployment("foo", 30).rolling(int(3), int(2)).build();
    let mut w = work(
        &d,
        Some(rs("new", 5, 300).available(0).desired(10, 3).build()),
        vec![rs("first", 8, 200).image("old").desired(10, 3).build()],
    );
    assert!(w.is_scaling_event());
    w.scale_all();
    assert_eq!(sizes(&w), expect(&[("new", 13), ("first", 20)]));
    let messages: Vec<&str> = w
        .slots
        .iter()
        .flat_map(|s| s.events.iter().map(|e| e.message.as_str()))
        .collect();
    assert_eq!(
        messages,
        [
            "Scaled up replica set first from 8 to 20",
            "Scaled up replica set new from 5 to 13"
        ]
    );
}

#[test]
fn fraction_rounds_half_away_from_zero_and_falls_back_to_the_status() {
    let d = deployment("foo", 5).build();
    // 1 * 5 / 2 = 2.5 rounds to 3.
    assert_eq!(replica_set_fraction(&rs("a", 1, 0).desired(2, 0).build(), &d), 2);
    // No max-replicas: the Deployment's current pod count is the denominator.
    let d4 = deployment("foo", 5)
        .status(k8s_openapi::api::apps::v1::DeploymentStatus {
            replicas: Some(4),
            ..Default::default()
        })
        .build();
    assert_eq!(
        replica_set_fraction(&rs("a", 2, 0).build(), &d4),
        1,
        "round(2*5/4) - 2"
    );
    assert_eq!(
        replica_set_fraction(&rs("a", 2, 0).build(), &deployment("foo", 0).build()),
        -2
    );
}

/// ReplicaSets left by earlier syncs at Deployment size `prev` with surge `prev_surge`: sizes adding
/// up to at most prev + prev_surge, every one annotated with that size.
fn arb_history() -> impl Strategy<Value = (i32, i32, Vec<i32>)> {
    (2..40i32, 0..5i32).prop_flat_map(|(prev, surge)| {
        let max = prev + surge;
        (Just(prev), Just(surge), prop::collection::vec(1..=max, 2..5)).prop_map(move |(p, s, sizes)| {
            // Keep what fits; at least two active ReplicaSets (one would just take everything).
            let mut kept = Vec::new();
            for size in sizes {
                if kept.iter().sum::<i32>() + size <= max {
                    kept.push(size);
                }
            }
            if kept.len() < 2 {
                kept = vec![1, 1];
            }
            (p, s, kept)
        })
    })
}

proptest! {
    /// A scaling event over ReplicaSets a previous sync left consistent neither loses nor invents
    /// replicas: afterwards they add up to the new spec.replicas + maxSurge (0 for 0 replicas),
    /// none negative.
    #[test]
    fn proportional_scaling_conserves_replicas((prev, prev_surge, sizes_before) in arb_history(), to in 0..80i32, surge in 0..5i32) {
        let d = deployment("foo", to).rolling(int(surge), int(1)).build();
        let rss: Vec<k8s_openapi::api::apps::v1::ReplicaSet> = sizes_before
            .iter()
            .enumerate()
            .map(|(i, s)| rs(&format!("rs{i}"), *s, i64::try_from(i).unwrap()).image(&format!("img{i}")).desired(prev, prev_surge).build())
            .collect();
        let refs: Vec<&k8s_openapi::api::apps::v1::ReplicaSet> = rss.iter().collect();
        let after = proportional_sizes(&d, &refs);
        let allowed = if to > 0 { to + surge } else { 0 };
        prop_assert!(after.iter().all(|s| *s >= 0), "{:?}", after);
        prop_assert_eq!(after.iter().sum::<i32>(), allowed, "{:?} -> {:?}", sizes_before, after);
    }
}

#[test]
fn a_max_replicas_of_zero_falls_back_to_the_deployments_pod_count() {
    // Rolling 25%, status.replicas 8, scaled 10 -> 20 (a maximum of 25). A's max-replicas "0" is
    // treated as missing: its share is round(4 * 25 / 8) - 4 = 9; B's round(4 * 25 / 13) - 4 = 4,
    // plus the 4 left over.
    let d = deployment("foo", 20)
        .rolling(pct("25%"), pct("25%"))
        .status(k8s_openapi::api::apps::v1::DeploymentStatus {
            replicas: Some(8),
            ..Default::default()
        })
        .build();
    let ann = |b: RsBuilder, max: &str| {
        b.annotation(crate::annotations::DESIRED_REPLICAS, "10")
            .annotation(crate::annotations::MAX_REPLICAS, max)
            .build()
    };
    let mut w = work(
        &d,
        Some(ann(rs("b", 4, 2), "13")),
        vec![ann(rs("a", 4, 1).image("old"), "0")],
    );
    w.scale_all();
    assert_eq!(sizes(&w), expect(&[("b", 12), ("a", 13)]));
}

#[test]
fn each_replica_set_names_its_own_direction() {
    // An adopted ReplicaSet without annotations shares by status.replicas (20) and shrinks while
    // the Deployment grows 10 -> 12.
    let d = deployment("foo", 12)
        .rolling(pct("25%"), pct("25%"))
        .status(k8s_openapi::api::apps::v1::DeploymentStatus {
            replicas: Some(20),
            ..Default::default()
        })
        .build();
    let mut w = work(
        &d,
        Some(rs("new", 6, 2).desired(10, 3).build()),
        vec![rs("adopted", 6, 1).image("old").build()],
    );
    w.scale_all();
    assert_eq!(sizes(&w), expect(&[("new", 10), ("adopted", 5)]));
    let messages: Vec<&str> = w
        .slots
        .iter()
        .flat_map(|s| s.events.iter().map(|e| e.message.as_str()))
        .collect();
    assert_eq!(
        messages,
        [
            "Scaled down replica set adopted from 6 to 5",
            "Scaled up replica set new from 6 to 10"
        ]
    );
}

#[test]
fn large_shares_are_computed_without_wrapping() {
    // 50,000 + 40,000 + 10,000 scaled 100,000 -> 120,000. Upstream multiplies size by the new
    // maximum in int32, which wraps for the two larger ones (B would shrink to 5,050 and A take
    // 102,950); here each takes its intended share.
    let d = deployment("foo", 120_000).build();
    let mut w = work(
        &d,
        Some(rs("a", 50_000, 3).desired(100_000, 0).build()),
        vec![
            rs("b", 40_000, 2).image("b").desired(100_000, 0).build(),
            rs("c", 10_000, 1).image("c").desired(100_000, 0).build(),
        ],
    );
    w.scale_all();
    assert_eq!(sizes(&w), expect(&[("a", 60_000), ("b", 48_000), ("c", 12_000)]));
}
