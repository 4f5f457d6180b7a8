//! Which shards to acquire and which to release: a pure function of what the replica sees, so the
//! fair-share rule is tested without Leases or clocks.
//!
//! Each replica aims at its quota: `N / live` shards, one more for the first `N mod live` live
//! members by name (12 over 5: 3/3/2/2/2, none idle; every replica computes every quota from the same
//! list). Below it, a replica tries free shards (no
//! live holder by its own clock) in the order of a rendezvous hash of (its identity, the shard), so
//! replicas starting together prefer different shards and the same replica prefers the same shards
//! after a restart of another. Above it, the replica releases its lowest-scored shards, but only
//! once the membership has been stable for a lease duration (see `members`), so a member that
//! flaps costs no churn.
//!
//! While a live member runs with another shard count (a layout change under way), the layout that
//! serves (holds a live claim) keeps serving: its replicas take every free shard of theirs, whatever
//! the share, and release nothing, so the shards of its replicas that leave are taken over at once;
//! the other layout takes nothing until the serving one is gone. Its shards are then free, and it
//! takes them after one handover. Which shards are free already excludes overlapping claims of
//! other layouts (`claims`).

use informer::fnv1a64;

/// What one replica sees, at one instant.
#[derive(Debug, Clone)]
pub struct View<'a> {
    pub identity: &'a str,
    /// The shard count, `--shards`.
    pub count: u32,
    /// Live replicas, this one included.
    pub live: usize,
    /// This replica's place among the live members, by name.
    pub rank: usize,
    /// Shards this replica holds.
    pub held: &'a [u32],
    /// Shards whose Lease has no live holder by this replica's clock (including none at all).
    pub free: &'a [u32],
    /// The live membership has not changed for a lease duration.
    pub stable: bool,
    /// A live member runs with another shard count.
    pub mixed: bool,
    /// This replica's layout serves: a live claim of its shard count exists (or none of any layout
    /// does, and this layout comes first among the live members).
    pub serving: bool,
}

/// What to do this round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Try these, in order, until one fails or the target is reached.
    pub acquire: Vec<u32>,
    pub release: Vec<u32>,
}

/// The fair share of the live member at `rank`: `count / live`, plus one for the first
/// `count mod live`; the quotas add up to `count`. At least one replica is counted.
pub fn target(count: u32, live: usize, rank: usize) -> usize {
    let (count, live) = (count as usize, live.max(1));
    count / live + usize::from(rank < count % live)
}

pub fn plan(v: &View<'_>) -> Plan {
    if v.mixed && !v.serving {
        return Plan::default();
    }
    let target = if v.mixed {
        v.count as usize
    } else {
        target(v.count, v.live, v.rank)
    };
    let score = |shard: &u32| fnv1a64(format!("{}/{shard}", v.identity).as_bytes());
    let mut plan = Plan::default();
    if v.held.len() < target {
        let mut free: Vec<u32> = v.free.iter().copied().filter(|s| !v.held.contains(s)).collect();
        free.sort_by_key(|s| std::cmp::Reverse(score(s)));
        free.truncate(target - v.held.len());
        plan.acquire = free;
    } else if v.held.len() > target && v.stable && !v.mixed {
        let mut held = v.held.to_vec();
        held.sort_by_key(score);
        held.truncate(v.held.len() - target);
        plan.release = held;
    }
    plan
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    fn view<'a>(identity: &'a str, held: &'a [u32], free: &'a [u32], live: usize) -> View<'a> {
        View {
            identity,
            count: 12,
            live,
            rank: 0,
            held,
            free,
            stable: true,
            mixed: false,
            serving: true,
        }
    }

    #[test]
    fn the_quotas_add_up_to_the_shard_count() {
        assert_eq!(target(12, 3, 2), 4);
        assert_eq!(target(12, 4, 0), 3);
        let five: Vec<usize> = (0..5).map(|r| target(12, 5, r)).collect();
        assert_eq!(five, [3, 3, 2, 2, 2]);
        assert_eq!(target(12, 0, 0), 12);
        assert_eq!((0..3).map(|r| target(1, 3, r)).collect::<Vec<_>>(), [1, 0, 0]);
    }

    #[test]
    fn a_replica_takes_free_shards_up_to_its_share_only() {
        let all: Vec<u32> = (0..12).collect();
        let p = plan(&view("a", &[], &all, 3));
        assert_eq!(p.acquire.len(), 4);
        assert!(p.release.is_empty());
        let p = plan(&view("a", &[1, 2], &[5], 3));
        assert_eq!(p.acquire, [5]);
    }

    #[test]
    fn surplus_is_released_only_when_membership_is_stable() {
        let held: Vec<u32> = (0..6).collect();
        let mut v = view("a", &held, &[], 3);
        assert_eq!(plan(&v).release.len(), 2);
        v.stable = false;
        assert_eq!(plan(&v), Plan::default());
    }

    #[test]
    fn beside_another_layout_the_serving_one_takes_every_free_shard_and_the_other_waits() {
        let all: Vec<u32> = (0..12).collect();
        let mut v = view("a", &[], &all, 2);
        v.mixed = true;
        v.serving = false;
        assert_eq!(plan(&v), Plan::default());
        v.serving = true;
        assert_eq!(plan(&v).acquire.len(), 12);
        let held: Vec<u32> = (0..12).collect();
        let mut v = view("a", &held, &[], 4);
        v.mixed = true;
        assert_eq!(plan(&v), Plan::default(), "nothing released while mixed");
    }

    /// Rounds of every replica planning and acting, each taking what it planned if still free,
    /// end in the fair spread: 12 shards over r replicas, no shard held twice, none left free.
    fn settle(replicas: &[String]) -> Vec<BTreeSet<u32>> {
        let mut held: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); replicas.len()];
        for _ in 0..20 {
            for (i, id) in replicas.iter().enumerate() {
                let taken: BTreeSet<u32> = held.iter().flatten().copied().collect();
                let free: Vec<u32> = (0..12).filter(|s| !taken.contains(s)).collect();
                let mine: Vec<u32> = held[i].iter().copied().collect();
                let p = plan(&View {
                    identity: id,
                    count: 12,
                    live: replicas.len(),
                    rank: i,
                    held: &mine,
                    free: &free,
                    stable: true,
                    mixed: false,
                    serving: true,
                });
                held[i].extend(p.acquire);
                for r in p.release {
                    held[i].remove(&r);
                }
            }
        }
        held
    }

    #[test]
    fn twelve_shards_spread_over_three_four_and_five_replicas_with_none_idle() {
        let ids: Vec<String> = ["w", "x", "y"].map(String::from).to_vec();
        let three = settle(&ids);
        assert_eq!(three.iter().map(BTreeSet::len).collect::<Vec<_>>(), [4, 4, 4]);
        let ids: Vec<String> = ["w", "x", "y", "z"].map(String::from).to_vec();
        let four = settle(&ids);
        assert_eq!(four.iter().map(BTreeSet::len).collect::<Vec<_>>(), [3, 3, 3, 3]);
        let ids: Vec<String> = ["v", "w", "x", "y", "z"].map(String::from).to_vec();
        let five = settle(&ids);
        assert_eq!(
            five.iter().map(BTreeSet::len).collect::<Vec<_>>(),
            [3, 3, 2, 2, 2]
        );
    }

    proptest! {
        #[test]
        fn replicas_never_plan_past_their_share(count in 1..64u32, live in 1..8usize, rank in 0..8usize, held_n in 0..64usize, id in "[a-z]{1,8}") {
            let held: Vec<u32> = (0..count).take(held_n).collect();
            let free: Vec<u32> = (0..count).skip(held_n).collect();
            let p = plan(&View { identity: &id, count, live, rank, held: &held, free: &free, stable: true, mixed: false, serving: true });
            let t = target(count, live, rank);
            prop_assert!(held.len() + p.acquire.len() <= t.max(held.len()));
            prop_assert!(held.len() - p.release.len() >= t.min(held.len()));
            prop_assert!(p.acquire.iter().all(|s| free.contains(s)));
            prop_assert!(p.release.iter().all(|s| held.contains(s)));
        }
    }
}
