//! A Deployment's ReplicaSets: which one is new, how they sort, what they add up to (upstream
//! `deployment_util.go` and `controller_utils.go`: `FindNewReplicaSet`, `FindOldReplicaSets`,
//! `EqualIgnoreHash`, `ReplicaSetsByCreationTimestamp`, `ReplicaSetsBySizeOlder`,
//! `ReplicaSetsBySizeNewer`, `ReplicaSetsByRevision`, the `Get*ReplicaCountForReplicaSets` sums).
//!
//! Every order here is a sort key with a derived `Ord`, so each is a total order by construction:
//! Rust's sorts may panic on a comparator that is not one (see `controller::ranking`). Upstream's
//! orders are total too, except the by-revision order, which falls back to creation time for a pair
//! where either revision does not parse and can therefore cycle; here an unparsable revision sorts
//! as revision 0, which agrees with upstream on every pair of parsable (or missing) revisions.

use std::cmp::Reverse;

use k8s_openapi::{
    api::{apps::v1::ReplicaSet, core::v1::PodTemplateSpec},
    jiff::Timestamp,
};

use crate::{annotations, hash::POD_TEMPLATE_HASH_LABEL};

/// `spec.replicas` when unset (apps/v1 defaulting, `SetDefaults_ReplicaSet`).
pub const DEFAULT_RS_REPLICAS: i32 = 1;

pub fn replicas(rs: &ReplicaSet) -> i32 {
    rs.spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(DEFAULT_RS_REPLICAS)
}

/// A ReplicaSet with spec.replicas > 0 (upstream `FilterActiveReplicaSets`).
pub fn is_active(rs: &ReplicaSet) -> bool {
    replicas(rs) > 0
}

pub fn name(rs: &ReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or("")
}

pub fn created(rs: &ReplicaSet) -> Option<Timestamp> {
    rs.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

pub fn status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map_or(0, |s| s.replicas)
}

pub fn ready(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0)
}

pub fn available(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
}

/// Oldest first, then by name; a missing creation time counts as the oldest (Go's zero time).
pub fn by_creation(rs: &ReplicaSet) -> (Option<Timestamp>, &str) {
    (created(rs), name(rs))
}

/// Largest first, older first among equals: the order to scale down in.
pub fn by_size_older(rs: &ReplicaSet) -> (Reverse<i32>, Option<Timestamp>, &str) {
    (Reverse(replicas(rs)), created(rs), name(rs))
}

/// Largest first, newer first among equals: the order to scale up in.
pub fn by_size_newer(rs: &ReplicaSet) -> (Reverse<i32>, Reverse<(Option<Timestamp>, &str)>) {
    (Reverse(replicas(rs)), Reverse(by_creation(rs)))
}

/// Lowest revision first, then oldest: the order old ReplicaSets are cleaned up in.
pub fn by_revision(rs: &ReplicaSet) -> (i64, Option<Timestamp>, &str) {
    (
        annotations::revision(&rs.metadata).unwrap_or(0),
        created(rs),
        name(rs),
    )
}

/// Templates equal but for the hash label (upstream `EqualIgnoreHash`). Labels left empty by
/// removing the hash label compare equal to no labels, as apimachinery's semantic equality treats
/// empty and nil maps.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    fn strip(m: Option<&ObjectMeta>) -> Option<ObjectMeta> {
        let mut m = m?.clone();
        if let Some(l) = m.labels.as_mut() {
            l.remove(POD_TEMPLATE_HASH_LABEL);
        }
        if m.labels.as_ref().is_some_and(|l| l.is_empty()) {
            m.labels = None;
        }
        if m.annotations.as_ref().is_some_and(|l| l.is_empty()) {
            m.annotations = None;
        }
        (m != ObjectMeta::default()).then_some(m)
    }
    // The specs first: they are what differs between most pairs, and need no copy.
    a.spec == b.spec && strip(a.metadata.as_ref()) == strip(b.metadata.as_ref())
}

pub fn template(rs: &ReplicaSet) -> Option<&PodTemplateSpec> {
    rs.spec.as_ref().and_then(|s| s.template.as_ref())
}

/// Index of the oldest ReplicaSet whose template is the Deployment's (several can match after an
/// upgrade changed hashing, kubernetes/kubernetes#40415: the oldest wins, deterministically).
pub fn find_new<'a>(
    template_of_d: &PodTemplateSpec,
    rss: impl IntoIterator<Item = &'a ReplicaSet>,
) -> Option<usize> {
    let empty = PodTemplateSpec::default();
    rss.into_iter()
        .enumerate()
        .filter(|(_, rs)| equal_ignore_hash(template(rs).unwrap_or(&empty), template_of_d))
        .min_by_key(|(_, rs)| by_creation(rs))
        .map(|(i, _)| i)
}

/// Sum of spec.replicas. This and the other sums add in int32 and wrap as upstream's do: counts
/// near MaxInt32 are valid, and what the controller then writes (sizes, annotations, status) is what
/// upstream writes.
pub fn sum_replicas<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(replicas).fold(0, i32::wrapping_add)
}

pub fn sum_status_replicas<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(status_replicas).fold(0, i32::wrapping_add)
}

pub fn sum_ready<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(ready).fold(0, i32::wrapping_add)
}

pub fn sum_available<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(available).fold(0, i32::wrapping_add)
}

/// Terminating pods of all ReplicaSets. A ReplicaSet its controller never synced (observedGeneration
/// 0 and no count) does not count; if any synced one has no count, the sum is unknown (upstream
/// `GetTerminatingReplicaCountForReplicaSets`, 1.33+).
pub fn sum_terminating<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> Option<i32> {
    let mut sum = 0;
    for rs in rss {
        let s = rs.status.as_ref();
        let observed = s.and_then(|s| s.observed_generation).unwrap_or(0);
        match s.and_then(|s| s.terminating_replicas) {
            None if observed == 0 => {}
            None => return None,
            Some(n) => sum = i32::wrapping_add(sum, n),
        }
    }
    Some(sum)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::fixtures::{deployment, rs};

    #[test]
    fn the_oldest_matching_replica_set_is_the_new_one() {
        // Upstream TestFindNewReplicaSet.
        let d = deployment("foo", 1).build();
        let t = &d.spec.as_ref().unwrap().template;
        let older = rs("older", 1, 10).arc();
        let newer = rs("newer", 1, 20).arc();
        let other = rs("other", 1, 5).image("other").arc();
        fn refs(v: &[Arc<ReplicaSet>]) -> Vec<&ReplicaSet> {
            v.iter().map(|r| &**r).collect()
        }
        assert_eq!(
            find_new(t, refs(&[newer.clone(), older.clone(), other.clone()])),
            Some(1)
        );
        assert_eq!(find_new(t, refs(std::slice::from_ref(&other))), None);
        let same_time = rs("a", 1, 20).arc();
        assert_eq!(
            find_new(t, refs(&[newer, same_time])),
            Some(1),
            "name breaks ties"
        );
    }

    #[test]
    fn templates_compare_without_their_hash_label() {
        let d = deployment("foo", 1).build();
        let t = d.spec.unwrap().template;
        let r = rs("x", 1, 0).build();
        assert!(equal_ignore_hash(template(&r).unwrap(), &t));
        let mut only_hash = PodTemplateSpec {
            metadata: Some(Default::default()),
            ..Default::default()
        };
        only_hash
            .metadata
            .as_mut()
            .unwrap()
            .labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH_LABEL.into(), "h".into());
        assert!(
            equal_ignore_hash(&only_hash, &PodTemplateSpec::default()),
            "empty labels equal none"
        );
        let other = rs("y", 1, 0).image("other").build();
        assert!(!equal_ignore_hash(template(&other).unwrap(), &t));
    }

    #[test]
    fn terminating_counts_skip_unsynced_and_give_up_on_unknown() {
        let synced = rs("a", 1, 0).terminating(Some(2)).build();
        let fresh = rs("b", 1, 0).terminating(None).generation(1, 0).build();
        let unknown = rs("c", 1, 0).terminating(None).build();
        assert_eq!(sum_terminating([&synced, &fresh]), Some(2));
        assert_eq!(sum_terminating([&synced, &unknown]), None);
        assert_eq!(sum_terminating([]), Some(0));
    }

    fn arb_rs() -> impl Strategy<Value = Arc<ReplicaSet>> {
        (
            0..4i32,
            0..4i64,
            prop::sample::select(vec!["a", "b", "c"]),
            prop::option::of(0..4i64),
            any::<bool>(),
        )
            .prop_map(|(replicas, created, name, revision, garbage)| {
                let mut b = rs(name, replicas, created);
                if let Some(r) = revision {
                    b = b.revision(&r.to_string());
                }
                if garbage {
                    b = b.revision("not-a-number");
                }
                b.arc()
            })
    }

    proptest! {
        /// Each sort key is a total order (antisymmetric, transitive, total), so sorting cannot
        /// panic and gives one answer whatever the input order.
        #[test]
        fn orders_are_total(mut rss in prop::collection::vec(arb_rs(), 0..12)) {
            macro_rules! check {
                ($key:expr) => {{
                    rss.sort_by(|a, b| $key(&**a).cmp(&$key(&**b)));
                    for w in rss.windows(2) {
                        prop_assert!($key(&*w[0]) <= $key(&*w[1]));
                    }
                    let mut reversed = rss.clone();
                    reversed.reverse();
                    reversed.sort_by(|a, b| $key(&**a).cmp(&$key(&**b)));
                    let keys = |v: &[Arc<ReplicaSet>]| v.iter().map(|r| format!("{:?}", $key(&**r))).collect::<Vec<_>>();
                    prop_assert_eq!(keys(&rss), keys(&reversed));
                }};
            }
            check!(by_creation);
            check!(by_size_older);
            check!(by_size_newer);
            check!(by_revision);
        }

        /// The size orders agree with upstream's comparators pairwise.
        #[test]
        fn size_orders_agree_with_upstream(a in arb_rs(), b in arb_rs()) {
            let creation_less = |x: &ReplicaSet, y: &ReplicaSet| {
                if created(x) == created(y) { name(x) < name(y) } else { created(x) < created(y) }
            };
            let older_less = if replicas(&a) == replicas(&b) { creation_less(&a, &b) } else { replicas(&a) > replicas(&b) };
            let newer_less = if replicas(&a) == replicas(&b) { creation_less(&b, &a) } else { replicas(&a) > replicas(&b) };
            prop_assert_eq!(by_size_older(&a) < by_size_older(&b), older_less);
            prop_assert_eq!(by_size_newer(&a) < by_size_newer(&b), newer_less);
        }
    }
}
