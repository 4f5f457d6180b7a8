//! Property: carrying out a plan and planning again converges, within a few syncs and with no
//! change in the world but the controller's own writes, to a plan that asks for nothing more.

use controller::compact_pod::Pod;
use std::{collections::HashSet, sync::Arc};

use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::Time};
use proptest::prelude::*;

use crate::{
    backoff::BackoffRecord,
    fixtures::{indexed, job, pod, status, ts},
    plan::{Decision, FullPlan, PodAction, SyncInput, plan_sync, status_after_removal},
    spec::{JOB_TRACKING_FINALIZER, is_finished},
};

const NOW: i64 = 1000;

fn plan(j: &Job, pods: &[Arc<Pod>], backoff: BackoffRecord) -> Option<FullPlan> {
    let none = HashSet::new();
    let input = SyncInput {
        job: j,
        candidates: pods,
        expectations_satisfied: true,
        expected_rm_finalizers: &none,
        backoff,
        now: ts(NOW),
        suspend_clears_start_time: true,
        delays: crate::JobDelays::UPSTREAM,
    };
    match plan_sync(&input).unwrap() {
        Decision::Sync(p) => Some(*p),
        _ => None,
    }
}

/// The world after the plan's writes: status written, finalizers gone, deleted pods terminating
/// (or gone once without finalizer), created pods Pending.
fn apply(j: &mut Job, pods: &mut Vec<Arc<Pod>>, p: &FullPlan, round: usize) {
    let removed: HashSet<String> = p
        .status
        .remove_finalizers
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    *status(j) = status_after_removal(&p.status, &removed, false, ts(NOW)).status;
    let deleting: HashSet<String> = p
        .sync
        .action
        .deletions()
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    let unfinalize = matches!(p.sync.action, PodAction::RemoveFinalizerThenDelete(_));
    for pod in pods.iter_mut() {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut q = (**pod).clone();
        if removed.contains(&uid) || (unfinalize && deleting.contains(&uid)) {
            q.metadata.finalizers = None;
        }
        if deleting.contains(&uid) {
            q.metadata.deletion_timestamp = Some(Time(ts(NOW)));
            q.status.as_mut().unwrap().phase = Some("Failed".into());
        }
        *pod = Arc::new(q);
    }
    pods.retain(|p| !(p.metadata.deletion_timestamp.is_some() && p.metadata.finalizers.is_none()));
    if let PodAction::Create(c) = &p.sync.action {
        for n in 0..c.count {
            let mut b = pod(&format!("new-{round}-{n}"));
            if let Some(ix) = c.indexes.get(n) {
                b = b.index(*ix);
            }
            pods.push(b.build());
        }
    }
}

fn asks_nothing(p: &FullPlan) -> bool {
    let after = status_after_removal(&p.status, &HashSet::new(), false, ts(NOW));
    matches!(p.sync.action, PodAction::None)
        && p.status.remove_finalizers.is_empty()
        && !p.status.flush_first
        && !after.write
}

fn arb_world() -> impl Strategy<Value = (Job, Vec<Arc<Pod>>)> {
    let pods = proptest::collection::vec((0..3u8, 0..6i32), 0..8);
    (any::<bool>(), 1..4i32, proptest::option::of(1..6i32), pods).prop_map(|(idx, par, comp, pods)| {
        let mut j = job(par, if idx { Some(comp.unwrap_or(3)) } else { comp });
        if idx {
            j = indexed(j);
        }
        let pods = pods
            .into_iter()
            .enumerate()
            .map(|(n, (phase, ix))| {
                let b = pod(&format!("p{n}")).index(ix).node("n");
                match phase {
                    0 => b.running(),
                    1 => b.succeeded(),
                    _ => b.failed().exit("main", 1, NOW - 1000),
                }
                .build()
            })
            .collect();
        (j, pods)
    })
}

proptest! {
    #[test]
    fn planning_over_the_plans_result_converges_to_nothing_more((mut j, mut pods) in arb_world()) {
        let mut backoff = BackoffRecord::default();
        let mut settled = false;
        for round in 0..8 {
            let Some(p) = plan(&j, &pods, backoff) else { settled = true; break };
            if asks_nothing(&p) {
                // And once more: still nothing.
                let again = plan(&j, &pods, p.sync.backoff);
                prop_assert!(again.as_ref().is_none_or(asks_nothing));
                settled = true;
                break;
            }
            backoff = p.sync.backoff;
            apply(&mut j, &mut pods, &p, round);
        }
        prop_assert!(settled, "no fixpoint: {:?}", j.status);
        if is_finished(&j) {
            prop_assert!(pods.iter().all(|p| !p.metadata.finalizers.iter().flatten().any(|f| f == JOB_TRACKING_FINALIZER)),
                "a finished Job left a pod with the finalizer");
        }
    }
}
