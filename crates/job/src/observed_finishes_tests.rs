use k8s_openapi::api::batch::v1::UncountedTerminatedPods;

use super::*;
use crate::{
    backoff::BackoffStore,
    fixtures::{job, pod, status, ts},
    plan::{Decision, SyncInput, plan_pods},
};

fn failed_at(name: &str, at: i64) -> Arc<Pod> {
    pod(name).failed().exit("main", 1, at).build()
}

fn observed(pods: &[Arc<Pod>]) -> ObservedFinishes {
    let o = ObservedFinishes::default();
    for p in pods {
        o.observe(p);
    }
    o
}

#[test]
fn pods_upstream_counted_make_its_record_and_vanished_ones_still_count() {
    let counted = failed_at("a", 10).as_ref().clone();
    let mut gone = (*pod("b").deleting().no_finalizer().build()).clone();
    gone.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(20)));
    let mut counted = counted;
    counted.metadata.finalizers = None;
    let o = observed(&[Arc::new(counted.clone()), Arc::new(gone)]);
    // Only `a` is still in the cache: `b` went away with its finalizer, yet upstream counted it.
    let j = job(1, Some(3));
    let r = o.record(&j, &[Arc::new(counted)]);
    assert_eq!(
        r,
        BackoffRecord {
            failures_after_last_success: 2,
            last_failure_time: Some(ts(20))
        }
    );
}

#[test]
fn pods_upstream_has_not_counted_are_left_to_the_plan() {
    let new = failed_at("a", 10);
    let o = observed(std::slice::from_ref(&new));
    let mut j = job(1, Some(3));
    assert_eq!(o.record(&j, std::slice::from_ref(&new)), BackoffRecord::default());
    // Once upstream has recorded it as uncounted, it is in upstream's record.
    status(&mut j).uncounted_terminated_pods = Some(UncountedTerminatedPods {
        failed: Some(vec!["uid-a".into()]),
        succeeded: None,
    });
    assert_eq!(o.record(&j, &[new]).failures_after_last_success, 1);
}

#[test]
fn deleted_pods_count_only_where_terminating_pods_are_replaced() {
    let o = observed(&[pod("a").running().deleting().no_finalizer().build()]);
    let mut j = job(1, Some(3));
    assert_eq!(o.record(&j, &[]).failures_after_last_success, 1);
    j.spec.as_mut().unwrap().pod_replacement_policy = Some("Failed".into());
    assert_eq!(o.record(&j, &[]), BackoffRecord::default());
}

#[test]
fn running_and_foreign_pods_are_not_finishes_and_a_forgotten_job_has_none() {
    let o = observed(&[
        pod("run").running().build(),
        pod("orphan").orphan().failed().exit("main", 1, 5).build(),
    ]);
    let j = job(1, Some(3));
    assert_eq!(o.record(&j, &[]), BackoffRecord::default());
    let o = observed(&[pod("a").failed().exit("main", 1, 5).no_finalizer().build()]);
    o.forget("ns/foobar");
    assert_eq!(o.record(&j, &[]), BackoffRecord::default());
}

/// The case that made shadow mode cry wolf: upstream counted a failed pod and waits out the 10 s
/// backoff; planned with the observed record, the shadow waits too instead of creating at once.
#[test]
fn the_shadow_plan_waits_out_the_backoff_upstream_waits_out() {
    let failed = pod("a").failed().exit("main", 1, 100).no_finalizer().build();
    let mut j = job(1, Some(1));
    status(&mut j).failed = Some(1);
    let o = observed(std::slice::from_ref(&failed));
    let candidates = vec![failed];
    let plan = |backoff| {
        let input = SyncInput {
            job: &j,
            candidates: &candidates,
            expectations_satisfied: true,
            expected_rm_finalizers: &Default::default(),
            backoff,
            now: ts(103),
            suspend_clears_start_time: true,
            delays: crate::JobDelays::UPSTREAM,
        };
        match plan_pods(&input).unwrap() {
            Decision::Sync(p) => p,
            _ => unreachable!(),
        }
    };
    let with_record = plan(o.record(&j, &candidates));
    assert!(
        matches!(with_record.action, crate::plan::PodAction::None),
        "{:?}",
        with_record.action
    );
    assert_eq!(with_record.requeue_after, Some(std::time::Duration::from_secs(7)));
    let blind = plan(BackoffStore::default().get("ns/foobar"));
    assert!(matches!(blind.action, crate::plan::PodAction::Create(_)));
}
