//! The annotations a Deployment keeps on itself and its ReplicaSets (upstream `deployment_util.go`:
//! `Revision`, `MaxRevision`, `LastRevision`, `SetNewReplicaSetAnnotations`,
//! `SetReplicasAnnotations`, `SetDeploymentAnnotationsTo`).
//!
//! They are the controller's memory across syncs: which ReplicaSet came when (revision), what size
//! the Deployment had when a ReplicaSet was last scaled (desired/max replicas, which is how a scaling
//! event is told apart from a rollout), and what a rollback asked for.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Where apps/v1 keeps the deprecated `spec.rollbackTo` (apps/v1 `DeprecatedRollbackTo`).
pub const ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
/// kubectl's copy of the applied manifest: never copied, it describes the Deployment only.
pub const LAST_APPLIED_CONFIGURATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Longest revision-history value kept, about 100 revisions (upstream `maxRevHistoryLengthInChars`).
pub const MAX_REVISION_HISTORY_CHARS: usize = 2000;

/// Annotations a Deployment never copies to its ReplicaSets nor takes back from them on rollback
/// (upstream `annotationsToSkip`).
pub const SKIPPED: [&str; 6] = [
    LAST_APPLIED_CONFIGURATION,
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    ROLLBACK_TO,
];

pub fn skip_copy(key: &str) -> bool {
    SKIPPED.contains(&key)
}

/// The revision of an object: 0 without the annotation, an error if it is not an integer.
pub fn revision(meta: &ObjectMeta) -> Result<i64, std::num::ParseIntError> {
    match meta.annotations.as_ref().and_then(|a| a.get(REVISION)) {
        None => Ok(0),
        Some(v) => v.parse(),
    }
}

/// The highest revision, unparsable ones skipped.
pub fn max_revision<'a>(metas: impl IntoIterator<Item = &'a ObjectMeta>) -> i64 {
    metas
        .into_iter()
        .filter_map(|m| revision(m).ok())
        .fold(0, i64::max)
}

/// The second highest revision (the one before the current), unparsable ones skipped; 0 if none.
pub fn last_revision<'a>(metas: impl IntoIterator<Item = &'a ObjectMeta>) -> i64 {
    let (mut max, mut second) = (0, 0);
    for v in metas.into_iter().filter_map(|m| revision(m).ok()) {
        if v >= max {
            second = max;
            max = v;
        } else if v > second {
            second = v;
        }
    }
    second
}

/// A replicas annotation of a ReplicaSet (desired-replicas, max-replicas) as upstream reads it: an
/// unsigned decimal (no sign, no blanks) of at most MaxInt32; anything else counts as absent
/// (upstream `getNonNegativeInt32FromAnnotation`). A hand-edited "-5" therefore never becomes a
/// negative size.
pub fn int_annotation(meta: &ObjectMeta, key: &str) -> Option<i32> {
    let v = meta.annotations.as_ref()?.get(key)?;
    if !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u32>().ok().and_then(|v| i32::try_from(v).ok())
}

/// The rollback revision asked for through the deprecated annotation; an invalid value is ignored.
pub fn rollback_to(meta: &ObjectMeta) -> Option<i64> {
    meta.annotations
        .as_ref()?
        .get(ROLLBACK_TO)
        .filter(|v| !v.is_empty())?
        .parse()
        .ok()
}

/// Copies the Deployment's annotations onto a ReplicaSet's, the skipped ones excepted; only adds and
/// overwrites. Returns whether anything changed.
pub fn copy_to_replica_set(
    deployment: Option<&BTreeMap<String, String>>,
    rs: &mut BTreeMap<String, String>,
) -> bool {
    let mut changed = false;
    for (k, v) in deployment.into_iter().flatten() {
        if skip_copy(k) || rs.get(k) == Some(v) {
            continue;
        }
        rs.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// Sets desired-replicas and max-replicas. Returns whether anything changed.
pub fn set_replicas(rs: &mut BTreeMap<String, String>, desired: i32, max: i32) -> bool {
    let mut changed = false;
    for (k, v) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let v = v.to_string();
        if rs.get(k) != Some(&v) {
            rs.insert(k.to_owned(), v);
            changed = true;
        }
    }
    changed
}

pub fn replicas_need_update(rs: Option<&BTreeMap<String, String>>, desired: i32, max: i32) -> bool {
    let Some(rs) = rs else { return true };
    rs.get(DESIRED_REPLICAS) != Some(&desired.to_string()) || rs.get(MAX_REPLICAS) != Some(&max.to_string())
}

/// The annotations of the new ReplicaSet: the Deployment's copied, the revision raised to
/// `new_revision` if lower (the previous one appended to revision-history, as happens on a
/// rollback), and, for a ReplicaSet about to be created, the replicas annotations. Returns whether
/// the ReplicaSet needs writing; as upstream, an existing revision that is not a number stops
/// everything but the copy and reports no change.
pub fn set_new_replica_set(
    deployment: Option<&BTreeMap<String, String>>,
    rs: &mut BTreeMap<String, String>,
    new_revision: i64,
    replicas_to_create: Option<(i32, i32)>,
) -> bool {
    let mut changed = copy_to_replica_set(deployment, rs);
    let old = rs.get(REVISION).cloned();
    let old_revision = match old.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(v) => v,
            Err(_) => return false,
        },
    };
    if old_revision < new_revision {
        rs.insert(REVISION.to_owned(), new_revision.to_string());
        changed = true;
        if let Some(old) = old {
            append_history(rs, &old);
        }
    }
    if let Some((desired, max)) = replicas_to_create
        && set_replicas(rs, desired, max)
    {
        changed = true;
    }
    changed
}

/// Appends `old` to revision-history, dropping the oldest entries to stay within
/// [`MAX_REVISION_HISTORY_CHARS`]; if even that is not enough, the history is left as it is. A
/// history whose first entry is empty (none, or a hand-edited one starting with a comma) is
/// replaced, as upstream only looks at that entry to tell whether there is one.
fn append_history(rs: &mut BTreeMap<String, String>, old: &str) {
    let history = rs.get(REVISION_HISTORY).cloned().unwrap_or_default();
    if history.split(',').next().is_none_or(str::is_empty) {
        rs.insert(REVISION_HISTORY.to_owned(), old.to_owned());
        return;
    }
    let entries: Vec<&str> = history.split(',').collect();
    let mut total = history.len() + old.len() + 1;
    let mut start = 0;
    while total > MAX_REVISION_HISTORY_CHARS && start < entries.len() {
        total -= entries[start].len() + 1;
        start += 1;
    }
    if total <= MAX_REVISION_HISTORY_CHARS {
        let mut kept = entries[start..].to_vec();
        kept.push(old);
        rs.insert(REVISION_HISTORY.to_owned(), kept.join(","));
    } else {
        tracing::warn!("revision history at its length limit; not appending revision {old}");
    }
}

/// The Deployment's annotations after rolling back to a ReplicaSet: its skipped annotations kept,
/// every other one taken from the ReplicaSet (so that the change-cause and the like follow the
/// template).
pub fn for_rollback(
    deployment: Option<&BTreeMap<String, String>>,
    rs: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = deployment
        .into_iter()
        .flatten()
        .filter(|(k, _)| skip_copy(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in rs.into_iter().flatten() {
        if !skip_copy(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(revision: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            annotations: revision.map(|r| BTreeMap::from([(REVISION.to_owned(), r.to_owned())])),
            ..ObjectMeta::default()
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn revisions_max_and_last() {
        let ms = [
            meta(Some("3")),
            meta(Some("x")),
            meta(None),
            meta(Some("7")),
            meta(Some("5")),
        ];
        assert_eq!(max_revision(&ms), 7);
        assert_eq!(last_revision(&ms), 5);
        assert_eq!(last_revision(&[meta(Some("2"))]), 0, "no previous revision");
        assert_eq!(last_revision(&[meta(Some("2")), meta(Some("2"))]), 2);
        assert!(revision(&meta(Some("x"))).is_err());
        assert_eq!(revision(&meta(None)), Ok(0));
        // int64 arithmetic, as the e2e RollingUpdateDeployment spec checks.
        let big = [meta(Some("3546343826724305832"))];
        assert_eq!(max_revision(&big) + 1, 3_546_343_826_724_305_833);
    }

    #[test]
    fn copy_skips_the_controllers_own_annotations() {
        let d = map(&[
            ("change-cause", "edit"),
            (LAST_APPLIED_CONFIGURATION, "{}"),
            (REVISION, "9"),
            (ROLLBACK_TO, "1"),
        ]);
        let mut rs = map(&[("keep", "me")]);
        assert!(copy_to_replica_set(Some(&d), &mut rs));
        assert_eq!(
            rs,
            map(&[("change-cause", "edit"), ("keep", "me")]),
            "never deletes"
        );
        assert!(!copy_to_replica_set(Some(&d), &mut rs), "nothing new");
    }

    #[test]
    fn new_replica_set_revision_and_history() {
        // Created: revision, and the replicas annotations.
        let mut rs = BTreeMap::new();
        assert!(set_new_replica_set(None, &mut rs, 1, Some((3, 4))));
        assert_eq!(
            rs,
            map(&[(DESIRED_REPLICAS, "3"), (MAX_REPLICAS, "4"), (REVISION, "1")])
        );
        // Existing and current: nothing to do.
        assert!(!set_new_replica_set(None, &mut rs, 1, None));
        // A higher revision is never lowered.
        assert!(!set_new_replica_set(None, &mut rs, 0, None));
        // Rolled back to: revision raised, the old one remembered.
        assert!(set_new_replica_set(None, &mut rs, 4, None));
        assert_eq!(rs[REVISION], "4");
        assert_eq!(rs[REVISION_HISTORY], "1");
        assert!(set_new_replica_set(None, &mut rs, 6, None));
        assert_eq!(rs[REVISION_HISTORY], "1,4");
        // A revision that is not a number: no write asked for.
        let mut bad = map(&[(REVISION, "x")]);
        assert!(!set_new_replica_set(Some(&map(&[("a", "b")])), &mut bad, 2, None));
    }

    #[test]
    fn a_revision_history_with_an_empty_first_entry_is_replaced() {
        // Upstream looks at the first comma-separated entry only: empty means no history.
        let mut rs = map(&[(REVISION, "3"), (REVISION_HISTORY, ",1,2")]);
        assert!(set_new_replica_set(None, &mut rs, 4, None));
        assert_eq!(rs[REVISION_HISTORY], "3");
        let mut rs = map(&[(REVISION, "3"), (REVISION_HISTORY, "1,,2")]);
        assert!(set_new_replica_set(None, &mut rs, 4, None));
        assert_eq!(rs[REVISION_HISTORY], "1,,2,3");
    }

    #[test]
    fn revision_history_is_trimmed_from_the_front() {
        let long: Vec<String> = (0..400).map(|i| format!("{i:04}")).collect();
        let mut rs = map(&[(REVISION, "9999"), (REVISION_HISTORY, &long.join(","))]);
        assert!(set_new_replica_set(None, &mut rs, 10_000, None));
        let history = &rs[REVISION_HISTORY];
        assert!(history.len() <= MAX_REVISION_HISTORY_CHARS);
        assert!(history.ends_with(",9999"));
        assert!(!history.starts_with("0000"), "the oldest entries went first");
    }

    #[test]
    fn replicas_annotations() {
        let mut rs = BTreeMap::new();
        assert!(replicas_need_update(None, 1, 2));
        assert!(set_replicas(&mut rs, 1, 2));
        assert!(!replicas_need_update(Some(&rs), 1, 2));
        assert!(!set_replicas(&mut rs, 1, 2));
        assert!(replicas_need_update(Some(&rs), 1, 3));
        assert_eq!(
            int_annotation(
                &ObjectMeta {
                    annotations: Some(rs),
                    ..ObjectMeta::default()
                },
                MAX_REPLICAS
            ),
            Some(2)
        );
    }

    #[test]
    fn replicas_annotations_parse_as_unsigned_32_bit_values_up_to_max_int32() {
        // Upstream getNonNegativeInt32FromAnnotation: ParseUint(v, 10, 32), at most MaxInt32.
        let with = |v: &str| ObjectMeta {
            annotations: Some(map(&[(MAX_REPLICAS, v)])),
            ..ObjectMeta::default()
        };
        for (v, want) in [
            ("5", Some(5)),
            ("007", Some(7)),
            ("0", Some(0)),
            ("2147483647", Some(i32::MAX)),
            ("2147483648", None),
            ("4294967296", None),
            ("-5", None),
            ("+5", None),
            ("", None),
            (" 5", None),
            ("5x", None),
        ] {
            assert_eq!(int_annotation(&with(v), MAX_REPLICAS), want, "{v:?}");
        }
    }

    #[test]
    fn rollback_takes_the_replica_sets_annotations_and_keeps_the_skipped_ones() {
        let d = map(&[("change-cause", "edit"), (REVISION, "2"), ("only-on-d", "x")]);
        let rs = map(&[
            ("change-cause", "create"),
            (REVISION, "1"),
            (DESIRED_REPLICAS, "3"),
        ]);
        assert_eq!(
            for_rollback(Some(&d), Some(&rs)),
            map(&[("change-cause", "create"), (REVISION, "2")])
        );
        let with = |v: &str| ObjectMeta {
            annotations: Some(map(&[(ROLLBACK_TO, v)])),
            ..ObjectMeta::default()
        };
        assert_eq!(rollback_to(&with("3")), Some(3));
        assert_eq!(rollback_to(&with("zz")), None, "invalid values are ignored");
        assert_eq!(rollback_to(&with("")), None);
    }
}
