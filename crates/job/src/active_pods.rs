//! Which active pods a Job deletes first (upstream `controller.ActivePods`): pods in the earliest
//! stage go first, so that the least work is lost.
//!
//! Each pod gets a key with a derived `Ord`, so the order is total by construction: Rust's sorts may
//! panic on a comparator that is not (the ReplicaSet ranking did, see `controller::ranking`). Upstream's
//! tiers have no time buckets, so every pair it orders, this orders the same way; pods equal in every
//! tier, which upstream leaves to its unstable sort, are ordered by UID and then name.

use controller::compact_pod::Pod;
use std::{cmp::Reverse, sync::Arc};

use controller::pod_util::{is_ready, max_container_restarts, max_sidecar_restarts, phase, ready_since};

/// A time in a tier: absent (zero) first, then later first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LaterFirst {
    Zero,
    At(Reverse<i128>),
}

impl LaterFirst {
    fn of(t: Option<k8s_openapi::jiff::Timestamp>) -> Self {
        match t {
            Some(t) if t != k8s_openapi::jiff::Timestamp::UNIX_EPOCH => {
                LaterFirst::At(Reverse(t.as_nanosecond()))
            }
            _ => LaterFirst::Zero,
        }
    }
}

/// One pod's place in the deletion order; smaller goes first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct DeletionKey<'a> {
    /// 1. Not yet on a node first.
    pub(crate) assigned: bool,
    /// 2. Pending, then Unknown, then Running (other phases rank with Pending, as upstream's map lookup).
    pub(crate) phase: u8,
    /// 3. Not ready first.
    pub(crate) ready: bool,
    /// 4. Both ready: ready more recently first (only set for ready pods).
    pub(crate) ready_since: LaterFirst,
    /// 5. More container restarts first, then more sidecar restarts first (upstream
    ///    `compareMaxContainerRestarts`).
    pub(crate) restarts: Reverse<i32>,
    pub(crate) sidecar_restarts: Reverse<i32>,
    /// 6. Created more recently first.
    pub(crate) created: LaterFirst,
    /// Equal in every tier: a stable, arbitrary choice.
    pub(crate) uid: &'a str,
    pub(crate) name: &'a str,
}

impl<'a> DeletionKey<'a> {
    pub(crate) fn of(p: &'a Pod) -> Self {
        let ready = is_ready(p);
        DeletionKey {
            assigned: p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty()),
            phase: match phase(p) {
                "Unknown" => 1,
                "Running" => 2,
                _ => 0,
            },
            ready,
            ready_since: if ready {
                LaterFirst::of(ready_since(p))
            } else {
                LaterFirst::Zero
            },
            restarts: Reverse(max_container_restarts(p)),
            sidecar_restarts: Reverse(max_sidecar_restarts(p)),
            created: LaterFirst::of(p.metadata.creation_timestamp.as_ref().map(|t| t.0)),
            uid: p.metadata.uid.as_deref().unwrap_or(""),
            name: p.metadata.name.as_deref().unwrap_or(""),
        }
    }
}

/// Upstream's tiers of a key, without the tie-break.
type Tiers = (bool, u8, bool, LaterFirst, Reverse<i32>, Reverse<i32>, LaterFirst);

impl DeletionKey<'_> {
    fn tiers(&self) -> Tiers {
        (
            self.assigned,
            self.phase,
            self.ready,
            self.ready_since,
            self.restarts,
            self.sidecar_restarts,
            self.created,
        )
    }
}

/// Sorts pods so that the ones to delete first come first.
pub(crate) fn sort_for_deletion(pods: &mut [Arc<Pod>]) {
    pods.sort_by_cached_key(|p| {
        let k = DeletionKey::of(p);
        (k.tiers(), k.uid.to_owned(), k.name.to_owned())
    });
}

/// As [`sort_for_deletion`], but pods equal in every tier keep the order they came in: an Indexed
/// Job's kept pods, which come in index order, so that the lowest index goes first. Upstream sorts
/// the same index-ordered list with Go's `sort.Sort`, whose insertion sort (of every run of up to 12
/// pods) leaves ties in place; with the UID tie-break, a scale-down of pods created and ready in
/// the same second deleted another index than upstream's.
pub(crate) fn sort_for_deletion_keeping_ties(pods: &mut [Arc<Pod>]) {
    // `sort_by_cached_key` is stable.
    pods.sort_by_cached_key(|p| DeletionKey::of(p).tiers());
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::fixtures::pod;

    #[test]
    fn earliest_stage_first() {
        let mut pods = vec![
            pod("running-ready").node("n").ready().build(),
            pod("running").node("n").running().build(),
            pod("pending-on-node").node("n").build(),
            pod("unassigned").build(),
            pod("restarted").node("n").running().restarts(3).build(),
            pod("newer").node("n").running().created(10).build(),
        ];
        sort_for_deletion(&mut pods);
        let names: Vec<_> = pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            [
                "unassigned",
                "pending-on-node",
                "restarted",
                "newer",
                "running",
                "running-ready"
            ]
        );
    }

    /// Where regular restarts tie, the pod whose sidecar restarted more goes first (upstream
    /// `compareMaxContainerRestarts`).
    #[test]
    fn sidecar_restarts_break_a_restart_tie() {
        let mut older = pod("older")
            .node("n")
            .running()
            .ready()
            .created(1)
            .sidecar("proxy", None);
        older
            .0
            .status
            .as_mut()
            .unwrap()
            .init_container_statuses
            .as_mut()
            .unwrap()[0]
            .restart_count = 3;
        let mut pods = vec![
            pod("newer").node("n").running().ready().created(2).build(),
            older.build(),
        ];
        sort_for_deletion(&mut pods);
        assert_eq!(pods[0].metadata.name.as_deref(), Some("older"));
    }

    fn arb_pod() -> impl Strategy<Value = Arc<Pod>> {
        (
            any::<bool>(),
            0..4u8,
            any::<bool>(),
            0..3i64,
            0..3i32,
            0..3i64,
            0..4u8,
        )
            .prop_map(|(node, ph, ready, since, restarts, created, uid)| {
                let mut b = pod(&format!("p{uid}")).created(created).restarts(restarts);
                if node {
                    b = b.node("n");
                }
                b = b.phase(["Pending", "Unknown", "Running", "Weird"][usize::from(ph)]);
                let mut p = (*b.build()).clone();
                if ready {
                    p.status.as_mut().unwrap().conditions =
                        Some(vec![controller::compact_pod::PodCondition {
                            type_: "Ready".into(),
                            status: "True".into(),
                            last_transition_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                                crate::fixtures::ts(since),
                            )),
                        }]);
                }
                Arc::new(p)
            })
    }

    /// Tied pods keep their order (an Indexed Job's: by index), whatever their UIDs.
    #[test]
    fn ties_keep_their_order_when_asked() {
        let tied = |name: &str, uid: &str| {
            let mut p = (*pod(name).node("n").running().ready().build()).clone();
            p.metadata.uid = Some(uid.to_owned());
            Arc::new(p)
        };
        let mut pods = vec![tied("index-0", "c"), tied("index-1", "a"), tied("index-2", "b")];
        sort_for_deletion_keeping_ties(&mut pods);
        let names: Vec<_> = pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["index-0", "index-1", "index-2"]);
        sort_for_deletion(&mut pods);
        assert_eq!(pods[0].metadata.name.as_deref(), Some("index-1"));
    }

    proptest! {
        /// The key order is a total order (antisymmetric, transitive) and sorting never panics, with
        /// many exact time ties.
        #[test]
        fn deletion_order_is_total(pods in proptest::collection::vec(arb_pod(), 0..30)) {
            let keys: Vec<DeletionKey<'_>> = pods.iter().map(|p| DeletionKey::of(p)).collect();
            for a in &keys {
                for b in &keys {
                    prop_assert_eq!(a.cmp(b), b.cmp(a).reverse());
                    for c in &keys {
                        if a <= b && b <= c {
                            prop_assert!(a <= c);
                        }
                    }
                }
            }
            let mut sorted = pods.clone();
            sort_for_deletion(&mut sorted);
            for w in sorted.windows(2) {
                prop_assert!(DeletionKey::of(&w[0]) <= DeletionKey::of(&w[1]));
            }
        }
    }
}
