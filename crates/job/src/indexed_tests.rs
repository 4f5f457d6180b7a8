//! Cases after upstream's `indexed_job_utils_test.go`.

use super::*;
use crate::fixtures::{condition_rule, indexed, job, pod, policy, spec, status};

fn names(pods: &[Arc<Pod>]) -> Vec<String> {
    pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
}

#[test]
fn succeeded_indexes_add_only_pods_with_the_finalizer_and_a_valid_index() {
    let mut j = indexed(job(2, Some(6)));
    status(&mut j).completed_indexes = Some("0,2".into());
    let pods = vec![
        pod("a").index(1).succeeded().build(),
        pod("b").index(3).succeeded().no_finalizer().build(),
        pod("c").index(4).failed().build(),
        pod("d").index(9).succeeded().build(),
        pod("e").succeeded().build(),
        pod("f").index(5).succeeded().build(),
    ];
    let (prev, all) = succeeded_indexes(&j, &pods);
    assert_eq!(prev.to_string(), "0,2");
    assert_eq!(all.to_string(), "0-2,5");
}

#[test]
fn failed_indexes_after_backoff_limit_per_index_or_fail_index() {
    let mut j = indexed(job(2, Some(6)));
    spec(&mut j).backoff_limit_per_index = Some(1);
    status(&mut j).failed_indexes = Some("5".into());
    let pods = vec![
        pod("first-failure").index(0).failed().build(),
        pod("second-failure").index(1).failed().failure_count(1).build(),
        pod("running").index(2).running().failure_count(1).build(),
    ];
    assert_eq!(failed_indexes(&j, &pods).to_string(), "1,5");
    spec(&mut j).pod_failure_policy = policy(vec![condition_rule("FailIndex", "DisruptionTarget")]);
    spec(&mut j).pod_replacement_policy = Some("Failed".into());
    let disrupted = pod("disrupted")
        .index(3)
        .failed()
        .condition("DisruptionTarget")
        .build();
    assert!(
        is_index_failed(&j, &disrupted),
        "FailIndex fails the index at once"
    );
    spec(&mut j).pod_failure_policy = policy(vec![condition_rule("Ignore", "DisruptionTarget")]);
    let ignored = pod("ignored")
        .index(3)
        .failed()
        .failure_count(5)
        .condition("DisruptionTarget")
        .build();
    assert!(
        !is_index_failed(&j, &ignored),
        "ignored failures never fail the index"
    );
}

#[test]
fn first_pending_indexes_skip_non_pending_ones() {
    // From upstream's TestFirstPendingIndexes.
    let np = |s: &str| OrderedIntervals::parse(s, 100);
    assert_eq!(first_pending_indexes(3, 10, &np("")), vec![0, 1, 2]);
    assert_eq!(first_pending_indexes(0, 10, &np("")), Vec::<i32>::new());
    assert_eq!(first_pending_indexes(5, 10, &np("0,2,3,5")), vec![1, 4, 6, 7, 8]);
    assert_eq!(
        first_pending_indexes(5, 7, &np("0-4")),
        vec![5, 6],
        "bounded by completions"
    );
    assert_eq!(first_pending_indexes(5, 10, &np("1-3,5-8")), vec![0, 4, 9]);
    assert_eq!(first_pending_indexes(2, 5, &np("0-9")), Vec::<i32>::new());
}

/// A terminating pod may carry any index annotation the API server accepts, up to i32::MAX: the
/// interval ending there must not overflow (debug builds panic on it).
#[test]
fn first_pending_indexes_take_an_interval_ending_at_i32_max() {
    let np = OrderedIntervals::parse("0", 4).with_ordered_indexes(&[2, i32::MAX]);
    assert_eq!(first_pending_indexes(3, 4, &np), vec![1, 3]);
    let np = OrderedIntervals::parse("", 4).with_ordered_indexes(&[i32::MAX]);
    assert_eq!(first_pending_indexes(2, i32::MAX, &np), vec![0, 1]);
}

#[test]
fn duplicated_and_invalid_index_pods_are_removed_keeping_the_best() {
    let pods = vec![
        pod("no-index").running().build(),
        pod("a0-pending").index(0).build(),
        pod("a0-running").index(0).node("n").running().build(),
        pod("b1").index(1).running().build(),
        pod("out-of-range").index(5).running().build(),
        pod("c2-ready").index(2).node("n").ready().build(),
        pod("c2-running").index(2).node("n").running().build(),
    ];
    let (rm, left) = duplicated_index_pods(&pods, 5);
    let mut rm = names(&rm);
    rm.sort();
    assert_eq!(rm, ["a0-pending", "c2-running", "no-index", "out-of-range"]);
    assert_eq!(names(&left), ["a0-running", "b1", "c2-ready"]);
}

#[test]
fn generate_name_keeps_the_index_suffix_within_58_characters() {
    assert_eq!(generate_name_with_index("hello", 1), "hello-1-");
    let long = "a".repeat(60);
    let got = generate_name_with_index(&long, 12345);
    assert_eq!(got.len(), MAX_GENERATED_NAME_LENGTH);
    assert!(got.ends_with("a-12345-"));
    let exact = "b".repeat(55);
    assert_eq!(
        generate_name_with_index(&exact, 1),
        format!("{exact}-1-"),
        "exactly 58 is kept"
    );
}

#[test]
fn index_template_carries_annotation_label_hostname_env_and_counts() {
    let mut j = indexed(job(2, Some(4)));
    spec(&mut j).backoff_limit_per_index = Some(2);
    let mut base = j.spec.as_ref().unwrap().template.clone();
    add_completion_index_env(&mut base);
    add_completion_index_env(&mut base);
    let replaced = pod("old").index(3).failed().failure_count(1).build();
    let t = template_for_index(&j, &base, 3, Some(&replaced));
    let meta = t.metadata.as_ref().unwrap();
    assert_eq!(
        meta.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION],
        "3"
    );
    assert_eq!(meta.labels.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION], "3");
    assert_eq!(
        meta.annotations.as_ref().unwrap()[INDEX_FAILURE_COUNT_ANNOTATION],
        "2"
    );
    let spec = t.spec.as_ref().unwrap();
    assert_eq!(spec.hostname.as_deref(), Some("foobar-3"));
    let env = spec.containers[0].env.as_ref().unwrap();
    assert_eq!(env.len(), 1, "added once");
    assert_eq!(
        env[0]
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "metadata.labels['batch.kubernetes.io/job-completion-index']"
    );
}

#[test]
fn new_index_failure_counts_follow_the_policy() {
    let mut j = indexed(job(1, Some(1)));
    spec(&mut j).backoff_limit_per_index = Some(3);
    assert_eq!(new_index_failure_counts(&j, None), (0, 0));
    let p = pod("p")
        .index(0)
        .failed()
        .failure_count(1)
        .condition("DisruptionTarget")
        .build();
    assert_eq!(new_index_failure_counts(&j, Some(&p)), (2, 0));
    spec(&mut j).pod_failure_policy = policy(vec![condition_rule("Ignore", "DisruptionTarget")]);
    assert_eq!(new_index_failure_counts(&j, Some(&p)), (1, 1));
}

#[test]
fn delayed_deletion_keeps_the_latest_failed_pod_of_indexes_without_replacement() {
    let mut j = indexed(job(2, Some(4)));
    spec(&mut j).backoff_limit_per_index = Some(3);
    let pods = vec![
        pod("i0-first").index(0).failed().exit("main", 1, 5).build(),
        pod("i0-second")
            .index(0)
            .failed()
            .exit("main", 1, 9)
            .failure_count(1)
            .build(),
        pod("i1-failed").index(1).failed().exit("main", 1, 5).build(),
        pod("i1-active").index(1).running().failure_count(1).build(),
    ];
    let active: Vec<_> = pods
        .iter()
        .filter(|p| controller::pod_util::is_active(p))
        .cloned()
        .collect();
    let empty = OrderedIntervals::default();
    let got = pods_with_delayed_deletion(&j, &pods, &active, &empty, &empty, |p| {
        has_tracking_finalizer(&p.metadata)
    });
    assert_eq!(got.len(), 1);
    assert_eq!(got[&0].metadata.name.as_deref(), Some("i0-second"));
}
