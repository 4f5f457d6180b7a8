//! What leftovers mean and how long pods are given (upstream `namespaced_resources_deleter_test.go`'s
//! estimate cases).

use serde_json::json;

use super::*;

fn widgets() -> DiscoveredResource {
    DiscoveredResource {
        group: "example.com".into(),
        version: "v1".into(),
        resource: "widgets".into(),
        kind: "Widget".into(),
        verbs: vec!["delete".into(), "list".into()],
        namespaced: true,
    }
}

fn item(name: &str, finalizers: &[&str]) -> ObjectMeta {
    serde_json::from_value(json!({"name": name, "finalizers": finalizers})).unwrap()
}

fn pod(phase: &str, grace: Option<i64>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [], "terminationGracePeriodSeconds": grace},
        "status": {"phase": phase},
    }))
    .unwrap()
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn nothing_left_is_done() {
    assert_eq!(left_over(&[], 30, &widgets(), "ns"), Outcome::default());
}

#[test]
fn leftovers_with_finalizers_are_given_the_finalizer_estimate() {
    let items = [
        item("a", &["example.com/keep"]),
        item("b", &["example.com/keep", "x/y"]),
    ];
    let out = left_over(&items, 0, &widgets(), "ns");
    assert_eq!(out.error, None);
    assert_eq!(out.remaining.estimate, FINALIZER_ESTIMATE_SECONDS);
    assert_eq!(out.remaining.count, 2);
    assert_eq!(
        out.remaining.finalizers,
        BTreeMap::from([("example.com/keep".into(), 2), ("x/y".into(), 1)])
    );
}

#[test]
fn leftovers_within_a_grace_estimate_wait_for_it() {
    let out = left_over(&[item("a", &[])], 30, &widgets(), "ns");
    assert_eq!(
        (out.remaining.estimate, out.remaining.count, out.error),
        (30, 1, None)
    );
}

#[test]
fn leftovers_with_nothing_to_wait_for_are_an_error_naming_the_kind() {
    let out = left_over(&[item("a", &[])], 0, &widgets(), "ns");
    assert_eq!(
        out.error.as_deref(),
        Some("unexpected items still remain in namespace: ns for gvr: example.com/v1, Resource=widgets")
    );
    assert_eq!(out.remaining.count, 1);
}

#[test]
fn the_grace_estimate_is_the_longest_of_the_pods_still_running() {
    let pods = [
        pod("Running", Some(30)),
        pod("Pending", Some(45)),
        pod("Succeeded", Some(600)),
        pod("Failed", Some(600)),
        pod("Running", None),
    ];
    assert_eq!(grace_estimate(&pods), 45);
    assert_eq!(grace_estimate(&[]), 0);
}

#[test]
fn the_grace_estimate_lapses_once_it_has_passed_since_the_deletion() {
    let deleted = at("2026-01-01T00:00:00Z");
    assert_eq!(within_grace(30, deleted, at("2026-01-01T00:00:29.9Z")), 30);
    assert_eq!(within_grace(30, deleted, at("2026-01-01T00:00:30Z")), 0);
    assert_eq!(within_grace(0, deleted, deleted), 0);
}
