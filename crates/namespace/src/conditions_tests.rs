//! The conditions' texts and their transitions, as upstream's `status_condition_utils_test.go` cases.

use super::*;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn find<'a>(status: &'a NamespaceStatus, type_: &str) -> &'a NamespaceCondition {
    status
        .conditions
        .as_ref()
        .and_then(|c| c.iter().find(|c| c.type_ == type_))
        .unwrap()
}

#[test]
fn nothing_wrong_writes_the_five_all_clear_conditions_once() {
    let mut status = NamespaceStatus::default();
    let now = at("2026-01-01T00:00:00Z");
    assert!(Findings::default().apply(&mut status, true, now));
    let types: Vec<_> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(types, CONDITION_TYPES.map(|(t, _, _)| t));
    let c = find(&status, "NamespaceContentRemaining");
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
        (
            "False",
            Some("ContentRemoved"),
            Some("All content successfully removed")
        )
    );
    assert!(!Findings::default().apply(&mut status, true, now), "unchanged");
}

#[test]
fn what_remains_is_counted_by_resource_and_by_finalizer() {
    let mut f = Findings::default();
    let finalizers = BTreeMap::from([("example.com/keep".to_owned(), 2)]);
    f.remaining("widgets", "example.com", 2, &finalizers);
    f.remaining(
        "pods",
        "",
        1,
        &BTreeMap::from([("example.com/keep".to_owned(), 1)]),
    );
    let mut status = NamespaceStatus::default();
    f.apply(&mut status, true, at("2026-01-01T00:00:00Z"));
    let c = find(&status, "NamespaceContentRemaining");
    assert_eq!(c.status, "True");
    assert_eq!(c.reason.as_deref(), Some("SomeResourcesRemain"));
    assert_eq!(
        c.message.as_deref(),
        Some(
            "Some resources are remaining: pods. has 1 resource instances, widgets.example.com has 2 resource instances"
        )
    );
    let c = find(&status, "NamespaceFinalizersRemaining");
    assert_eq!(
        c.message.as_deref(),
        Some(
            "Some content in the namespace has finalizers remaining: example.com/keep in 3 resource instances"
        )
    );
}

#[test]
fn without_totals_what_remains_reads_as_removed() {
    let mut f = Findings::default();
    f.remaining("pods", "", 3, &BTreeMap::new());
    let mut status = NamespaceStatus::default();
    f.apply(&mut status, false, at("2026-01-01T00:00:00Z"));
    assert_eq!(find(&status, "NamespaceContentRemaining").status, "False");
}

#[test]
fn discovery_and_content_failures_carry_the_errors_sorted() {
    let mut f = Findings::default();
    f.discovery_partial(
        1,
        "unable to retrieve the complete list of server APIs: a/v1: boom",
    );
    f.content_error("b failed".into());
    f.content_error("a failed".into());
    let mut status = NamespaceStatus::default();
    f.apply(&mut status, true, at("2026-01-01T00:00:00Z"));
    let c = find(&status, "NamespaceDeletionDiscoveryFailure");
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("True", Some("DiscoveryFailed"))
    );
    assert_eq!(
        c.message.as_deref(),
        Some(
            "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: a/v1: boom"
        )
    );
    let c = find(&status, "NamespaceDeletionContentFailure");
    assert_eq!(
        c.message.as_deref(),
        Some("Failed to delete all resource types, 2 remaining: a failed, b failed")
    );
}

#[test]
fn the_transition_time_moves_with_the_status_only() {
    let mut status = NamespaceStatus::default();
    let mut failing = Findings::default();
    failing.remaining("pods", "", 2, &BTreeMap::new());
    failing.apply(&mut status, true, at("2026-01-01T00:00:00Z"));
    let mut fewer = Findings::default();
    fewer.remaining("pods", "", 1, &BTreeMap::new());
    assert!(fewer.apply(&mut status, true, at("2026-01-01T00:00:05Z")));
    let c = find(&status, "NamespaceContentRemaining");
    assert_eq!(
        c.last_transition_time,
        Some(Time(at("2026-01-01T00:00:00Z"))),
        "still True"
    );
    assert!(Findings::default().apply(&mut status, true, at("2026-01-01T00:00:09Z")));
    let c = find(&status, "NamespaceContentRemaining");
    assert_eq!(
        (c.status.as_str(), c.last_transition_time.clone()),
        ("False", Some(Time(at("2026-01-01T00:00:09Z"))))
    );
}
