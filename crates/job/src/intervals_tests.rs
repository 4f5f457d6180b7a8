use proptest::prelude::*;

use super::*;

fn iv(first: i32, last: i32) -> Interval {
    Interval { first, last }
}

#[test]
fn formats_like_upstream() {
    let cases = [
        (vec![], ""),
        (vec![iv(0, 0)], "0"),
        (vec![iv(0, 1)], "0,1"),
        (vec![iv(0, 2)], "0-2"),
        (vec![iv(1, 1), iv(3, 5), iv(7, 8), iv(10, 10)], "1,3-5,7,8,10"),
    ];
    for (ivs, want) in cases {
        assert_eq!(OrderedIntervals(ivs).to_string(), want);
    }
}

#[test]
fn parses_like_upstream() {
    // From upstream's TestParseIndexesFromString.
    let p = |s: &str, c: i32| OrderedIntervals::parse(s, c).0;
    assert_eq!(p("", 10), vec![]);
    assert_eq!(p("1", 10), vec![iv(1, 1)]);
    assert_eq!(p("1,3", 10), vec![iv(1, 1), iv(3, 3)]);
    assert_eq!(p("1-3", 10), vec![iv(1, 3)]);
    assert_eq!(
        p("1-3,5,7-10", 10),
        vec![iv(1, 3), iv(5, 5), iv(7, 9)],
        "capped at completions"
    );
    assert_eq!(
        p("1-3,4,8,9", 10),
        vec![iv(1, 4), iv(8, 9)],
        "adjacent intervals merge"
    );
    assert_eq!(
        p("1-3,x,5", 10),
        vec![iv(1, 3), iv(5, 5)],
        "corrupted interval skipped"
    );
    assert_eq!(p("1-x,5", 10), vec![iv(5, 5)]);
    assert_eq!(p("5,12,15", 10), vec![iv(5, 5)], "stops beyond completions");
}

#[test]
fn merges_and_adds_indexes() {
    let base = OrderedIntervals(vec![iv(1, 1), iv(5, 7), iv(10, 10)]);
    assert_eq!(
        base.with_ordered_indexes(&[0, 2, 4, 8, 12]).0,
        vec![iv(0, 2), iv(4, 8), iv(10, 10), iv(12, 12)]
    );
    assert_eq!(
        OrderedIntervals::default().with_ordered_indexes(&[3]).0,
        vec![iv(3, 3)]
    );
    let other = OrderedIntervals(vec![iv(0, 3), iv(6, 12)]);
    assert_eq!(base.merge(&other).0, vec![iv(0, 3), iv(5, 12)]);
    assert_eq!(base.total(), 5);
    assert!(base.has(6) && base.has(10) && !base.has(8) && !base.has(0) && !base.has(11));
}

fn index_set() -> impl Strategy<Value = std::collections::BTreeSet<i32>> {
    proptest::collection::btree_set(0..200i32, 0..60)
}

proptest! {
    /// Formatting then parsing gives the same set back, and the string is canonical.
    #[test]
    fn format_parse_round_trip(set in index_set()) {
        let indexes: Vec<i32> = set.iter().copied().collect();
        let ivs = OrderedIntervals::default().with_ordered_indexes(&indexes);
        let s = ivs.to_string();
        let back = OrderedIntervals::parse(&s, 200);
        prop_assert_eq!(&back, &ivs);
        prop_assert_eq!(back.to_string(), s);
        prop_assert_eq!(back.indexes().collect::<Vec<_>>(), indexes.clone());
        prop_assert_eq!(usize::try_from(back.total()).unwrap(), indexes.len());
        for i in 0..200 {
            prop_assert_eq!(back.has(i), set.contains(&i));
        }
    }

    /// Merging is the set union.
    #[test]
    fn merge_is_union(a in index_set(), b in index_set()) {
        let to = |s: &std::collections::BTreeSet<i32>| {
            OrderedIntervals::default().with_ordered_indexes(&s.iter().copied().collect::<Vec<_>>())
        };
        let union: Vec<i32> = a.union(&b).copied().collect();
        prop_assert_eq!(to(&a).merge(&to(&b)), to(&a.union(&b).copied().collect()));
        prop_assert_eq!(to(&a).merge(&to(&b)).indexes().collect::<Vec<_>>(), union);
    }
}
