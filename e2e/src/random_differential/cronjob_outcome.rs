//! What is compared of a CronJob program (`super::cronjob`), and when a step of it has settled.
//! Jobs are named by what they are to the program (the n-th scheduled one still there, a manual
//! one by its step), never by their minute, which differs between the two runs.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    jiff::Timestamp,
};

use super::projection::{Snapshot, conditions};
use crate::{
    differential::Outcome,
    pods::{controller_uid, is_ready, phase},
};

pub(crate) use crate::cronjob_scenarios::ANNOTATION as SCHEDULED;

/// Whether the Job has the condition `kind`, true.
fn has(j: &Job, kind: &str) -> bool {
    j.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == kind && c.status == "True")
}

/// Complete or Failed.
pub fn finished(j: &Job) -> bool {
    has(j, "Complete") || has(j, "Failed")
}

/// The names of the active list's entries whose Job, matched by UID, is gone or finished: a sync
/// writes the status that drops them after it deleted or read those Jobs, so a list with any is
/// one the controller is about to change.
pub fn stale_active(cj: &CronJob, jobs: &[Job]) -> Vec<String> {
    let status = cj.status.as_ref();
    let listed = status.into_iter().flat_map(|s| s.active.iter().flatten());
    listed
        .filter(|r| {
            let job = jobs
                .iter()
                .find(|j| j.metadata.uid.is_some() && j.metadata.uid == r.uid);
            job.is_none_or(finished)
        })
        .map(|r| r.name.clone().unwrap_or_default())
        .collect()
}

/// `reasons` (as `differential::event_reasons` joins them) without `CronJob/MissingJob`. Upstream's
/// controller also records it when a sync reads its CronJob from a cache behind its own last
/// status write (the entry of a Job it has just deleted, for the history limits or Replace, still
/// listed): the Job's deletion queues that sync at once, so whether it appears depends on the
/// cache's lag. kcm-rs's CronJob controller does not decide on such a cache. A Job that really went
/// missing is compared in the `cron-missing-job` scenario.
pub fn without_missing_job(reasons: &str) -> String {
    let kept: Vec<&str> = reasons
        .split(", ")
        .filter(|r| *r != "CronJob/MissingJob")
        .collect();
    kept.join(", ")
}

/// A Job the schedule started, rather than a manual one.
pub fn scheduled(j: &Job) -> bool {
    j.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(SCHEDULED))
}

fn limit(v: Option<i32>, default: i32) -> usize {
    usize::try_from(v.unwrap_or(default)).unwrap_or(0)
}

/// Settled: no Job or pod being deleted or waiting for the garbage collector, each unfinished Job
/// with its one pod Ready and counted, the active list naming only unfinished Jobs that exist, and
/// the finished Jobs within the history limits (upstream's defaults 3 and 1).
pub fn unsettled(s: &Snapshot, out: &mut Vec<String>) {
    let Some(cj) = &s.cron_job else {
        out.push("no CronJob".into());
        return;
    };
    let uids: BTreeMap<&str, &Job> = s
        .jobs
        .iter()
        .map(|j| (j.metadata.uid.as_deref().unwrap_or(""), j))
        .collect();
    for j in &s.jobs {
        let name = j.metadata.name.as_deref().unwrap_or("?");
        let st = j.status.clone().unwrap_or_default();
        if j.metadata.deletion_timestamp.is_some() {
            out.push(format!("Job {name} being deleted"));
        } else if !finished(j) && (st.active != Some(1) || st.ready != Some(1)) {
            out.push(format!(
                "Job {name}: active {:?}, ready {:?}",
                st.active, st.ready
            ));
        }
    }
    for p in &s.pods {
        if let Some(owner) = controller_uid(&p.metadata)
            && !uids.contains_key(owner)
        {
            out.push(format!(
                "pod {} of a deleted Job",
                p.metadata.name.as_deref().unwrap_or("?")
            ));
        }
    }
    for name in stale_active(cj, &s.jobs) {
        out.push(format!("active lists {name:?}, gone or finished"));
    }
    let status = cj.status.clone().unwrap_or_default();
    // Upstream records a succeeded Job's completion whether or not it was listed active (a manual
    // one), in a sync of its own after the Job's last update.
    let last_success = status.last_successful_time.as_ref().map(|t| t.0);
    for j in s.jobs.iter().filter(|j| has(j, "Complete")) {
        let done = j
            .status
            .as_ref()
            .and_then(|st| st.completion_time.as_ref())
            .map(|t| t.0);
        if let Some(c) = done
            && last_success.is_none_or(|l| l < c)
        {
            out.push("lastSuccessfulTime before a Complete Job's completion".into());
        }
    }
    let spec = &cj.spec;
    let done = |kind: &str| s.jobs.iter().filter(|j| has(j, kind)).count();
    if done("Complete") > limit(spec.successful_jobs_history_limit, 3)
        || done("Failed") > limit(spec.failed_jobs_history_limit, 1)
    {
        out.push("finished Jobs above the history limits".into());
    }
}

/// What a Job is to the program: the n-th scheduled one still there (by slot), or a manual one.
fn job_keys(s: &Snapshot) -> BTreeMap<String, &Job> {
    let mut keys = BTreeMap::new();
    let mut by_slot: Vec<&Job> = s.jobs.iter().filter(|j| scheduled(j)).collect();
    by_slot.sort_by_key(|j| j.metadata.name.clone());
    for (n, j) in by_slot.into_iter().enumerate() {
        keys.insert(format!("job scheduled {n}"), j);
    }
    for j in s.jobs.iter().filter(|j| !scheduled(j)) {
        keys.insert(format!("job {}", j.metadata.name.as_deref().unwrap_or("?")), j);
    }
    keys
}

/// What a Job carries: its conditions and counts, whether the active list names it, and what the
/// fixed scenarios compare of a CronJob's Job (its controller, template label, scheduled-time
/// annotation against its name's minute, and zone).
fn describe(j: &Job, active: &[&str]) -> String {
    let st = j.status.clone().unwrap_or_default();
    let listed = active.contains(&j.metadata.uid.as_deref().unwrap_or(""));
    format!(
        "conditions [{}]; active {} succeeded {} failed {}; in the active list {listed}; {}",
        conditions(st.conditions.iter().flatten().map(|c| (
            c.type_.as_str(),
            c.status.as_str(),
            c.reason.as_deref()
        ))),
        st.active.unwrap_or(0),
        st.succeeded.unwrap_or(0),
        st.failed.unwrap_or(0),
        crate::cronjob_scenarios::describe(j),
    )
}

pub fn project(s: &Snapshot) -> Outcome {
    let mut o = Outcome::new();
    let Some(cj) = &s.cron_job else {
        o.insert("cronjob".into(), "absent".into());
        return o;
    };
    let st = cj.status.clone().unwrap_or_default();
    let active: Vec<&str> = st
        .active
        .iter()
        .flatten()
        .filter_map(|r| r.uid.as_deref())
        .collect();
    o.insert("status.active".into(), active.len().to_string());
    let newest_slot = s
        .jobs
        .iter()
        .filter_map(|j| {
            j.metadata
                .annotations
                .as_ref()?
                .get(SCHEDULED)?
                .parse::<Timestamp>()
                .ok()
        })
        .max();
    let last = st.last_schedule_time.as_ref().map(|t| t.0);
    let relation = match (last, newest_slot) {
        (None, _) => "unset",
        (Some(l), Some(n)) if l == n => "the newest scheduled Job's slot",
        (Some(l), Some(n)) if l < n => "before the newest scheduled Job's slot",
        (Some(_), _) => "set, no scheduled Job at or after it",
    };
    o.insert("status.lastScheduleTime".into(), relation.into());
    o.insert(
        "status.lastSuccessfulTime set".into(),
        st.last_successful_time.is_some().to_string(),
    );
    let keys = job_keys(s);
    let mut pods: BTreeMap<String, usize> = BTreeMap::new();
    for p in &s.pods {
        let owner = keys
            .iter()
            .find(|(_, j)| j.metadata.uid.as_deref() == controller_uid(&p.metadata))
            .map_or("no Job", |(k, _)| k.as_str());
        let ready = if is_ready(p) { " ready" } else { "" };
        *pods.entry(format!("{owner} {}{ready}", phase(p))).or_default() += 1;
    }
    for (k, j) in keys {
        o.insert(k, describe(j, &active));
    }
    let pods: Vec<String> = pods.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    o.insert("pods".into(), pods.join("; "));
    o
}

#[cfg(test)]
#[path = "cronjob_outcome_tests.rs"]
mod tests;
