use proptest::prelude::*;

use super::*;

/// The set the scale-out review measured: team-a … team-z, app-1 … app-100 and the four system
/// namespaces, with `pods` for each.
fn crowded(pods: impl Fn(&str) -> u64) -> Vec<(String, u64)> {
    let teams = (b'a'..=b'z').map(|c| format!("team-{}", c as char));
    let apps = (1..=100).map(|i| format!("app-{i}"));
    let system = ["kube-system", "default", "kube-public", "kube-node-lease"].map(String::from);
    teams
        .chain(apps)
        .chain(system)
        .map(|ns| {
            let p = pods(&ns);
            (ns, p)
        })
        .collect()
}

/// Pods per shard of `layout`.
fn loads(layout: &Layout, namespaces: &[(String, u64)]) -> Vec<u64> {
    let mut loads = vec![0; layout.count() as usize];
    for (ns, pods) in namespaces {
        loads[layout.shard_of_namespace(ns).index() as usize] += pods;
    }
    loads
}

/// The most-loaded replica's pods over the least-loaded one's, when `replicas` replicas hold
/// `count / replicas` shards each and the shards fall to them as badly as they can.
fn worst_ratio(mut loads: Vec<u64>, replicas: usize) -> f64 {
    loads.sort_unstable();
    let each = loads.len() / replicas;
    let least: u64 = loads[..each].iter().sum();
    let most: u64 = loads[loads.len() - each..].iter().sum();
    most as f64 / least.max(1) as f64
}

fn weights(namespaces: &[(String, u64)]) -> Vec<(u64, u64)> {
    namespaces
        .iter()
        .map(|(ns, pods)| (fnv1a64(ns.as_bytes()), pods + 1))
        .collect()
}

#[test]
fn fitted_cuts_spread_names_that_equal_ranges_crowd() {
    let pods = |ns: &str| {
        if ns.starts_with("team-") {
            12
        } else if ns.starts_with("app-") {
            6
        } else {
            3
        }
    };
    let namespaces = crowded(pods);
    let equal = Layout::equal(12).unwrap();
    let fitted = Layout::fit(12, weights(&namespaces)).unwrap();
    let (before, after) = (loads(&equal, &namespaces), loads(&fitted, &namespaces));
    assert!(
        worst_ratio(before.clone(), 3) > 3.0,
        "equal ranges crowd these names: {before:?}"
    );
    let ratio = worst_ratio(after.clone(), 3);
    println!(
        "pods per shard, equal ranges {before:?} (worst replica ratio {:.2}); fitted {after:?} ({ratio:.2})",
        worst_ratio(before.clone(), 3)
    );
    assert!(ratio <= 1.2, "fitted: {after:?}, worst replica ratio {ratio:.2}");
    let teams: std::collections::BTreeSet<u32> = namespaces
        .iter()
        .filter(|(ns, _)| ns.starts_with("team-"))
        .map(|(ns, _)| fitted.shard_of_namespace(ns).index())
        .collect();
    assert!(teams.len() >= 3, "team-a … team-z now span {teams:?}");
}

#[test]
fn cuts_are_written_and_read_as_the_server_writes_bounds() {
    let layout = Layout::with_cuts(vec![0x10, 0x8000_0000_0000_0000]).unwrap();
    let text = layout.cuts_text();
    assert_eq!(text, "0x0000000000000010,0x8000000000000000");
    assert_eq!(Layout::parse_cuts(&text).unwrap(), layout);
    assert_eq!(layout.count(), 3);
    assert!(layout.to_string().starts_with("3c"), "{layout}");
    let shards = layout.shards();
    assert_eq!(
        shards[2].selector(),
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
    );
    assert!(shards[0].to_string().starts_with("0-of-3c"));
    for bad in [
        "0x10",
        "10,20",
        "0x0000000000000000",
        "0x0000000000000020,0x0000000000000010",
    ] {
        assert!(Layout::parse_cuts(bad).is_err(), "{bad}");
    }
}

#[test]
fn an_equal_layout_is_what_shards_alone_gives() {
    let layout = Layout::equal(12).unwrap();
    assert_eq!(layout.shards(), Shard::all(12).unwrap().collect::<Vec<_>>());
    assert_eq!(layout.to_string(), "12");
    assert_eq!(layout.cuts_text(), "");
    assert_eq!(
        layout.shard_of_namespace("kube-system"),
        Shard::of_namespace("kube-system", 12).unwrap()
    );
}

#[test]
fn fewer_namespaces_than_shards_get_one_each() {
    let names = ["a", "b", "c"];
    let layout = Layout::fit(12, names.iter().map(|n| (fnv1a64(n.as_bytes()), 1))).unwrap();
    let shards: std::collections::BTreeSet<_> = names.iter().map(|n| layout.shard_of_namespace(n)).collect();
    assert_eq!(shards.len(), 3);
    assert_eq!(Layout::fit(4, []).unwrap(), Layout::equal(4).unwrap());
}

#[test]
fn a_refitted_layout_starts_at_equal_ranges_and_keeps_its_tag() {
    let first = Layout::auto(4, None).unwrap();
    assert!(first.is_auto());
    assert_eq!(first.to_string(), "4c0000000a");
    let equal = Layout::equal(4).unwrap();
    for (a, e) in first.shards().iter().zip(equal.shards()) {
        assert_eq!((a.start(), a.end()), (e.start(), e.end()));
    }
    let namespaces = crowded(|_| 5);
    let next = first.refit(&weights(&namespaces)).unwrap();
    assert!(next.is_auto() && next != first);
    assert_eq!(next.tag(), first.tag(), "one tag for every version");
    assert!(!Layout::with_cuts(vec![1, 2]).unwrap().is_auto());
    assert!(Layout::auto(4, Some(vec![1, 2])).is_err(), "3 shards is not 4");
}

#[test]
fn a_refit_moves_only_the_cuts_that_put_a_namespace_elsewhere() {
    // Namespaces at hashes 10, 20, 30, 40 of weight 1, cut 2/2 by 25; a heavy one arrives at 35.
    let weighted = [(10, 1), (20, 1), (30, 1), (40, 1)];
    let current = Layout::auto(2, Some(vec![25])).unwrap();
    let same = current.refit(&weighted).unwrap();
    assert_eq!(
        same, current,
        "the fit (cut at 30) puts nobody elsewhere than 25 does"
    );
    let grown = [(10, 1), (20, 1), (30, 1), (35, 10), (40, 1)];
    let moved = current.refit(&grown).unwrap();
    assert_ne!(moved.cuts(), current.cuts());
    assert_eq!(
        moved.loads(&grown),
        vec![3, 11],
        "the heavy one with 40 only: {moved:?}"
    );
    let three = Layout::auto(3, Some(vec![15, 25])).unwrap();
    let loads = three.loads(&weighted);
    assert_eq!(loads, vec![1, 1, 2]);
    assert_eq!(
        Layout::equal(2).unwrap().loads(&[(1, 3), (u64::MAX, 4)]),
        vec![3, 4]
    );
}

proptest! {
    #[test]
    fn fitted_layouts_are_valid_and_place_each_namespace_once(
        points in proptest::collection::vec((any::<u64>(), 0..1000u64), 0..200),
        top in proptest::collection::vec(u64::MAX - 5..=u64::MAX, 0..4),
        count in 1..=64u32,
    ) {
        let all: Vec<(u64, u64)> = points.into_iter().chain(top.into_iter().map(|h| (h, 1))).collect();
        let layout = Layout::fit(count, all.clone()).unwrap();
        let shards = layout.shards();
        prop_assert_eq!(shards.len(), count as usize);
        prop_assert_eq!(shards[0].start(), 0);
        prop_assert_eq!(shards[shards.len() - 1].end(), 1u128 << 64);
        for w in shards.windows(2) {
            prop_assert_eq!(w[0].end(), w[1].start());
        }
        if !layout.cuts().is_empty() {
            prop_assert_eq!(Layout::parse_cuts(&layout.cuts_text()).ok(), Some(layout.clone()));
        }
        for (hash, _) in all {
            let holding = shards.iter().filter(|s| s.contains_hash(hash)).count();
            prop_assert_eq!(holding, 1);
        }
    }

    #[test]
    fn a_namespace_is_in_the_shard_the_layout_names(ns in "[a-z0-9-]{1,63}", cuts in proptest::collection::btree_set(1..=u64::MAX, 1..40)) {
        let layout = Layout::with_cuts(cuts.into_iter().collect()).unwrap();
        let shard = layout.shard_of_namespace(&ns);
        prop_assert!(shard.contains_namespace(&ns));
        prop_assert_eq!(layout.shards().iter().filter(|s| s.contains_namespace(&ns)).count(), 1);
    }
}

proptest! {
    #[test]
    fn a_refit_is_a_valid_version_that_keeps_every_namespace_where_the_fit_puts_it(
        hashes in proptest::collection::btree_map(1..=u64::MAX, 1..20u64, 1..60),
        count in 2..8u32,
        old in proptest::collection::btree_set(1..=u64::MAX, 7),
    ) {
        let weighted: Vec<(u64, u64)> = hashes.into_iter().collect();
        let old: Vec<u64> = old.into_iter().take(count as usize - 1).collect();
        let current = Layout::auto(count, Some(old)).unwrap();
        let next = current.refit(&weighted).unwrap();
        prop_assert!(next.is_auto());
        prop_assert_eq!(next.count(), count);
        let fitted = Layout::fit(count, weighted.iter().copied()).unwrap();
        for (h, _) in &weighted {
            let index = |l: &Layout| l.cuts().partition_point(|c| c <= h);
            prop_assert_eq!(index(&next), index(&fitted), "hash {:#x}", h);
        }
        prop_assert_eq!(next.loads(&weighted), fitted.loads(&weighted));
    }
}
