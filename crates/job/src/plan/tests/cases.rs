//! Cases after upstream's `TestControllerSyncJob` (counting, manageJob, finishing, suspend,
//! Indexed) and `TestSyncJobPastDeadline`, run through the whole plan assuming every write
//! succeeds. The table ported row by row is `plan::tests::table`.

use std::collections::HashSet;

use super::{support::*, *};
use crate::fixtures::*;

#[test]
fn job_start_creates_parallelism_pods_and_sets_start_time() {
    let j = job(2, Some(5));
    let p = full(&j, &[]);
    assert_eq!(creates(&p), 2);
    let PodAction::Create(c) = &p.sync.action else {
        unreachable!()
    };
    assert!(
        c.template
            .metadata
            .as_ref()
            .unwrap()
            .finalizers
            .as_ref()
            .unwrap()
            .contains(&JOB_TRACKING_FINALIZER.to_owned())
    );
    assert!(p.status.flush_first);
    assert_eq!(
        (
            p.status.status.active,
            p.status.status.ready,
            p.status.status.terminating
        ),
        (Some(2), Some(0), Some(0))
    );
    assert_eq!(p.status.status.start_time.as_ref().map(|t| t.0), Some(ts(NOW)));
    assert_eq!(p.sync.metrics_action, crate::metrics::ACTION_PODS_CREATED);
}

#[test]
fn too_many_pods_deletes_the_earliest_stage_first() {
    let j = job(2, Some(5));
    let mut pods = running(2);
    pods.push(pod("pending").build());
    let p = full(&j, &pods);
    assert_eq!(deleted(&p), ["pending"]);
    assert_eq!(p.status.status.active, Some(2));
    assert_eq!(p.status.status.terminating, Some(1));
}

#[test]
fn no_writes_while_expectations_are_pending() {
    let j = job(2, Some(5));
    let none = HashSet::new();
    let mut i = input(&j, &[], &none);
    i.expectations_satisfied = false;
    let Decision::Sync(p) = plan_pods(&i).unwrap() else {
        panic!()
    };
    assert!(matches!(p.action, PodAction::None));
    assert!(!p.manage_called);
}

#[test]
fn completions_reached_interim_then_complete() {
    let j = job(2, Some(2));
    let pods = vec![pod("a").succeeded().build(), pod("b").succeeded().build()];
    let p = full(&j, &pods);
    assert_eq!(p.status.remove_finalizers.len(), 2);
    assert_eq!(
        p.status
            .status
            .uncounted_terminated_pods
            .as_ref()
            .unwrap()
            .succeeded
            .as_ref()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        cond(&p.status.status, "SuccessCriteriaMet"),
        Some(("True".into(), "CompletionsReached".into()))
    );
    assert_eq!(
        cond(&p.status.status, "Complete"),
        None,
        "not before the pods are counted"
    );
    let a = after(&p);
    assert_eq!(a.status.succeeded, Some(2));
    assert_eq!(
        cond(&a.status, "Complete"),
        Some(("True".into(), "CompletionsReached".into()))
    );
    assert!(a.status.completion_time.is_some());
    let events = crate::plan::finished_events(Some(2), 2, a.finished.as_ref().unwrap());
    assert_eq!(events[0].reason, "Completed");
}

#[test]
fn work_queue_mode_waits_for_the_active_pods_after_a_success() {
    let j = job(2, None);
    let pods = vec![pod("a").succeeded().build(), pod("b").node("n").running().build()];
    let p = full(&j, &pods);
    assert_eq!(creates(&p), 0, "no new pods after a success");
    assert!(after(&p).finished.is_none());
    let pods = vec![pod("a").succeeded().build()];
    assert!(after(&full(&j, &pods)).finished.is_some());
    assert_eq!(creates(&full(&j, &[])), 2, "parallelism before any success");
}

#[test]
fn backoff_limit_exceeded_fails_after_the_active_pods_terminate() {
    let mut j = job(2, Some(5));
    spec(&mut j).backoff_limit = Some(2);
    let mut pods: Vec<Arc<Pod>> = (0..3).map(|i| pod(&format!("f{i}")).failed().build()).collect();
    pods.push(pod("live").node("n").running().build());
    let p = full(&j, &pods);
    assert_eq!(deleted(&p), ["live"]);
    assert_eq!(
        cond(&p.status.status, "FailureTarget"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    assert_eq!(
        p.status.remove_finalizers.len(),
        4,
        "the deleted pod is counted as failed too"
    );
    let a = after(&p);
    assert_eq!(a.status.failed, Some(4));
    assert!(a.finished.is_none(), "a pod is still terminating");
    // Next sync: the FailureTarget is there and nothing terminates: Failed with the same reason.
    let mut j2 = j.clone();
    *status(&mut j2) = a.status;
    let p = full(&j2, &[]);
    let a = after(&p);
    assert_eq!(
        cond(&a.status, "Failed"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    assert!(
        a.status.completion_time.is_none(),
        "completionTime only on success"
    );
}

#[test]
fn on_failure_restarts_count_toward_the_backoff_limit() {
    let mut j = job(1, Some(1));
    spec(&mut j).backoff_limit = Some(3);
    spec(&mut j).template.spec.as_mut().unwrap().restart_policy = Some("OnFailure".into());
    let p = full(&j, &[pod("a").node("n").running().restarts(2).build()]);
    assert!(p.sync.finished.is_none());
    let p = full(&j, &[pod("a").node("n").running().restarts(3).build()]);
    assert_eq!(
        p.sync.finished.as_ref().unwrap().reason.as_deref(),
        Some("BackoffLimitExceeded")
    );
}

/// restartCount is not validated: upstream's int32 sum of them wraps, so two pods at i32::MAX sum to
/// -2, under the limit, and the Job goes on.
#[test]
fn on_failure_restarts_sum_as_upstreams_int32() {
    let mut j = job(2, Some(2));
    spec(&mut j).backoff_limit = Some(3);
    spec(&mut j).template.spec.as_mut().unwrap().restart_policy = Some("OnFailure".into());
    let pods = ["a", "b"].map(|n| pod(n).node("n").running().restarts(i32::MAX).build());
    assert!(full(&j, &pods).sync.finished.is_none());
}

/// A succeeded count past i32::MAX wraps (`tracking::counts_past_i32_max_wrap_as_upstreams_do`); the
/// pods still wanted are then upstream's clamp of the wrapped difference, not a panic.
#[test]
fn a_wrapped_succeeded_count_wants_no_pods() {
    let mut j = job(2, Some(5));
    j.status.get_or_insert_default().succeeded = Some(i32::MAX);
    let pods = [pod("s").succeeded().build()];
    let p = full(&j, &pods);
    assert_eq!(p.sync.succeeded, i32::MIN);
    assert_eq!(creates(&p), 0);
}

#[test]
fn re_creation_waits_out_the_pod_failure_backoff() {
    let j = job(1, Some(3));
    let pods = vec![pod("f").failed().exit("main", 1, NOW - 2).build()];
    let p = full(&j, &pods);
    assert_eq!(creates(&p), 0);
    assert_eq!(p.sync.requeue_after, Some(Duration::from_secs(8)));
    assert_eq!(p.status.status.active, Some(0), "no pod runs");
    let pods = vec![
        pod("r").node("n").running().ready().build(),
        pod("f").failed().exit("main", 1, NOW - 2).build(),
    ];
    let p = full(&job(2, Some(3)), &pods);
    assert_eq!(creates(&p), 0);
    let s = &after(&p).status;
    assert_eq!(
        (s.active, s.ready, s.failed),
        (Some(1), Some(1), Some(1)),
        "the running pod stays active while the failed one is counted"
    );
}

/// Upstream's allowance is `time.Duration(ads) * time.Second` in 64-bit nanoseconds: from
/// 9223372037 s it wraps, and int64's maximum (a common "infinite" value) fails the Job at once.
/// kcm-rs computes the same allowance (`plan::finishing::deadline_left`).
#[test]
fn a_huge_active_deadline_wraps_as_upstreams_duration_does() {
    let mut j = job(1, Some(1));
    status(&mut j).start_time = Some(Time(ts(0)));
    spec(&mut j).active_deadline_seconds = Some(i64::MAX);
    let p = full(&j, &running(1));
    assert_eq!(
        cond(&p.status.status, "FailureTarget"),
        Some(("True".into(), "DeadlineExceeded".into()))
    );
    spec(&mut j).active_deadline_seconds = Some(9_223_372_036);
    let p = full(&j, &running(1));
    assert_eq!(
        cond(&p.status.status, "FailureTarget"),
        None,
        "the largest that does not wrap"
    );
    assert!(
        p.sync
            .requeue_after
            .is_some_and(|d| d > Duration::from_secs(9_000_000_000))
    );
}

#[test]
fn active_deadline_exceeded_and_requeue_before_it() {
    let mut j = job(1, Some(1));
    spec(&mut j).active_deadline_seconds = Some(10);
    status(&mut j).start_time = Some(Time(ts(0)));
    let p = full(&j, &running(1));
    assert_eq!(
        cond(&p.status.status, "FailureTarget"),
        Some(("True".into(), "DeadlineExceeded".into()))
    );
    spec(&mut j).active_deadline_seconds = Some(130);
    let p = full(&j, &running(1));
    assert_eq!(p.sync.requeue_after, Some(Duration::from_secs(30)));
    spec(&mut j).suspend = Some(true);
    spec(&mut j).active_deadline_seconds = Some(10);
    assert!(
        full(&j, &running(1)).sync.finished.is_none(),
        "never while suspended"
    );
}

#[test]
fn suspend_deletes_active_pods_clears_start_time_and_resume_resets_it() {
    let mut j = job(2, Some(4));
    spec(&mut j).suspend = Some(true);
    status(&mut j).start_time = Some(Time(ts(1)));
    let p = full(&j, &running(2));
    assert_eq!(deleted(&p).len(), 2);
    assert!(matches!(p.sync.action, PodAction::RemoveFinalizerThenDelete(_)));
    assert_eq!(
        cond(&p.status.status, "Suspended"),
        Some(("True".into(), "JobSuspended".into()))
    );
    assert_eq!(p.status.events[0].reason, "Suspended");
    assert!(
        p.status.status.start_time.is_none(),
        "suspending clears startTime (MutableSchedulingDirectivesForSuspendedJobs, on in 1.36)"
    );
    let none = HashSet::new();
    let pods = running(2);
    let gate_off = SyncInput {
        suspend_clears_start_time: false,
        ..input(&j, &pods, &none)
    };
    let Decision::Sync(off) = plan_sync(&gate_off).unwrap() else {
        panic!("not synced")
    };
    assert_eq!(
        off.status.status.start_time.as_ref().map(|t| t.0),
        Some(ts(1)),
        "with the gate off startTime stays"
    );
    let mut resumed = j.clone();
    *status(&mut resumed) = p.status.status.clone();
    spec(&mut resumed).suspend = Some(false);
    let p = full(&resumed, &[]);
    assert_eq!(
        cond(&p.status.status, "Suspended"),
        Some(("False".into(), "JobResumed".into()))
    );
    assert_eq!(p.status.events[0].reason, "Resumed");
    assert_eq!(p.status.status.start_time.as_ref().map(|t| t.0), Some(ts(NOW)));
    assert_eq!(creates(&p), 2);
    let mut never = job(2, Some(4));
    spec(&mut never).suspend = Some(true);
    let p = full(&never, &[]);
    assert!(
        p.status.status.start_time.is_none(),
        "a Job created suspended has no startTime"
    );
}

#[test]
fn indexed_creates_the_lowest_pending_indexes() {
    let j = indexed(job(3, Some(5)));
    let pods = vec![
        pod("a").index(0).succeeded().build(),
        pod("b").index(2).node("n").running().build(),
    ];
    let p = full(&j, &pods);
    let PodAction::Create(c) = &p.sync.action else {
        panic!("{:?}", p.sync.action)
    };
    assert_eq!(c.indexes, vec![1, 3]);
    let (t, name) = c.pod(&p.sync, 0);
    assert_eq!(name.as_deref(), Some("foobar-1-"));
    assert_eq!(t.spec.as_ref().unwrap().hostname.as_deref(), Some("foobar-1"));
    assert_eq!(p.status.status.completed_indexes.as_deref(), Some("0"));
    assert_eq!(p.status.status.succeeded, Some(1));
    assert!(
        p.status
            .status
            .uncounted_terminated_pods
            .as_ref()
            .unwrap()
            .succeeded
            .is_none(),
        "indexes need no UIDs"
    );
}

#[test]
fn indexed_removes_duplicates_and_out_of_range_indexes_before_creating() {
    let j = indexed(job(3, Some(3)));
    let pods = vec![
        pod("a").index(0).node("n").running().build(),
        pod("a-dup").index(0).build(),
        pod("far").index(7).node("n").running().build(),
    ];
    let p = full(&j, &pods);
    let mut d = deleted(&p);
    d.sort();
    assert_eq!(d, ["a-dup", "far"]);
    assert_eq!(creates(&p), 0, "never create and delete in one sync");
}

#[test]
fn entry_checks_skip_external_finished_and_unknown_mode_jobs() {
    let none = HashSet::new();
    let mut j = job(1, Some(1));
    spec(&mut j).managed_by = Some("example.com/other".into());
    assert!(
        matches!(plan_sync(&input(&j, &[], &none)).unwrap(), Decision::ManagedExternally(n) if n == "example.com/other")
    );
    spec(&mut j).managed_by = Some(crate::spec::JOB_CONTROLLER_NAME.into());
    spec(&mut j).completion_mode = Some("Odd".into());
    assert!(matches!(
        plan_sync(&input(&j, &[], &none)).unwrap(),
        Decision::UnknownCompletionMode
    ));
    spec(&mut j).completion_mode = None;
    status(&mut j).conditions = Some(vec![new_condition(COMPLETE, "True", "", "", ts(1))]);
    assert!(matches!(
        plan_sync(&input(&j, &[], &none)).unwrap(),
        Decision::Finished
    ));
}

#[test]
fn adoption_adds_the_finalizer_and_foreign_pods_are_left_alone() {
    let j = job(1, Some(1));
    let pods = vec![
        pod("orphan").orphan().no_finalizer().node("n").running().build(),
        {
            let mut p = (*pod("theirs").node("n").running().build()).clone();
            p.metadata.owner_references.as_mut().unwrap()[0].uid = "other".into();
            Arc::new(p)
        },
    ];
    let p = full(&j, &pods);
    assert_eq!(p.sync.claims.adopt.len(), 1);
    assert!(has_tracking_finalizer(&p.sync.pods[0].metadata));
    assert_eq!(p.sync.pods.len(), 1);
    assert_eq!(creates(&p), 0);
}
