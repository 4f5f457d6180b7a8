//! What shadow mode calls a disagreement for a Job: a plan that would write to pods, or a computed
//! status different from the one upstream wrote.

use controller::compact_pod::Pod;
use std::{
    hash::{Hash, Hasher},
    sync::Arc,
};

use k8s_openapi::api::batch::v1::{Job, JobStatus};

use crate::{
    conditions::{COMPLETE, FAILED},
    manage::PodAction,
    plan::{Decision, FullPlan, SyncInput, plan_pods},
    tracking::ManageOutcome,
};

/// One line per disagreeing field or intended write; empty when kcm-rs agrees with upstream.
pub fn differences(job: &Job, plan: &FullPlan) -> Vec<String> {
    let mut out = Vec::new();
    let names = |pods: &[Arc<Pod>]| {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    match &plan.sync.action {
        PodAction::None => {}
        PodAction::Create(c) if c.indexes.is_empty() => {
            out.push(format!("pods: kcm-rs would create {}", c.count))
        }
        PodAction::Create(c) => out.push(format!("pods: kcm-rs would create indexes {:?}", c.indexes)),
        // An empty deletion (a suspended Job with nothing left running) writes nothing.
        PodAction::Delete(p) | PodAction::DeleteActive(p) if p.is_empty() => {}
        PodAction::Delete(p) | PodAction::DeleteActive(p) => {
            out.push(format!("pods: kcm-rs would delete {:?}", names(p)))
        }
    }
    if !plan.status.remove_finalizers.is_empty() {
        out.push(format!(
            "pods: kcm-rs would remove the finalizer of {:?}",
            names(&plan.status.remove_finalizers)
        ));
    }
    let old = job.status.clone().unwrap_or_default();
    status_differences(&old, &plan.status.status, &mut out);
    out
}

/// For a Job upstream finished (the shadow would otherwise forget it at once): the status kcm-rs
/// would have finished it with, from the same caches, against upstream's. The Job is planned as if
/// its terminal condition were not written yet, and the plan followed through its finalizer
/// removals, where kcm-rs adds Complete or Failed.
pub fn final_status_differences(input: &SyncInput<'_>) -> Vec<String> {
    let mut open = input.job.clone();
    if let Some(s) = open.status.as_mut() {
        if let Some(cs) = s.conditions.as_mut() {
            cs.retain(|c| c.type_ != COMPLETE && c.type_ != FAILED);
        }
        s.completion_time = None;
    }
    let open_input = SyncInput { job: &open, ..*input };
    let Ok(Decision::Sync(plan)) = plan_pods(&open_input) else {
        return Vec::new();
    };
    let status = plan.status_plan(&ManageOutcome::assumed(&plan.action));
    let removed = status
        .remove_finalizers
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    let after = status.after_removal(&removed, false, input.now);
    let mut out = Vec::new();
    let upstream = input.job.status.clone().unwrap_or_default();
    status_differences(&upstream, &after.status, &mut out);
    out
}

/// One line per status field that differs between upstream's `old` and kcm-rs's `new`.
fn status_differences(old: &JobStatus, new: &JobStatus, out: &mut Vec<String>) {
    let n = |v: Option<i32>| v.unwrap_or(0);
    let mut field = |name: &str, upstream: String, ours: String| {
        if upstream != ours {
            out.push(format!("status.{name}: upstream {upstream}, kcm-rs {ours}"));
        }
    };
    field("active", n(old.active).to_string(), n(new.active).to_string());
    field("ready", n(old.ready).to_string(), n(new.ready).to_string());
    field(
        "terminating",
        n(old.terminating).to_string(),
        n(new.terminating).to_string(),
    );
    field(
        "succeeded",
        n(old.succeeded).to_string(),
        n(new.succeeded).to_string(),
    );
    field("failed", n(old.failed).to_string(), n(new.failed).to_string());
    field(
        "completedIndexes",
        old.completed_indexes.clone().unwrap_or_default(),
        new.completed_indexes.clone().unwrap_or_default(),
    );
    field(
        "failedIndexes",
        format!("{:?}", old.failed_indexes),
        format!("{:?}", new.failed_indexes),
    );
    field("conditions", conditions(old), conditions(new));
}

fn conditions(s: &JobStatus) -> String {
    let cs: Vec<String> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason.as_deref().unwrap_or("")))
        .collect();
    cs.join(", ")
}

/// A hash of the Job's and its pods' resourceVersions: it changes whenever anything the plan depends
/// on changes.
pub fn fingerprint(job: &Job, pods: &[Arc<Pod>]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    job.metadata.resource_version.hash(&mut h);
    let mut rvs: Vec<&str> = pods
        .iter()
        .filter_map(|p| p.metadata.resource_version.as_deref())
        .collect();
    rvs.sort_unstable();
    rvs.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::JobCondition;

    use super::*;
    use crate::{
        fixtures::{job, pod, status},
        plan::support::full,
    };

    /// A suspended Job with nothing left running plans an empty deletion: no write, so no
    /// disagreement.
    #[test]
    fn a_suspended_job_upstream_has_settled_is_no_divergence() {
        let mut j = job(2, Some(4));
        j.spec.as_mut().unwrap().suspend = Some(true);
        status(&mut j).conditions = Some(vec![JobCondition {
            type_: "Suspended".into(),
            status: "True".into(),
            reason: Some("JobSuspended".into()),
            ..JobCondition::default()
        }]);
        status(&mut j).active = Some(0);
        let plan = full(&j, &[]);
        assert!(
            matches!(&plan.sync.action, PodAction::Delete(p) if p.is_empty()),
            "{:?}",
            plan.sync.action
        );
        assert_eq!(differences(&j, &plan), Vec::<String>::new());
    }

    /// A Job upstream finished is compared once more before it is forgotten: the counters kcm-rs
    /// would have finished with, from the same pods, against upstream's.
    #[test]
    fn a_finished_jobs_final_status_is_compared() {
        use crate::{conditions::*, fixtures::ts, plan::support::input};
        let mut j = job(2, Some(2));
        let st = status(&mut j);
        st.succeeded = Some(2);
        st.start_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(1)));
        st.completion_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(9)));
        st.conditions = Some(vec![
            new_condition(
                SUCCESS_CRITERIA_MET,
                "True",
                REASON_COMPLETIONS_REACHED,
                "m",
                ts(9),
            ),
            new_condition(COMPLETE, "True", REASON_COMPLETIONS_REACHED, "m", ts(9)),
        ]);
        let done = ["a", "b"].map(|n| pod(n).succeeded().no_finalizer().build());
        let none = std::collections::HashSet::new();
        assert_eq!(
            final_status_differences(&input(&j, &done, &none)),
            Vec::<String>::new()
        );
        let mut more = done.to_vec();
        more.push(pod("c").succeeded().build());
        assert_eq!(
            final_status_differences(&input(&j, &more, &none)),
            vec!["status.succeeded: upstream 2, kcm-rs 3".to_owned()]
        );
    }

    #[test]
    fn a_pod_to_create_and_the_status_it_changes_are_reported() {
        let j = job(1, Some(1));
        let plan = full(&j, &[]);
        assert_eq!(
            differences(&j, &plan),
            vec![
                "pods: kcm-rs would create 1".to_owned(),
                "status.active: upstream 0, kcm-rs 1".to_owned()
            ]
        );
        let running = pod("a").running().build();
        let mut settled = j.clone();
        status(&mut settled).active = Some(1);
        let plan = full(&settled, std::slice::from_ref(&running));
        assert_eq!(differences(&settled, &plan), Vec::<String>::new());
    }
}
