//! Upstream `serviceaccounts_controller_test.go`'s cases: what a namespace in each phase, with and
//! without its account, gets.

use serde_json::json;

use super::*;

fn ns(phase: Option<&str>) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": "ns"}, "status": {"phase": phase}})).unwrap()
}

#[test]
fn an_active_namespace_without_its_account_gets_one() {
    assert_eq!(missing(&ns(Some("Active")), |_| false), ["default"]);
}

#[test]
fn an_account_already_there_is_left_alone() {
    assert!(missing(&ns(Some("Active")), |n| n == "default").is_empty());
}

#[test]
fn a_terminating_or_unadmitted_namespace_gets_nothing() {
    assert!(missing(&ns(Some("Terminating")), |_| false).is_empty());
    assert!(missing(&ns(None), |_| false).is_empty());
}
