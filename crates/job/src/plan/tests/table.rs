//! Upstream's `TestControllerSyncJob` table, row by row (names kept so a row can be found there),
//! with 1.36's feature set: terminating pods always counted, terminal conditions delayed behind
//! `FailureTarget` / `SuccessCriteriaMet` while pods terminate. Each row is one whole sync planned
//! as if every write succeeded; "pod patches" counts finalizer removals plus the removals before a
//! surplus or suspension delete. Rows about pod-control errors are the executor's
//! (`executor::tests`); rows about feature gates switched off are not meaningful in 1.36.

use std::collections::HashSet;

use k8s_openapi::api::batch::v1::JobCondition;

use super::{support::*, *};
use crate::{
    fixtures::*,
    spec::{COMPLETION_INDEX_ANNOTATION, REPLACE_FAILED},
};

const TERMINATING_OR_FAILED: &str = "TerminatingOrFailed";

#[derive(Debug, Clone, Default)]
struct Row {
    name: &'static str,
    parallelism: i32,
    completions: Option<i32>,
    backoff_limit: i32,
    indexed: bool,
    deleting: bool,
    suspend: bool,
    was_suspended: bool,
    replacement: Option<&'static str>,
    empty_failure_policy: bool,
    /// Initial status (active, succeeded, failed); sets startTime to now.
    initial: Option<(i32, i32, i32)>,
    initial_conditions: Vec<JobCondition>,
    backoff: BackoffRecord,
    unsatisfied: bool,
    pending: usize,
    active: usize,
    ready: usize,
    succeeded: usize,
    failed: usize,
    terminating: usize,
    /// (index annotation, phase).
    indexes: &'static [(&'static str, &'static str)],

    creations: usize,
    created_indexes: &'static [i32],
    deletions: usize,
    exp_active: i32,
    exp_ready: i32,
    exp_succeeded: i32,
    exp_failed: i32,
    exp_terminating: Option<i32>,
    exp_completed: &'static str,
    /// (type, status, reason) that must be present.
    exp_condition: Option<(&'static str, &'static str, &'static str)>,
    pod_patches: usize,
}

fn row(name: &'static str, parallelism: i32, completions: Option<i32>, backoff_limit: i32) -> Row {
    Row {
        name,
        parallelism,
        completions,
        backoff_limit,
        ..Row::default()
    }
}

fn pods_of(r: &Row) -> Vec<Arc<Pod>> {
    let mut out = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        pod(&format!("p{n}"))
    };
    out.extend((0..r.pending).map(|_| next().build()));
    out.extend((0..r.active).map(|i| {
        let b = next().node("n").running();
        if i < r.ready { b.ready() } else { b }.build()
    }));
    out.extend((0..r.succeeded).map(|_| next().succeeded().build()));
    out.extend((0..r.failed).map(|_| next().failed().build()));
    out.extend((0..r.terminating).map(|_| next().node("n").running().deleting().build()));
    for (ix, phase) in r.indexes {
        let b = next().annotation(COMPLETION_INDEX_ANNOTATION, ix).phase(phase);
        out.push(if *phase == "Running" { b.node("n") } else { b }.build());
    }
    out
}

fn job_of(r: &Row) -> Job {
    let mut j = job(r.parallelism, r.completions);
    if r.indexed {
        j = indexed(j);
    }
    let s = spec(&mut j);
    s.backoff_limit = Some(r.backoff_limit);
    s.suspend = Some(r.suspend);
    s.pod_replacement_policy = r.replacement.map(Into::into);
    if r.empty_failure_policy {
        s.pod_failure_policy = policy(vec![]);
    }
    if r.deleting {
        j.metadata.deletion_timestamp = Some(Time(ts(NOW - 1)));
    }
    let st = status(&mut j);
    if let Some((a, s, f)) = r.initial {
        (st.active, st.succeeded, st.failed) = (Some(a), Some(s), Some(f));
        st.start_time = Some(Time(ts(NOW)));
    }
    let mut conds = r.initial_conditions.clone();
    if r.was_suspended {
        conds.push(new_condition(
            SUSPENDED,
            "True",
            REASON_JOB_SUSPENDED,
            MESSAGE_JOB_SUSPENDED,
            ts(1),
        ));
    }
    if !conds.is_empty() {
        st.conditions = Some(conds);
    }
    j
}

fn check(r: &Row) {
    let j = job_of(r);
    let pods = pods_of(r);
    let none = HashSet::new();
    let mut i = input(&j, &pods, &none);
    i.expectations_satisfied = !r.unsatisfied;
    i.backoff = r.backoff;
    let Decision::Sync(p) = plan_sync(&i).expect("plan") else {
        panic!("{}: not synced", r.name)
    };
    let a = after(&p);
    let s = &a.status;
    let name = r.name;
    let (created, indexes) = match &p.sync.action {
        PodAction::Create(c) => (c.count, c.indexes.clone()),
        _ => (0, Vec::new()),
    };
    assert_eq!(created, r.creations, "{name}: creations");
    if r.indexed && created > 0 {
        assert_eq!(indexes, r.created_indexes, "{name}: created indexes");
    }
    let deletions = p.sync.action.deletions();
    assert_eq!(deletions.len(), r.deletions, "{name}: deletions");
    let unfinalized_deletes = match &p.sync.action {
        PodAction::RemoveFinalizerThenDelete(d) => {
            d.iter().filter(|p| has_tracking_finalizer(&p.metadata)).count()
        }
        _ => 0,
    };
    let patches = p.status.remove_finalizers.len() + unfinalized_deletes;
    assert_eq!(patches, r.pod_patches, "{name}: pod patches");
    assert_eq!(s.active, Some(r.exp_active), "{name}: active");
    assert_eq!(s.ready, Some(r.exp_ready), "{name}: ready");
    assert_eq!(s.succeeded.unwrap_or(0), r.exp_succeeded, "{name}: succeeded");
    assert_eq!(s.failed.unwrap_or(0), r.exp_failed, "{name}: failed");
    if let Some(t) = r.exp_terminating {
        assert_eq!(s.terminating, Some(t), "{name}: terminating");
    }
    assert_eq!(
        s.completed_indexes.as_deref().unwrap_or(""),
        r.exp_completed,
        "{name}: completedIndexes"
    );
    let conds: Vec<(String, String, String)> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| {
            (
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
            )
        })
        .collect();
    match r.exp_condition {
        Some((t, st, reason)) => assert!(
            conds
                .iter()
                .any(|c| (c.0.as_str(), c.1.as_str(), c.2.as_str()) == (t, st, reason)),
            "{name}: want {t}={st} ({reason}), have {conds:?}"
        ),
        None => assert!(
            conds.iter().all(|c| c.1 != "True" || c.0 == SUSPENDED) || !r.initial_conditions.is_empty(),
            "{name}: unexpected {conds:?}"
        ),
    }
}

#[test]
#[rustfmt::skip]
fn counting_and_manage_rows() {
    let rows = [
        Row { creations: 2, exp_active: 2, ..row("job start", 2, Some(5), 6) },
        Row { creations: 2, exp_active: 2, ..row("WQ job start", 2, None, 6) },
        Row { pending: 2, exp_active: 2, ..row("pending pods", 2, Some(5), 6) },
        Row { active: 3, ready: 2, exp_active: 3, exp_ready: 2, ..row("correct # of pods", 3, Some(5), 6) },
        Row { active: 2, exp_active: 2, ..row("WQ job: correct # of pods", 2, None, 6) },
        Row { active: 1, succeeded: 1, creations: 1, exp_active: 2, exp_succeeded: 1, pod_patches: 1, ..row("too few active pods", 2, Some(5), 6) },
        Row { active: 1, failed: 1, terminating: 1, replacement: Some(REPLACE_FAILED), exp_terminating: Some(1), pod_patches: 1, exp_failed: 1, exp_active: 1, ..row("WQ job: recreate pods when failed", 1, None, 6) },
        Row { active: 1, failed: 1, terminating: 1, exp_terminating: Some(1), exp_active: 1, pod_patches: 2, exp_failed: 2, ..row("WQ job: turn on PodReplacementPolicy but not set PodReplacementPolicy", 1, Some(1), 6) },
        Row { active: 1, failed: 1, terminating: 1, replacement: Some(TERMINATING_OR_FAILED), exp_terminating: Some(1), exp_active: 1, pod_patches: 2, exp_failed: 2, ..row("WQ job: recreate pods when terminating or failed", 1, None, 6) },
        Row { active: 2, terminating: 4, replacement: Some(REPLACE_FAILED), exp_terminating: Some(5), exp_active: 1, deletions: 1, pod_patches: 1, ..row("more terminating pods than parallelism", 1, Some(1), 6) },
        Row { active: 2, terminating: 4, empty_failure_policy: true, exp_terminating: Some(5), exp_active: 1, deletions: 1, pod_patches: 1, ..row("more terminating pods than parallelism; PodFailurePolicy used", 1, Some(1), 6) },
        Row { backoff: BackoffRecord { failures_after_last_success: 1, last_failure_time: Some(ts(NOW)) }, initial: Some((0, 0, 0)), ..row("too few active pods and active back-off", 1, Some(1), 6) },
        Row { backoff: BackoffRecord { failures_after_last_success: 1, last_failure_time: Some(ts(NOW)) }, initial: Some((0, 0, 0)), active: 1, ready: 1, exp_active: 1, exp_ready: 1, ..row("too few active pods and active back-off with running pods", 2, Some(2), 6) },
        Row { backoff: BackoffRecord { failures_after_last_success: 0, last_failure_time: Some(ts(NOW)) }, creations: 1, exp_active: 1, ..row("too few active pods and no back-offs", 1, Some(1), 6) },
        Row { active: 1, creations: 1, exp_active: 2, ..row("too few active pods with a dynamic job", 2, None, 6) },
        Row { active: 3, deletions: 1, exp_active: 2, pod_patches: 1, exp_terminating: Some(1), ..row("too many active pods", 2, Some(5), 6) },
        Row { active: 3, ready: 3, deletions: 1, exp_active: 2, pod_patches: 1, exp_ready: 2, ..row("count ready pods when too many active pods", 2, Some(5), 6) },
        Row { active: 1, succeeded: 1, failed: 1, creations: 1, exp_active: 2, exp_succeeded: 1, exp_failed: 1, pod_patches: 2, ..row("failed + succeed pods: reset backoff delay", 2, Some(5), 6) },
        Row { active: 1, failed: 1, creations: 1, exp_active: 2, exp_failed: 1, pod_patches: 1, ..row("new failed pod", 2, Some(5), 6) },
        Row { initial: Some((1, 0, 1)), active: 1, exp_active: 1, exp_failed: 1, ..row("no new pod; possible finalizer update of failed pod", 1, Some(1), 6) },
        Row { active: 10, deletions: 8, exp_active: 2, pod_patches: 8, ..row("more active pods than parallelism", 2, Some(5), 6) },
        Row { active: 3, succeeded: 2, deletions: 1, exp_active: 2, exp_succeeded: 2, pod_patches: 3, ..row("more active pods than remaining completions", 3, Some(4), 6) },
        Row { active: 2, succeeded: 2, exp_active: 2, exp_succeeded: 2, pod_patches: 2, ..row("status change", 2, Some(5), 6) },
        Row { deleting: true, pending: 1, active: 1, succeeded: 1, exp_active: 2, exp_succeeded: 1, pod_patches: 3, ..row("deleting job", 2, Some(5), 6) },
    ];
    rows.iter().for_each(check);
}

#[test]
#[rustfmt::skip]
fn finishing_rows() {
    let rows = [
        Row { succeeded: 5, exp_succeeded: 5, exp_condition: Some((COMPLETE, "True", REASON_COMPLETIONS_REACHED)), pod_patches: 5, ..row("job finish", 2, Some(5), 6) },
        Row { active: 1, succeeded: 1, exp_active: 1, exp_succeeded: 1, pod_patches: 1, ..row("WQ job finishing", 2, None, 6) },
        Row { succeeded: 2, exp_succeeded: 2, exp_condition: Some((COMPLETE, "True", REASON_COMPLETIONS_REACHED)), pod_patches: 2, ..row("WQ job all finished", 2, None, 6) },
        Row { succeeded: 1, failed: 1, exp_succeeded: 1, exp_failed: 1, exp_condition: Some((COMPLETE, "True", REASON_COMPLETIONS_REACHED)), pod_patches: 2, ..row("WQ job all finished despite one failure", 2, None, 6) },
        Row { deleting: true, failed: 1, exp_failed: 1, exp_condition: Some((FAILED, "True", REASON_BACKOFF_LIMIT_EXCEEDED)), pod_patches: 1, ..row("too many job failures", 2, Some(5), 0) },
        Row { deleting: true, failed: 1, unsatisfied: true, exp_failed: 1, pod_patches: 1, ..row("job failures, unsatisfied expectations", 2, Some(5), 0) },
        Row { active: 2, ready: 2, failed: 1, exp_failed: 3, exp_condition: Some((FAILURE_TARGET, "True", REASON_BACKOFF_LIMIT_EXCEEDED)), pod_patches: 3, deletions: 2, exp_terminating: Some(2), ..row("count ready pods when job fails", 2, Some(3), 0) },
        Row { active: 1, ready: 1, initial: Some((1, 0, 0)), initial_conditions: vec![new_condition(FAILURE_TARGET, "False", "ConditionAddedManually", "Testing", ts(1))], exp_active: 1, exp_ready: 1, exp_condition: Some((FAILURE_TARGET, "False", "ConditionAddedManually")), ..row("FailureTarget=False condition added manually is ignored", 1, Some(1), 6) },
        Row { active: 1, ready: 1, initial: Some((1, 0, 0)), initial_conditions: vec![new_condition(SUCCESS_CRITERIA_MET, "False", "ConditionAddedManually", "Testing", ts(1))], exp_active: 1, exp_ready: 1, exp_condition: Some((SUCCESS_CRITERIA_MET, "False", "ConditionAddedManually")), ..row("SuccessCriteriaMet=False condition added manually is ignored", 1, Some(1), 6) },
    ];
    rows.iter().for_each(check);
}

#[test]
#[rustfmt::skip]
fn suspend_rows() {
    let suspended = |name| Row { suspend: true, ..row(name, 2, Some(4), 6) };
    let rows = [
        Row { active: 2, deletions: 2, exp_terminating: Some(2), exp_condition: Some((SUSPENDED, "True", REASON_JOB_SUSPENDED)), pod_patches: 2, ..suspended("suspending a job with satisfied expectations") },
        Row { active: 2, ready: 2, deletions: 2, exp_condition: Some((SUSPENDED, "True", REASON_JOB_SUSPENDED)), pod_patches: 2, ..suspended("count ready pods when suspending a job with satisfied expectations") },
        Row { active: 3, unsatisfied: true, exp_active: 3, exp_terminating: Some(0), ..suspended("suspending a job with unsatisfied expectations") },
        Row { active: 3, ready: 3, unsatisfied: true, exp_active: 3, exp_ready: 3, ..suspended("count ready pods when suspending a job with unsatisfied expectations") },
        Row { was_suspended: true, suspend: false, creations: 2, exp_active: 2, exp_condition: Some((SUSPENDED, "False", REASON_JOB_RESUMED)), ..suspended("resuming a suspended job") },
        Row { deleting: true, active: 2, exp_active: 2, pod_patches: 2, exp_terminating: Some(0), ..suspended("suspending a deleted job") },
    ];
    rows.iter().for_each(check);
}

#[test]
#[rustfmt::skip]
fn indexed_rows() {
    let ix = |name, parallelism, completions, backoff| Row { indexed: true, ..row(name, parallelism, Some(completions), backoff) };
    let rows = [
        Row { creations: 2, exp_active: 2, created_indexes: &[0, 1], ..ix("indexed job start", 2, 5, 6) },
        Row { replacement: Some(REPLACE_FAILED), terminating: 1, creations: 1, exp_active: 1, created_indexes: &[0], exp_terminating: Some(1), ..ix("indexed job with some pods deleted, podReplacementPolicy Failed", 2, 5, 6) },
        Row { replacement: Some(TERMINATING_OR_FAILED), terminating: 1, creations: 2, exp_active: 2, created_indexes: &[0, 1], exp_terminating: Some(1), pod_patches: 1, ..ix("indexed job with some pods deleted, podReplacementPolicy TerminatingOrFailed", 2, 5, 6) },
        Row { indexes: &[("0", "Succeeded"), ("1", "Failed"), ("1", "Succeeded"), ("2", "Succeeded")], exp_succeeded: 3, exp_failed: 1, exp_completed: "0-2", exp_condition: Some((COMPLETE, "True", REASON_COMPLETIONS_REACHED)), pod_patches: 4, ..ix("indexed job completed", 2, 3, 6) },
        Row { indexes: &[("0", "Succeeded"), ("1", "Failed"), ("2", "Running")], exp_succeeded: 1, exp_failed: 2, exp_completed: "0", exp_condition: Some((FAILURE_TARGET, "True", REASON_BACKOFF_LIMIT_EXCEEDED)), pod_patches: 3, deletions: 1, exp_terminating: Some(1), ..ix("backoff limit exceeded; JobManagedBy enabled", 2, 3, 0) },
        Row { indexes: &[("0", "Succeeded"), ("1", "Succeeded"), ("1", "Succeeded")], creations: 1, exp_active: 1, exp_succeeded: 2, exp_completed: "0,1", created_indexes: &[2], pod_patches: 3, ..ix("indexed job repeated completed index", 2, 3, 6) },
        Row {
            indexes: &[("0", "Running"), ("2", "Succeeded"), ("3", "Pending"), ("4", "Succeeded"), ("5", "Succeeded"), ("7", "Succeeded"), ("8", "Succeeded"), ("9", "Succeeded")],
            creations: 6, exp_active: 8, exp_succeeded: 6, exp_completed: "2,4,5,7-9", created_indexes: &[1, 6, 10, 11, 12, 13], pod_patches: 6,
            ..ix("indexed job some running and completed pods", 8, 20, 6)
        },
        Row { indexes: &[("0", "Failed"), ("1", "Pending"), ("2", "Failed")], creations: 2, exp_active: 3, exp_failed: 2, created_indexes: &[0, 2], pod_patches: 2, ..ix("indexed job some failed pods", 3, 4, 6) },
        Row {
            active: 1, succeeded: 1, failed: 1,
            indexes: &[("invalid", "Running"), ("invalid", "Succeeded"), ("invalid", "Failed"), ("invalid", "Pending"), ("0", "Succeeded"), ("1", "Running"), ("2", "Running")],
            deletions: 3, exp_active: 2, exp_succeeded: 1, exp_completed: "0", pod_patches: 8,
            ..ix("indexed job some pods without index", 2, 5, 6)
        },
        Row {
            succeeded: 1, failed: 1,
            indexes: &[("invalid", "Running"), ("0", "Succeeded"), ("1", "Running"), ("2", "Running"), ("2", "Pending")],
            deletions: 2, exp_active: 2, exp_succeeded: 1, exp_completed: "0", pod_patches: 5,
            ..ix("indexed job repeated indexes", 5, 5, 6)
        },
        Row {
            indexes: &[("0", "Succeeded"), ("5", "Running"), ("6", "Succeeded"), ("7", "Pending"), ("8", "Failed")],
            exp_succeeded: 1, deletions: 2, exp_completed: "0", pod_patches: 5,
            ..ix("indexed job with indexes outside of range", 2, 5, 6)
        },
    ];
    rows.iter().for_each(check);
}
