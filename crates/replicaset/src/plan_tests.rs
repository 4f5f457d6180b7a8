use k8s_openapi::{
    api::apps::v1::ReplicaSetCondition,
    apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, Time},
};
use testing::{PodBuilder, pod, replica_set};

use super::*;
use crate::status::{REPLICA_FAILURE, needs_write};

const RS_UID: &str = "rs-uid";

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn rs(replicas: i32) -> ReplicaSet {
    replica_set("web")
        .uid(RS_UID)
        .generation(1)
        .replicas(replicas)
        .selector("app", "web")
        .template_label("app", "web")
        .template_label("tier", "fe")
        .build()
}

/// A ready pod of the ReplicaSet, with all template labels.
fn owned(name: &str) -> PodBuilder {
    pod(name)
        .label("app", "web")
        .label("tier", "fe")
        .owner("ReplicaSet", "web", RS_UID)
        .node("n1")
        .ready_at(ts(100))
}

fn plan(rs: &ReplicaSet, pods: Vec<Pod>, satisfied: bool) -> SyncPlan {
    let pods: Vec<Arc<Pod>> = pods.into_iter().map(Arc::new).collect();
    let input = SyncInput {
        rs,
        expectations_satisfied: satisfied,
        candidates: &pods,
        burst_replicas: BURST_REPLICAS,
        now: ts(10_000),
        features: controller::FeatureGates::default(),
    };
    plan_sync(&input, Vec::new).expect("valid")
}

fn names(pods: &[Arc<Pod>]) -> Vec<String> {
    let mut n: Vec<_> = pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    n.sort();
    n
}

#[test]
fn scales_up_to_the_desired_count_capped_by_the_burst() {
    assert_eq!(
        plan(&rs(3), vec![], true).replicas.change,
        ReplicaChange::Create(3)
    );
    assert_eq!(
        plan(&rs(3), vec![owned("a").build()], true).replicas.change,
        ReplicaChange::Create(2)
    );
    assert_eq!(
        plan(&rs(1200), vec![], true).replicas.change,
        ReplicaChange::Create(500)
    );
}

#[test]
fn does_not_act_while_expectations_are_pending_or_while_being_deleted() {
    let p = plan(&rs(3), vec![], false);
    assert_eq!(p.replicas.change, ReplicaChange::None);
    let mut dying = rs(3);
    dying.metadata.deletion_timestamp = Some(Time(ts(1)));
    let p = plan(&dying, vec![owned("a").build()], true);
    assert_eq!(p.replicas.change, ReplicaChange::None);
    assert_eq!(p.replicas.status.replicas, 1, "status is still computed");
}

#[test]
fn failed_and_terminating_pods_are_replaced_at_once() {
    let pods = vec![
        owned("a").build(),
        owned("b").build(),
        owned("failed").phase("Failed").build(),
        owned("leaving").deleting().build(),
    ];
    let p = plan(&rs(3), pods, true);
    assert_eq!(p.replicas.change, ReplicaChange::Create(1));
    assert_eq!(p.replicas.status.replicas, 2);
    assert_eq!(p.replicas.status.terminating_replicas, Some(1));
}

#[test]
fn scales_down_not_ready_pods_first() {
    let pods = vec![
        owned("a").build(),
        owned("b").not_ready().build(),
        owned("c").build(),
    ];
    let p = plan(&rs(2), pods, true);
    match p.replicas.change {
        ReplicaChange::Delete(d) => assert_eq!(names(&d), ["b"]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn adopts_matching_orphans_and_releases_pods_that_stopped_matching() {
    let orphan = pod("orphan")
        .label("app", "web")
        .node("n1")
        .ready_at(ts(1))
        .build();
    let relabelled = pod("relabelled")
        .label("app", "other")
        .owner("ReplicaSet", "web", RS_UID)
        .build();
    let p = plan(&rs(2), vec![owned("a").build(), orphan, relabelled], true);
    assert_eq!(names(&p.claims.adopt), ["orphan"]);
    assert_eq!(names(&p.claims.release), ["relabelled"]);
    assert_eq!(
        p.replicas.change,
        ReplicaChange::None,
        "the adopted orphan counts"
    );
    assert_eq!(p.replicas.status.replicas, 2);
}

#[test]
fn never_touches_pods_controlled_by_someone_else() {
    let theirs = pod("theirs")
        .label("app", "web")
        .owner("Job", "j", "job-uid")
        .ready_at(ts(1))
        .build();
    let p = plan(&rs(1), vec![theirs], true);
    assert!(p.claims.adopt.is_empty() && p.claims.release.is_empty());
    assert_eq!(p.replicas.change, ReplicaChange::Create(1));
}

#[test]
fn status_counts_fully_labeled_ready_and_available_pods() {
    let mut r = rs(3);
    r.spec.as_mut().unwrap().min_ready_seconds = Some(10);
    let pods = vec![
        owned("old").ready_at(ts(100)).build(),
        owned("fresh").ready_at(ts(9_995)).build(),
        pod("partial")
            .label("app", "web")
            .owner("ReplicaSet", "web", RS_UID)
            .not_ready()
            .build(),
    ];
    let p = plan(&r, pods, true);
    let s = &p.replicas.status;
    assert_eq!(
        (
            s.replicas,
            s.fully_labeled_replicas,
            s.ready_replicas,
            s.available_replicas
        ),
        (3, Some(2), Some(2), Some(1))
    );
    // "fresh" becomes available 10 s after 9,995, strictly after: 5.001 s from now.
    assert_eq!(p.replicas.requeue_after, Some(Duration::from_millis(5001)));
}

#[test]
fn replica_failure_is_added_once_and_removed_after_a_clean_sync() {
    let r = rs(3);
    let p = plan(&r, vec![owned("a").build()], true);
    let failed = p
        .replicas
        .status_at(&r, Some("pods \"web-x\" is forbidden: exceeded quota"), ts(50));
    let c = crate::status::condition(&failed, REPLICA_FAILURE).expect("condition");
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("True", Some("FailedCreate"))
    );

    // A second failure keeps the first condition as it was.
    let mut r2 = r.clone();
    r2.status = Some(failed.clone());
    let again = plan(&r2, vec![owned("a").build()], true)
        .replicas
        .status_at(&r2, Some("other"), ts(60));
    assert_eq!(again.conditions, failed.conditions);
    // A sync without error removes it.
    let clean = plan(&r2, vec![owned("a").build()], true).replicas.status;
    assert!(crate::status::condition(&clean, REPLICA_FAILURE).is_none());
}

#[test]
fn replica_failure_on_scale_down_is_failed_delete() {
    let r = rs(1);
    let p = plan(&r, vec![owned("a").build(), owned("b").build()], true);
    let s = p.replicas.status_at(&r, Some("boom"), ts(1));
    let c: &ReplicaSetCondition = crate::status::condition(&s, REPLICA_FAILURE).unwrap();
    assert_eq!(c.reason.as_deref(), Some("FailedDelete"));
}

#[test]
fn an_invalid_selector_is_an_error_naming_the_replicaset() {
    let mut r = rs(1);
    r.spec.as_mut().unwrap().selector.match_expressions = Some(vec![LabelSelectorRequirement {
        key: "a".into(),
        operator: "In".into(),
        values: Some(vec![]),
    }]);
    let input = SyncInput {
        rs: &r,
        expectations_satisfied: true,
        candidates: &[],
        burst_replicas: 500,
        now: ts(0),
        features: controller::FeatureGates::default(),
    };
    let err = plan_sync(&input, Vec::new).unwrap_err();
    assert!(err.to_string().contains("ns/web"), "{err}");
}

#[test]
fn unchanged_status_is_not_written() {
    let mut r = rs(1);
    let p = plan(&r, vec![owned("a").build()], true);
    assert!(needs_write(&r, &p.replicas.status), "nothing written yet");
    let mut written = p.replicas.status.clone();
    written.observed_generation = Some(1);
    // The API server omits zero counts.
    written.terminating_replicas = Some(0);
    r.status = Some(written);
    let p = plan(&r, vec![owned("a").build()], true);
    assert!(!needs_write(&r, &p.replicas.status));
    r.metadata.generation = Some(2);
    assert!(
        needs_write(&r, &p.replicas.status),
        "a new generation must be observed"
    );
}

#[test]
fn deletion_age_ratio_is_each_chosen_ready_pods_age_over_the_youngest_ready_pods() {
    let now = ts(10_000);
    let old = Arc::new(owned("old").created_at(ts(9_900)).build());
    let young = Arc::new(owned("young").created_at(ts(9_990)).build());
    let unready = Arc::new(owned("unready").created_at(ts(9_999)).not_ready().build());
    let active = vec![old.clone(), young, unready.clone()];
    // 100 s over 10 s; the unready pod is not reported.
    assert_eq!(
        crate::plan::deletion_age_ratios(&active, &[old, unready], now),
        [10.0]
    );
}

#[test]
fn adoptions_that_find_the_pod_gone_are_decided_again_without_it() {
    let orphan = |name: &str| pod(name).label("app", "web").label("tier", "fe").node("n1");
    let named = |p: &SyncPlan, name: &str| -> Vec<String> {
        p.claims
            .adopt
            .iter()
            .filter(|o| o.metadata.name.as_deref() == Some(name))
            .filter_map(|o| o.metadata.uid.clone())
            .collect()
    };
    // Scale up: both orphans were counted; one vanished, so one pod is missing.
    let r = rs(3);
    let pods = vec![
        owned("a").build(),
        orphan("o1").ready_at(ts(1)).build(),
        orphan("o2").ready_at(ts(1)).build(),
    ];
    let p = plan(&r, pods, true);
    assert_eq!(p.replicas.change, ReplicaChange::None);
    let gone = named(&p, "o1");
    let again = p.replicas.without(&r, &gone);
    assert_eq!(again.change, ReplicaChange::Create(1));
    assert_eq!((again.active.len(), again.status.replicas), (2, 2));

    // Scale down: the not-ready orphan went first; without it, one delete fewer, never of it.
    let r = rs(1);
    let pods = vec![
        owned("a").build(),
        owned("b").build(),
        orphan("o").not_ready().build(),
    ];
    let p = plan(&r, pods, true);
    match &p.replicas.change {
        ReplicaChange::Delete(d) => assert!(d.len() == 2 && names(d).contains(&"o".to_owned())),
        other => panic!("{other:?}"),
    }
    let gone = named(&p, "o");
    match p.replicas.without(&r, &gone).change {
        ReplicaChange::Delete(d) => assert!(d.len() == 1 && !names(&d).contains(&"o".to_owned())),
        other => panic!("{other:?}"),
    }

    // Nothing is decided while expectations are pending, with or without the pod.
    let p = plan(&rs(3), vec![orphan("o1").build()], false);
    let gone = named(&p, "o1");
    assert_eq!(p.replicas.without(&rs(3), &gone).change, ReplicaChange::None);
}

#[test]
fn the_availability_requeue_picks_the_pod_at_the_status_time_and_measures_from_now() {
    let mut r = rs(3);
    r.spec.as_mut().unwrap().min_ready_seconds = Some(10);
    let p = plan(&r, vec![owned("fresh").ready_at(ts(9_995)).build()], true);
    let s = p.replicas.status_at(&r, None, ts(10_000));
    // Due at 10,005 s (available strictly after).
    assert_eq!(
        p.replicas.requeue_at(&r, &s, ts(10_000), ts(10_003)),
        Some(Duration::from_millis(2001))
    );
    assert_eq!(
        p.replicas.requeue_at(&r, &s, ts(10_000), ts(10_010)),
        Some(Duration::ZERO),
        "already due: at once"
    );
    // Ready with no transition time: minReadySeconds, the safeguard.
    let mut no_time = owned("no-time").build();
    no_time.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time = None;
    let p = plan(&r, vec![no_time], true);
    let s = &p.replicas.status;
    assert_eq!((s.ready_replicas, s.available_replicas), (Some(1), Some(0)));
    assert_eq!(p.replicas.requeue_after, Some(Duration::from_secs(10)));
}

#[test]
fn feature_gates_switch_the_deletion_cost_and_terminating_replicas_off() {
    use controller::{FeatureGates, pod_util::POD_DELETION_COST_ANNOTATION};
    let pods: Vec<Arc<Pod>> = vec![
        owned("cheap")
            .ready_at(ts(100))
            .annotation(POD_DELETION_COST_ANNOTATION, "-5")
            .build(),
        owned("flappy").ready_at(ts(100)).restarts(3).build(),
        owned("leaving").deleting().build(),
    ]
    .into_iter()
    .map(Arc::new)
    .collect();
    let rs = rs(1);
    let run = |features: FeatureGates| {
        let input = SyncInput {
            rs: &rs,
            expectations_satisfied: true,
            candidates: &pods,
            burst_replicas: BURST_REPLICAS,
            now: ts(10_000),
            features,
        };
        plan_sync(&input, Vec::new).expect("valid")
    };
    let on = run(FeatureGates::default());
    assert_eq!(on.replicas.status.terminating_replicas, Some(1));
    let ReplicaChange::Delete(chosen) = &on.replicas.change else {
        panic!("a scale-down")
    };
    assert_eq!(chosen[0].metadata.name.as_deref(), Some("cheap"));
    let off = run(FeatureGates {
        pod_deletion_cost: false,
        deployment_replica_set_terminating_replicas: false,
        ..FeatureGates::default()
    });
    assert_eq!(off.replicas.status.terminating_replicas, None);
    let ReplicaChange::Delete(chosen) = &off.replicas.change else {
        panic!("a scale-down")
    };
    assert_eq!(
        chosen[0].metadata.name.as_deref(),
        Some("flappy"),
        "restarts decide without the cost"
    );
}
