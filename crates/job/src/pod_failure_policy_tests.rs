//! Cases from upstream's `TestMatchPodFailurePolicy`.

use super::*;
use crate::fixtures::{condition_rule, exit_code_rule, pod, policy};

fn m(rules: Vec<k8s_openapi::api::batch::v1::PodFailurePolicyRule>, p: &Pod) -> PolicyMatch {
    match_pod_failure_policy(policy(rules).as_ref(), p)
}

#[test]
fn no_policy_counts_the_failure() {
    let p = pod("a").failed().exit("main", 2, 1).build();
    assert_eq!(match_pod_failure_policy(None, &p), PolicyMatch::NO_MATCH);
}

#[test]
fn fail_job_on_exit_code_with_upstreams_message() {
    let p = pod("a").failed().exit("main", 42, 1).build();
    let r = m(vec![exit_code_rule("FailJob", "In", vec![1, 42], None)], &p);
    assert_eq!(r.action, Some(Action::FailJob));
    assert!(r.count_failed);
    assert_eq!(
        r.fail_job_message.as_deref(),
        Some("Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0")
    );
}

#[test]
fn ignore_does_not_count() {
    let p = pod("a").failed().exit("main", 5, 1).build();
    let r = m(vec![exit_code_rule("Ignore", "In", vec![5], None)], &p);
    assert_eq!((r.action, r.count_failed), (Some(Action::Ignore), false));
}

#[test]
fn not_in_matches_every_other_non_zero_code() {
    let p = pod("a").failed().exit("main", 3, 1).build();
    let rules = || vec![exit_code_rule("FailJob", "NotIn", vec![1, 2], None)];
    assert_eq!(m(rules(), &p).action, Some(Action::FailJob));
    let in_list = pod("a").failed().exit("main", 2, 1).build();
    assert_eq!(m(rules(), &in_list).action, None);
    let zero = pod("a").failed().exit("main", 0, 1).build();
    assert_eq!(m(rules(), &zero).action, None, "exit code 0 never matches");
}

#[test]
fn container_name_restricts_the_match_and_init_containers_come_second() {
    let p = pod("a").failed().exit("main", 42, 1).init_exit("init", 7).build();
    assert_eq!(
        m(vec![exit_code_rule("FailJob", "In", vec![42], Some("other"))], &p).action,
        None
    );
    assert_eq!(
        m(vec![exit_code_rule("Count", "In", vec![7], Some("init"))], &p).action,
        Some(Action::Count)
    );
    let r = m(vec![exit_code_rule("FailJob", "In", vec![7, 42], None)], &p);
    assert!(
        r.fail_job_message.unwrap().starts_with("Container main "),
        "main containers first"
    );
}

#[test]
fn first_matching_rule_wins() {
    let p = pod("a")
        .failed()
        .exit("main", 42, 1)
        .condition("DisruptionTarget")
        .build();
    let rules = vec![
        condition_rule("Ignore", "DisruptionTarget"),
        exit_code_rule("FailJob", "In", vec![42], None),
    ];
    assert_eq!(m(rules, &p).action, Some(Action::Ignore));
}

#[test]
fn pod_condition_fail_job_message_and_fail_index() {
    let p = pod("a").failed().condition("DisruptionTarget").build();
    let r = m(vec![condition_rule("FailJob", "DisruptionTarget")], &p);
    assert_eq!(
        r.fail_job_message.as_deref(),
        Some("Pod ns/a has condition DisruptionTarget matching FailJob rule at index 0")
    );
    let r = m(vec![condition_rule("FailIndex", "DisruptionTarget")], &p);
    assert_eq!((r.action, r.count_failed), (Some(Action::FailIndex), true));
    let other = pod("a").failed().condition("Ready").build();
    assert_eq!(
        m(vec![condition_rule("FailJob", "DisruptionTarget")], &other).action,
        None
    );
}

#[test]
fn unknown_action_is_skipped() {
    let p = pod("a").failed().exit("main", 42, 1).build();
    let rules = vec![
        exit_code_rule("Unknown", "In", vec![42], None),
        exit_code_rule("Count", "In", vec![42], None),
    ];
    assert_eq!(m(rules, &p).action, Some(Action::Count));
}
