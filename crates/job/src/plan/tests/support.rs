//! Helpers shared by the plan's tests: one whole sync planned as if every write succeeds, over a
//! Job and the pods its caches show.

use std::collections::HashSet;

use super::*;
use crate::fixtures::*;

pub(crate) const NOW: i64 = 100;

pub(crate) fn input<'a>(job: &'a Job, pods: &'a [Arc<Pod>], none: &'a HashSet<String>) -> SyncInput<'a> {
    SyncInput {
        job,
        candidates: pods,
        expectations_satisfied: true,
        expected_rm_finalizers: none,
        backoff: BackoffRecord::default(),
        now: ts(NOW),
        suspend_clears_start_time: true,
        delays: crate::JobDelays::UPSTREAM,
    }
}

pub(crate) fn full(job: &Job, pods: &[Arc<Pod>]) -> FullPlan {
    let none = HashSet::new();
    match plan_sync(&input(job, pods, &none)).unwrap() {
        Decision::Sync(p) => *p,
        other => panic!("not synced: {other:?}"),
    }
}

/// The status after every finalizer removal succeeded.
pub(crate) fn after(p: &FullPlan) -> AfterRemoval {
    let removed = p
        .status
        .remove_finalizers
        .iter()
        .map(|p| p.metadata.uid.clone().unwrap())
        .collect();
    status_after_removal(&p.status, &removed, false, ts(NOW))
}

pub(crate) fn creates(p: &FullPlan) -> usize {
    match &p.sync.action {
        PodAction::Create(c) => c.count,
        _ => 0,
    }
}

pub(crate) fn deleted(p: &FullPlan) -> Vec<String> {
    p.sync
        .action
        .deletions()
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

pub(crate) fn cond(s: &JobStatus, t: &str) -> Option<(String, String)> {
    s.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == t)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

pub(crate) fn running(n: usize) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| pod(&format!("r{i}")).node("n").running().build())
        .collect()
}
