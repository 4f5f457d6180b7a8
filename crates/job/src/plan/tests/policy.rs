//! Cases after upstream's `TestSyncJobWithJobPodFailurePolicy`,
//! `TestSyncJobWithJobBackoffLimitPerIndex`, `TestSyncJobWithJobSuccessPolicy` and
//! `TestTrackJobStatusAndRemoveFinalizers` (the 500-pod cap, uncounted UIDs), run through the whole
//! plan assuming every write succeeds.

use k8s_openapi::api::batch::v1::{SuccessPolicy, SuccessPolicyRule, UncountedTerminatedPods};

use super::{support::*, *};
use crate::{
    fixtures::*,
    plan::{pods::MAX_POD_CREATE_DELETE_PER_SYNC, tracking::MAX_UNCOUNTED_PODS},
};

#[test]
fn pod_failure_policy_fail_job_with_the_rule_message() {
    let mut j = job(2, Some(2));
    spec(&mut j).pod_failure_policy = policy(vec![exit_code_rule("FailJob", "In", vec![42], None)]);
    let pods = vec![
        pod("a").failed().exit("main", 42, 5).build(),
        pod("b").node("n").running().build(),
    ];
    let p = full(&j, &pods);
    let ft = p
        .status
        .status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "FailureTarget")
        .unwrap();
    assert_eq!(ft.reason.as_deref(), Some("PodFailurePolicy"));
    assert_eq!(
        ft.message.as_deref(),
        Some("Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0")
    );
    assert_eq!(deleted(&p), ["b"]);
    assert_eq!(
        p.status
            .policy_actions
            .get(&crate::pod_failure_policy::Action::FailJob),
        Some(&1)
    );
}

#[test]
fn pod_failure_policy_ignore_does_not_count_and_waits_for_failed_phase() {
    let mut j = job(1, Some(1));
    spec(&mut j).backoff_limit = Some(0);
    spec(&mut j).pod_failure_policy = policy(vec![condition_rule("Ignore", "DisruptionTarget")]);
    let pods = vec![pod("a").failed().condition("DisruptionTarget").build()];
    let p = full(&j, &pods);
    assert!(p.sync.finished.is_none());
    assert_eq!(after(&p).status.failed, None);
    assert_eq!(p.status.remove_finalizers.len(), 1);
    assert_eq!(
        creates(&p),
        1,
        "replaced at once: ignored failures have no backoff"
    );
    let terminating = vec![pod("t").node("n").running().deleting().build()];
    let p = full(&j, &terminating);
    assert_eq!(
        creates(&p),
        0,
        "with a policy, a terminating pod is replaced only once Failed"
    );
    assert_eq!(p.status.status.terminating, Some(1));
}

#[test]
fn pod_replacement_policy_terminating_or_failed_counts_deleted_pods_as_failed() {
    let j = job(1, Some(1));
    let p = full(&j, &[pod("t").node("n").running().deleting().build()]);
    assert_eq!(creates(&p), 1);
    assert_eq!(after(&p).status.failed, Some(1));
    let mut failed_only = job(1, Some(1));
    spec(&mut failed_only).pod_replacement_policy = Some("Failed".into());
    let p = full(&failed_only, &[pod("t").node("n").running().deleting().build()]);
    assert_eq!(creates(&p), 0);
    assert!(p.status.remove_finalizers.is_empty());
}

#[test]
fn backoff_limit_per_index_fails_indexes_and_max_failed_indexes_fails_the_job() {
    let mut j = indexed(job(2, Some(4)));
    spec(&mut j).backoff_limit_per_index = Some(1);
    spec(&mut j).max_failed_indexes = Some(1);
    let pods = vec![
        pod("i0-again").index(0).failed().failure_count(1).build(),
        pod("i1").index(1).node("n").running().build(),
    ];
    let p = full(&j, &pods);
    assert_eq!(p.status.status.failed_indexes.as_deref(), Some("0"));
    assert!(p.sync.finished.is_none());
    let PodAction::Create(c) = &p.sync.action else {
        panic!()
    };
    assert_eq!(c.indexes, vec![2], "failed indexes are not retried");
    let pods = vec![
        pod("i0").index(0).failed().failure_count(1).build(),
        pod("i1").index(1).failed().failure_count(1).build(),
    ];
    let p = full(&j, &pods);
    assert_eq!(
        cond(&p.status.status, "FailureTarget"),
        Some(("True".into(), "MaxFailedIndexesExceeded".into()))
    );
    // A first failure is retried with the count carried over and a per-index backoff.
    let pods = vec![pod("i0").index(0).failed().exit("main", 1, NOW).build()];
    let p = full(&j, &pods);
    assert!(
        p.status.remove_finalizers.is_empty(),
        "kept until its replacement exists"
    );
    let PodAction::Create(c) = &p.sync.action else {
        panic!()
    };
    assert_eq!(c.indexes, vec![1], "index 0 waits out its backoff");
}

/// Upstream's "replacement pod creation delayed by per-index backoff while another index runs": the
/// status keeps the running index as active (0 beside a Ready pod is refused by the API server).
#[test]
fn a_per_index_backoff_beside_a_ready_index_keeps_the_active_count() {
    let mut j = indexed(job(2, Some(2)));
    spec(&mut j).backoff_limit_per_index = Some(1);
    let pods = vec![
        pod("i0").index(0).node("n").running().ready().build(),
        pod("i1").index(1).failed().exit("main", 1, NOW).build(),
    ];
    let p = full(&j, &pods);
    assert_eq!(creates(&p), 0, "index 1 waits out its backoff");
    assert!(p.sync.requeue_after.is_some());
    let s = &p.status.status;
    assert_eq!((s.active, s.ready), (Some(1), Some(1)));
    assert!(
        p.status.remove_finalizers.is_empty(),
        "the failed pod is kept, uncounted, until its replacement exists"
    );
}

#[test]
fn success_policy_meets_criteria_on_listed_indexes() {
    let mut j = indexed(job(3, Some(3)));
    spec(&mut j).success_policy = Some(SuccessPolicy {
        rules: vec![SuccessPolicyRule {
            succeeded_indexes: Some("0,2".into()),
            succeeded_count: None,
        }],
    });
    let pods = vec![
        pod("a").index(0).succeeded().build(),
        pod("b").index(1).node("n").running().build(),
        pod("c").index(2).succeeded().build(),
    ];
    let p = full(&j, &pods);
    assert_eq!(
        cond(&p.status.status, "SuccessCriteriaMet"),
        Some(("True".into(), "SuccessPolicy".into()))
    );
    assert_eq!(deleted(&p), ["b"]);
    let a = after(&p);
    assert!(a.finished.is_none(), "b is terminating");
    let mut j2 = j.clone();
    *status(&mut j2) = a.status;
    let a = after(&full(&j2, &[]));
    assert_eq!(
        cond(&a.status, "Complete"),
        Some(("True".into(), "SuccessPolicy".into()))
    );
    assert_eq!(a.status.completed_indexes.as_deref(), Some("0,2"));
}

#[test]
fn at_most_500_pods_are_counted_and_unfinalized_per_sync() {
    let j = job(1, Some(1000));
    let pods: Vec<Arc<Pod>> = (0..600)
        .map(|i| pod(&format!("s{i}")).succeeded().build())
        .collect();
    let p = full(&j, &pods);
    assert_eq!(p.status.remove_finalizers.len(), MAX_UNCOUNTED_PODS);
    assert!(p.status.reached_max_uncounted);
    let many = job(1000, Some(1000));
    assert_eq!(creates(&full(&many, &[])), MAX_POD_CREATE_DELETE_PER_SYNC);
}

#[test]
fn uncounted_pods_without_finalizer_move_to_the_counters() {
    let mut j = job(1, Some(3));
    status(&mut j).uncounted_terminated_pods = Some(UncountedTerminatedPods {
        succeeded: Some(vec!["uid-gone".into(), "uid-kept".into()]),
        failed: Some(vec!["uid-f".into()]),
    });
    status(&mut j).succeeded = Some(1);
    let pods = vec![
        pod("kept").succeeded().build(),
        pod("f").failed().no_finalizer().build(),
    ];
    let p = full(&j, &pods);
    let a = after(&p);
    assert_eq!((a.status.succeeded, a.status.failed), (Some(3), Some(1)));
    assert!(
        a.status
            .uncounted_terminated_pods
            .as_ref()
            .unwrap()
            .succeeded
            .is_none()
    );
}

/// A test's shorter waits (`JobDelays`, as upstream's integration tests set them) change when pods
/// are re-created, never what is decided: the same pods wait, for the test's backoff, and no sync
/// comes sooner than its batch period.
#[test]
fn a_test_s_delays_shorten_only_the_waits() {
    let fast = crate::JobDelays::new(
        Duration::from_secs(3),
        Duration::from_secs(5),
        Duration::from_secs(2),
    )
    .unwrap();
    let plan = |j: &Job, pods: &[Arc<Pod>], delays| {
        let none = std::collections::HashSet::new();
        let input = SyncInput {
            delays,
            ..input(j, pods, &none)
        };
        match plan_sync(&input).unwrap() {
            Decision::Sync(p) => *p,
            other => panic!("not synced: {other:?}"),
        }
    };
    // One failure a second ago: upstream waits 10 s from it, the test 3 s, and the requeue is
    // raised to the batch period once less than that is left.
    let j = job(1, Some(3));
    let failed = |at| vec![pod("f").failed().exit("main", 1, at).build()];
    let upstream = plan(&j, &failed(NOW - 1), crate::JobDelays::UPSTREAM);
    let test = plan(&j, &failed(NOW - 1), fast);
    assert_eq!((creates(&upstream), creates(&test)), (0, 0));
    assert_eq!(upstream.sync.requeue_after, Some(Duration::from_secs(9)));
    assert_eq!(test.sync.requeue_after, Some(Duration::from_secs(2)));
    let test = plan(&j, &failed(NOW - 2), fast);
    assert_eq!(
        test.sync.requeue_after,
        Some(Duration::from_secs(2)),
        "1 s left, raised to the batch period"
    );
    assert_eq!(
        creates(&plan(&j, &failed(NOW - 3), fast)),
        1,
        "the test's backoff is over"
    );
    // Per index: the second failure of index 0 waits the doubled step, capped at 5 s.
    let mut j = indexed(job(1, Some(3)));
    spec(&mut j).backoff_limit_per_index = Some(3);
    let pods = vec![
        pod("i0")
            .index(0)
            .failed()
            .failure_count(1)
            .exit("main", 1, NOW)
            .build(),
    ];
    assert_eq!(
        plan(&j, &pods, fast).sync.requeue_after,
        Some(Duration::from_secs(5))
    );
    assert_eq!(
        plan(&j, &pods, crate::JobDelays::UPSTREAM).sync.requeue_after,
        Some(Duration::from_secs(20))
    );
}
