//! What shadow mode calls a disagreement for a Job: a plan that would write to pods, or a computed
//! status different from the one upstream wrote.

use controller::shadow::{Differences, names};
use k8s_openapi::api::batch::v1::{Job, JobStatus};

use crate::{
    conditions::{COMPLETE, FAILED},
    plan::{
        Decision, FullPlan, ManageOutcome, PodAction, SyncInput, plan_pods, status_after_removal, status_plan,
    },
};

/// One line per disagreeing field or intended write; empty when kcm-rs agrees with upstream.
pub fn differences(job: &Job, plan: &FullPlan) -> Vec<String> {
    let mut out = Differences::new();
    match &plan.sync.action {
        PodAction::None => {}
        PodAction::Create(c) if c.indexes.is_empty() => out.would("pods", format_args!("create {}", c.count)),
        PodAction::Create(c) => out.would("pods", format_args!("create indexes {:?}", c.indexes)),
        // An empty deletion (a suspended Job with nothing left running) writes nothing.
        PodAction::RemoveFinalizerThenDelete(p) | PodAction::DeleteKeepingFinalizer(p) if p.is_empty() => {}
        PodAction::RemoveFinalizerThenDelete(p) | PodAction::DeleteKeepingFinalizer(p) => {
            out.would("pods", format_args!("delete {:?}", names(p)))
        }
    }
    if !plan.status.remove_finalizers.is_empty() {
        out.would(
            "pods",
            format_args!(
                "remove the finalizer of {:?}",
                names(&plan.status.remove_finalizers)
            ),
        );
    }
    let old = job.status.clone().unwrap_or_default();
    status_differences(&old, &plan.status.status, &mut out);
    out.into_lines()
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
    let status = status_plan(&plan, &ManageOutcome::assumed(&plan.action));
    let removed = status
        .remove_finalizers
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    let after = status_after_removal(&status, &removed, false, input.now);
    let mut out = Differences::new();
    let upstream = input.job.status.clone().unwrap_or_default();
    status_differences(&upstream, &after.status, &mut out);
    out.into_lines()
}

/// One line per status field that differs between upstream's `old` and kcm-rs's `new`.
fn status_differences(old: &JobStatus, new: &JobStatus, out: &mut Differences) {
    out.count("active", old.active, new.active);
    out.count("ready", old.ready, new.ready);
    out.count("terminating", old.terminating, new.terminating);
    out.count("succeeded", old.succeeded, new.succeeded);
    out.count("failed", old.failed, new.failed);
    out.field(
        "completedIndexes",
        old.completed_indexes.clone().unwrap_or_default(),
        new.completed_indexes.clone().unwrap_or_default(),
    );
    out.exact("failedIndexes", &old.failed_indexes, &new.failed_indexes);
    out.conditions(&old.conditions, &new.conditions);
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::JobCondition;

    use super::*;
    use crate::{
        fixtures::{job, pod, status},
        plan::tests::support::full,
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
            matches!(&plan.sync.action, PodAction::RemoveFinalizerThenDelete(p) if p.is_empty()),
            "{:?}",
            plan.sync.action
        );
        assert_eq!(differences(&j, &plan), Vec::<String>::new());
    }

    /// A Job upstream finished is compared once more before it is forgotten: the counters kcm-rs
    /// would have finished with, from the same pods, against upstream's.
    #[test]
    fn a_finished_jobs_final_status_is_compared() {
        use crate::{conditions::*, fixtures::ts, plan::tests::support::input};
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
