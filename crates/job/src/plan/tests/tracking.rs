//! Upstream's `TestTrackJobStatusAndRemoveFinalizers`, row by row: given the pods, the status and a
//! finishing condition, which finalizers go, what the first status write holds (the flush of
//! uncounted UIDs) and what the status becomes once the removals are done (or failed).

use std::collections::HashSet;

use k8s_openapi::{
    api::batch::v1::{Job, JobCondition, UncountedTerminatedPods},
    apimachinery::pkg::apis::meta::v1::Time,
};

use super::*;
use crate::{
    backoff::BackoffRecord,
    fixtures::{PodB, job, pod, status, ts},
    plan::{
        Decision, SyncInput, plan_pods, state::StatusDraft, status_after_removal,
        tracking::track as plan_tracking,
    },
};

const NOW: i64 = 100;

/// The plan's tracking half for `j` over `pods`, with `finished` as the finishing condition and
/// `expected` finalizer removals in flight.
fn track(j: &Job, pods: Vec<PodB>, finished: Option<JobCondition>, expected: &[&str]) -> StatusPlan {
    let pods: Vec<Arc<Pod>> = pods.into_iter().map(PodB::build).collect();
    let expected: HashSet<String> = expected.iter().map(|u| format!("uid-{u}")).collect();
    let input = SyncInput {
        job: j,
        candidates: &pods,
        // No pod writes: this is the tracking half alone.
        expectations_satisfied: false,
        expected_rm_finalizers: &expected,
        backoff: BackoffRecord::default(),
        now: ts(NOW),
        suspend_clears_start_time: true,
        delays: crate::JobDelays::UPSTREAM,
    };
    let Decision::Sync(plan) = plan_pods(&input).unwrap() else {
        panic!("not synced")
    };
    let draft = StatusDraft {
        job: plan.job.clone(),
        finished,
        terminating: plan.terminating,
        needs_flush: false,
        events: Vec::new(),
    };
    plan_tracking(&plan, draft)
}

fn uncounted(succeeded: &[&str], failed: &[&str]) -> Option<UncountedTerminatedPods> {
    let uids = |l: &[&str]| (!l.is_empty()).then(|| l.iter().map(|u| format!("uid-{u}")).collect());
    Some(UncountedTerminatedPods {
        succeeded: uids(succeeded),
        failed: uids(failed),
    })
}

fn sorted(u: &Option<UncountedTerminatedPods>) -> (Vec<String>, Vec<String>) {
    let u = u.clone().unwrap_or_default();
    let (mut s, mut f) = (u.succeeded.unwrap_or_default(), u.failed.unwrap_or_default());
    s.sort();
    f.sort();
    (s, f)
}

/// The status once every removal succeeded.
fn after_all(sp: &StatusPlan) -> JobStatus {
    let removed = sp
        .remove_finalizers
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    status_after_removal(sp, &removed, false, ts(NOW)).status
}

fn with_status(mut j: Job, s: i32, f: i32, u: Option<UncountedTerminatedPods>) -> Job {
    let st = status(&mut j);
    (st.succeeded, st.failed) = (Some(s), Some(f));
    st.uncounted_terminated_pods = u;
    j
}

#[test]
fn track_finished_pods() {
    let pods = vec![
        pod("a").succeeded(),
        pod("b").failed(),
        pod("c").succeeded().deleting(),
        pod("d").failed().deleting(),
        pod("e").deleting(),
        pod("p"),
        pod("r").node("n").running(),
    ];
    let sp = track(&job(1, None), pods, None, &[]);
    assert_eq!(sp.remove_finalizers.len(), 5);
    assert!(sp.flush_first);
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&["a", "c"], &["b", "d", "e"]))
    );
    let a = after_all(&sp);
    assert_eq!((a.succeeded, a.failed), (Some(2), Some(3)));
    assert_eq!(sorted(&a.uncounted_terminated_pods), (vec![], vec![]));
}

#[test]
fn past_and_new_finished_pods() {
    let j = with_status(job(1, None), 2, 3, uncounted(&["a", "e"], &["b", "f"]));
    let pods = vec![
        pod("e").succeeded().no_finalizer(),
        pod("x").failed().no_finalizer(),
        pod("y").no_finalizer(),
        pod("a").succeeded(),
        pod("b").failed(),
        pod("c").succeeded(),
        pod("d").failed(),
    ];
    let sp = track(&j, pods, None, &[]);
    assert_eq!(sp.remove_finalizers.len(), 4);
    assert_eq!(
        (sp.status.succeeded, sp.status.failed),
        (Some(3), Some(4)),
        "e and f counted at once"
    );
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&["a", "c"], &["b", "d"]))
    );
    let a = after_all(&sp);
    assert_eq!((a.succeeded, a.failed), (Some(5), Some(6)));
}

/// The API server takes any count >= 0 in a status write. Past i32::MAX, upstream's int32 sums wrap
/// (and its write is refused); a debug build must not panic on them either.
#[test]
fn counts_past_i32_max_wrap_as_upstreams_do() {
    let j = with_status(job(1, None), i32::MAX, i32::MAX, uncounted(&["e"], &["f"]));
    let pods = vec![
        pod("e").succeeded().no_finalizer(),
        pod("a").succeeded(),
        pod("b").failed(),
    ];
    let sp = track(&j, pods, None, &[]);
    assert_eq!(
        (sp.status.succeeded, sp.status.failed),
        (Some(i32::MIN), Some(i32::MIN))
    );
}

#[test]
fn expecting_removed_finalizers() {
    let j = with_status(job(1, None), 2, 3, uncounted(&["a", "g"], &["b", "h"]));
    let pods = ["a", "c", "e", "g"]
        .map(|n| pod(n).succeeded())
        .into_iter()
        .chain(["b", "d", "f", "h"].map(|n| pod(n).failed()))
        .collect();
    let sp = track(&j, pods, None, &["c", "d", "g", "h"]);
    let mut rm: Vec<String> = sp
        .remove_finalizers
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    rm.sort();
    assert_eq!(rm, ["a", "b", "e", "f"], "removals in flight are not asked again");
    assert_eq!((sp.status.succeeded, sp.status.failed), (Some(3), Some(4)));
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&["a", "e"], &["b", "f"]))
    );
    let a = after_all(&sp);
    assert_eq!((a.succeeded, a.failed), (Some(5), Some(6)));
}

#[test]
fn succeeding_job_by_success_criteria_keeps_pending_pods_uncounted() {
    let scm = new_condition(
        SUCCESS_CRITERIA_MET,
        "True",
        REASON_SUCCESS_POLICY,
        "m",
        ts(NOW - 60),
    );
    let pods = vec![pod("a").succeeded(), pod("b").failed(), pod("c")];
    let sp = track(&job(1, None), pods, Some(scm), &[]);
    assert_eq!(sp.remove_finalizers.len(), 3);
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&["a"], &["b"]))
    );
    let types: Vec<&str> = sp
        .status
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(types, [SUCCESS_CRITERIA_MET], "the interim condition goes first");
    let a = after_all(&sp);
    assert_eq!((a.succeeded, a.failed), (Some(1), Some(1)));
    let types: Vec<&str> = a.conditions.iter().flatten().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, [SUCCESS_CRITERIA_MET, COMPLETE]);
    assert_eq!(a.completion_time, Some(Time(ts(NOW))));
    // The removals took two seconds: the condition is stamped when written, completionTime keeps
    // the time the Complete condition was prepared (upstream `enactJobFinished`).
    let removed = sp
        .remove_finalizers
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    let later = status_after_removal(&sp, &removed, false, ts(NOW + 2)).status;
    let complete = later.conditions.iter().flatten().find(|c| c.type_ == COMPLETE);
    assert_eq!(complete.unwrap().last_transition_time, Some(Time(ts(NOW + 2))));
    assert_eq!(later.completion_time, Some(Time(ts(NOW))));
}

#[test]
fn failing_job_counts_running_pods_as_failed() {
    let failed = new_condition(FAILED, "True", REASON_BACKOFF_LIMIT_EXCEEDED, "m", ts(NOW));
    let pods = vec![
        pod("a").succeeded(),
        pod("b").failed(),
        pod("c").node("n").running(),
    ];
    let sp = track(&job(1, None), pods, Some(failed), &[]);
    assert_eq!(sp.remove_finalizers.len(), 3);
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&["a"], &["b", "c"]))
    );
    let a = after_all(&sp);
    assert_eq!((a.succeeded, a.failed), (Some(1), Some(2)));
    assert!(a.conditions.iter().flatten().any(|c| c.type_ == FAILED));
    assert_eq!(a.completion_time, None);
}

#[test]
fn deleted_job_unfinalizes_running_pods_without_counting_them() {
    let mut j = job(1, None);
    j.metadata.deletion_timestamp = Some(Time(ts(1)));
    let pods = vec![
        pod("a").succeeded(),
        pod("b").failed(),
        pod("r").node("n").running(),
    ];
    let sp = track(&j, pods, None, &[]);
    assert_eq!(sp.remove_finalizers.len(), 3);
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&["a"], &["b"]))
    );
    let a = after_all(&sp);
    assert_eq!((a.succeeded, a.failed), (Some(1), Some(1)));
}

#[test]
fn pod_patch_errors_with_partial_success_keep_the_new_uids() {
    let j = with_status(job(1, None), 0, 0, uncounted(&["a"], &["b"]));
    let pods = vec![
        pod("a").succeeded().no_finalizer(),
        pod("c").succeeded(),
        pod("d").failed(),
    ];
    let sp = track(&j, pods, None, &[]);
    assert_eq!(sp.remove_finalizers.len(), 2);
    assert_eq!((sp.status.succeeded, sp.status.failed), (Some(1), Some(1)));
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&["c"], &["d"]))
    );
    let a = status_after_removal(&sp, &HashSet::new(), true, ts(NOW));
    assert_eq!(
        sorted(&a.status.uncounted_terminated_pods),
        sorted(&uncounted(&["c"], &["d"]))
    );
    assert!(!a.write && a.finished.is_none());
}

#[test]
fn indexed_job_new_successful_pods_need_no_uids() {
    let j = crate::fixtures::indexed(job(1, Some(6)));
    let pods = vec![
        pod("s1").succeeded().index(1),
        pod("s3").succeeded().index(3),
        pod("s3b").succeeded().index(3),
        pod("r5").node("n").running().index(5),
        pod("none").succeeded(),
    ];
    let sp = track(&j, pods, None, &[]);
    assert_eq!(sp.remove_finalizers.len(), 4);
    assert_eq!(
        (sp.status.succeeded, sp.status.completed_indexes.as_deref()),
        (Some(2), Some("1,3"))
    );
    assert_eq!(sorted(&sp.status.uncounted_terminated_pods), (vec![], vec![]));
}

#[test]
fn indexed_job_previous_indexes_outside_the_completions_are_dropped() {
    let mut j = crate::fixtures::indexed(job(2, Some(2)));
    let st = status(&mut j);
    (st.succeeded, st.completed_indexes) = (Some(1), Some("3".into()));
    let sp = track(
        &j,
        vec![
            pod("r0").node("n").running().index(0),
            pod("r1").node("n").running().index(1),
        ],
        None,
        &[],
    );
    assert!(sp.remove_finalizers.is_empty());
    assert_eq!(
        (sp.status.succeeded, sp.status.completed_indexes.as_deref()),
        (Some(0), Some(""))
    );
    let sp = track(
        &j,
        vec![
            pod("r0").node("n").running().index(0),
            pod("s1").succeeded().index(1),
        ],
        None,
        &[],
    );
    assert_eq!(sp.remove_finalizers.len(), 1);
    assert_eq!(
        (sp.status.succeeded, sp.status.completed_indexes.as_deref()),
        (Some(1), Some("1"))
    );
}

#[test]
fn indexed_job_failed_pods_without_a_valid_index_are_not_counted() {
    let j = crate::fixtures::indexed(job(1, Some(6)));
    let pods = vec![
        pod("a").failed().index(1),
        pod("b").failed().index(3),
        pod("c").failed().index(3),
        pod("d").node("n").running().index(5),
        pod("none").failed(),
    ];
    let sp = track(&j, pods, None, &[]);
    assert_eq!(sp.remove_finalizers.len(), 4);
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&[], &["a", "b", "c"]))
    );
    assert_eq!(after_all(&sp).failed, Some(3));
}

#[test]
fn indexed_job_past_and_new_pods() {
    let mut j = crate::fixtures::indexed(job(1, Some(7)));
    let st = status(&mut j);
    (st.failed, st.succeeded, st.completed_indexes) = (Some(2), Some(5), Some("0-2,4,6,7".into()));
    let pods = vec![
        pod("s0").succeeded().index(0).no_finalizer(),
        pod("f1").failed().index(1).no_finalizer(),
        pod("s1").succeeded().index(1),
        pod("s3").succeeded().index(3),
        pod("a").failed().index(2),
        pod("b").failed().index(5),
    ];
    let sp = track(&j, pods, None, &[]);
    assert_eq!(sp.remove_finalizers.len(), 4);
    assert_eq!(
        (sp.status.succeeded, sp.status.completed_indexes.as_deref()),
        (Some(6), Some("0-4,6"))
    );
    assert_eq!(
        sorted(&sp.status.uncounted_terminated_pods),
        sorted(&uncounted(&[], &["a", "b"]))
    );
    assert_eq!(after_all(&sp).failed, Some(4));
}

#[test]
fn too_many_finished_stops_at_500_uncounted() {
    let j = with_status(job(1, None), 0, 0, uncounted(&[], &["gone", "b"]));
    let mut pods: Vec<PodB> = (0..500).map(|i| pod(&format!("s{i}")).succeeded()).collect();
    pods.push(pod("b").failed());
    let sp = track(&j, pods, None, &[]);
    assert_eq!(
        sp.remove_finalizers.len(),
        499,
        "the gone UID is counted first, freeing a slot"
    );
    assert!(sp.reached_max_uncounted);
    let (s, f) = sorted(&sp.status.uncounted_terminated_pods);
    assert_eq!((s.len(), f), (499, vec!["uid-b".to_owned()]));
    assert_eq!(sp.status.failed, Some(1));
}
