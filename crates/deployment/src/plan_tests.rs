use std::sync::Arc;

use controller::compact_pod::Pod;
use k8s_openapi::api::apps::v1::ReplicaSet;

use super::*;
use crate::{conditions, fixtures::*, replica_sets as rsu, rollback as rb, work::REASON_SCALING};

fn no_pods(_: &str) -> Vec<Arc<Pod>> {
    Vec::new()
}

fn plan(d: &Deployment, rss: &[Arc<ReplicaSet>]) -> SyncPlan {
    plan_sync(&SyncInput {
        deployment: d,
        replica_sets: rss,
        pods_of: &no_pods,
        now: ts(1000),
    })
    .unwrap()
}

fn actions(p: SyncPlan) -> Actions {
    match p.decision {
        Decision::Sync(a) => *a,
        Decision::SelectingAll { .. } => panic!("not a sync"),
    }
}

fn reasons(a: &Actions) -> Vec<&str> {
    a.create
        .iter()
        .chain(&a.updates)
        .flat_map(|w| w.events.iter())
        .chain(&a.events)
        .chain(
            a.rollback
                .iter()
                .flat_map(|(_, e)| e.before.iter().chain(&e.after)),
        )
        .map(|e| &*e.reason)
        .collect()
}

#[test]
fn first_sync_creates_the_new_replica_set_and_records_the_revision() {
    let d = deployment("foo", 3).rolling(int(1), int(0)).deadline(600).build();
    let a = actions(plan(&d, &[]));
    let created = a.create.as_ref().unwrap();
    assert_eq!(
        rsu::replicas(&created.rs),
        3,
        "room for 4, never above spec.replicas"
    );
    let ann = created.rs.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann[crate::annotations::REVISION], "1");
    assert_eq!(ann[crate::annotations::DESIRED_REPLICAS], "3");
    assert_eq!(ann[crate::annotations::MAX_REPLICAS], "4");
    let name = rsu::name(&created.rs).to_owned();
    assert_eq!(
        created.events[0].message,
        format!("Scaled up replica set {name} from 0 to 3")
    );
    let status_d = a.status.as_ref().unwrap();
    assert_eq!(
        status_d.metadata.annotations.as_ref().unwrap()[crate::annotations::REVISION],
        "1"
    );
    let p = conditions::get(status_d.status.as_ref().unwrap(), conditions::PROGRESSING).unwrap();
    assert_eq!(conditions::reason(p), conditions::NEW_REPLICA_SET);
    assert_eq!(
        p.message.as_deref(),
        Some(format!("Created new replica set \"{name}\"").as_str())
    );
    assert!(a.before_create.is_some());
}

#[test]
fn an_up_to_date_deployment_plans_nothing() {
    let d = deployment("foo", 2)
        .annotation(crate::annotations::REVISION, "1")
        .build();
    let rss = [rs("new", 2, 1).revision("1").desired(2, 0).arc()];
    let a = actions(plan(&d, &rss));
    // The first sync writes the status; the second, over that status, nothing.
    let d2 = a.status.clone().unwrap();
    let a2 = actions(plan(&d2, &rss));
    assert!(a2.is_empty(), "{a2:?}");
}

#[test]
fn a_deleting_deployment_only_gets_its_status() {
    let d = deployment("foo", 5).deleting().build();
    let rss = [rs("new", 2, 1).revision("1").desired(2, 0).arc()];
    let a = actions(plan(&d, &rss));
    assert!(a.create.is_none() && a.updates.is_empty());
    assert_eq!(a.status.unwrap().status.unwrap().replicas, Some(2));
}

#[test]
fn a_paused_deployment_scales_but_does_not_roll_out() {
    let d = deployment("foo", 4).paused().image("v2").build();
    let rss = [rs("old", 2, 1).desired(2, 0).arc()];
    let a = actions(plan(&d, &rss));
    assert!(a.create.is_none(), "no new ReplicaSet while paused");
    assert_eq!(rsu::replicas(&a.updates[0].rs), 4);
    assert_eq!(reasons(&a), [REASON_SCALING]);
}

#[test]
fn a_scaling_event_comes_before_the_rollout() {
    let d = deployment("foo", 30).rolling(int(3), int(2)).image("v2").build();
    let rss = [
        rs("first", 8, 1).desired(10, 3).arc(),
        rs("second", 5, 2).image("v3").pods(5, 0).desired(10, 3).arc(),
    ];
    // The template changed again (v2), but the resize is handled first: no new ReplicaSet.
    let a = actions(plan(&d, &rss));
    assert!(a.create.is_none());
    let sizes: Vec<i32> = a.updates.iter().map(|u| rsu::replicas(&u.rs)).collect();
    assert_eq!(sizes, [20, 13]);
}

fn rollback_case(to: &str, current_image: &str) -> Actions {
    let d = deployment("foo", 1)
        .image(current_image)
        .annotation(crate::annotations::ROLLBACK_TO, to)
        .annotation(crate::annotations::REVISION, "2")
        .annotation("change-cause", "edit")
        .build();
    let rss = [
        rs("v1", 0, 1)
            .image("v1")
            .revision("1")
            .annotation("change-cause", "create")
            .arc(),
        rs("v2", 1, 2)
            .image("v2")
            .revision("2")
            .annotation("change-cause", "edit")
            .arc(),
    ];
    actions(plan(&d, &rss))
}

#[test]
fn rollback_to_a_revision_and_to_the_last() {
    for to in ["1", "0"] {
        let a = rollback_case(to, "v2");
        let (d, events) = a.rollback.as_ref().unwrap();
        assert!(events.before.is_empty());
        assert_eq!(events.after[0].reason, rb::REASON_ROLLBACK_DONE);
        assert_eq!(
            events.after[0].message,
            "Rolled back deployment \"foo\" to revision 1"
        );
        let c = &d
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0];
        assert_eq!(c.image.as_deref(), Some("v1"));
        let labels = d
            .spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap();
        assert!(!labels.contains_key(crate::hash::POD_TEMPLATE_HASH_LABEL));
        let ann = d.metadata.annotations.as_ref().unwrap();
        assert!(!ann.contains_key(crate::annotations::ROLLBACK_TO));
        assert_eq!(ann["change-cause"], "create", "annotations follow the template");
        assert!(a.updates.is_empty(), "rollback does nothing else");
    }
}

#[test]
fn rollback_not_found_and_unchanged_warn_and_clear_the_annotation() {
    // The warnings go with the write that clears the annotation, after any creation: a sync whose
    // creation fails tells them once it succeeds, not on every retry.
    let warned = |a: &Actions| -> Vec<(String, String)> {
        let (_, events) = a.rollback.as_ref().unwrap();
        assert!(events.after.is_empty());
        assert!(a.events.is_empty(), "{:?}", a.events);
        let told = events
            .before
            .iter()
            .map(|e| (e.reason.to_string(), e.message.clone()));
        told.collect()
    };
    let a = rollback_case("7", "v2");
    assert_eq!(
        warned(&a),
        [(
            rb::REASON_ROLLBACK_NOT_FOUND.to_owned(),
            rb::MSG_REVISION_NOT_FOUND.to_owned()
        )]
    );
    let (d, _) = a.rollback.unwrap();
    assert!(
        !d.metadata
            .annotations
            .unwrap()
            .contains_key(crate::annotations::ROLLBACK_TO)
    );
    let a = rollback_case("2", "v2");
    assert_eq!(
        warned(&a),
        [(
            rb::REASON_ROLLBACK_UNCHANGED.to_owned(),
            "The rollback revision contains the same template as current deployment \"foo\"".to_owned()
        )]
    );
    // No last revision: only one ReplicaSet.
    let d = deployment("foo", 1)
        .annotation(crate::annotations::ROLLBACK_TO, "0")
        .build();
    let a = actions(plan(&d, &[rs("v1", 1, 1).revision("1").arc()]));
    assert_eq!(warned(&a)[0].1, rb::MSG_NO_LAST_REVISION);
}

#[test]
fn recreate_scales_old_to_zero_waits_for_pods_then_creates_at_full_size() {
    let d = deployment("foo", 3).recreate().build();
    let old = rs("old", 3, 1).image("v0").revision("1").desired(3, 0).arc();
    let a = actions(plan(&d, std::slice::from_ref(&old)));
    assert!(a.create.is_none());
    assert_eq!(rsu::replicas(&a.updates[0].rs), 0);
    // Scaled to 0 but a pod still terminating: wait.
    let drained = rs("old", 0, 1)
        .image("v0")
        .revision("1")
        .desired(3, 0)
        .pods(0, 0)
        .arc();
    let running = |_: &str| vec![Arc::new(controller::testing::pod("p").phase("Running").build())];
    let p = plan_sync(&SyncInput {
        deployment: &d,
        replica_sets: std::slice::from_ref(&drained),
        pods_of: &running,
        now: ts(1000),
    })
    .unwrap();
    assert!(actions(p).create.is_none());
    let failed = |_: &str| vec![Arc::new(controller::testing::pod("p").phase("Failed").build())];
    let p = plan_sync(&SyncInput {
        deployment: &d,
        replica_sets: &[drained],
        pods_of: &failed,
        now: ts(1000),
    })
    .unwrap();
    let a = actions(p);
    let created = a.create.unwrap();
    assert_eq!(rsu::replicas(&created.rs), 3);
    assert_eq!(
        created.rs.metadata.annotations.unwrap()[crate::annotations::REVISION],
        "2"
    );
}

#[test]
fn history_cleanup_deletes_drained_old_replica_sets_lowest_revision_first() {
    // Upstream TestDeploymentController_cleanupDeploymentOrder, last case: revisions 3,1,4,2 with a
    // limit of 2 delete revisions 1 and 2.
    let d = deployment("foo", 1)
        .history(2)
        .annotation(crate::annotations::REVISION, "5")
        .build();
    let rss = [
        rs("foo-1", 0, 1).image("a").revision("3").pods(0, 0).arc(),
        rs("foo-2", 0, 2).image("b").revision("1").pods(0, 0).arc(),
        rs("foo-3", 0, 3).image("c").revision("4").pods(0, 0).arc(),
        rs("foo-4", 0, 4).image("d").revision("2").pods(0, 0).arc(),
        rs("new", 1, 5).revision("5").desired(1, 0).arc(),
    ];
    let d = d.clone();
    let mut status_d = d.clone();
    status_d.status = actions(plan(&d, &rss)).status.and_then(|d| d.status);
    let a = actions(plan(&status_d, &rss));
    let deleted: Vec<&str> = a.deletes.iter().map(|r| rsu::name(r)).collect();
    assert_eq!(deleted, ["foo-2", "foo-4"]);
    // One with pods, or not yet observed, or being deleted, is kept.
    let busy = [
        rs("foo-1", 0, 1).image("a").revision("1").pods(1, 1).arc(),
        rs("foo-2", 0, 2)
            .image("b")
            .revision("2")
            .generation(2, 1)
            .pods(0, 0)
            .arc(),
        rs("foo-3", 0, 3)
            .image("c")
            .revision("3")
            .deleting()
            .pods(0, 0)
            .arc(),
        rs("new", 1, 5).revision("5").desired(1, 0).arc(),
    ];
    let d0 = deployment("foo", 1)
        .history(0)
        .annotation(crate::annotations::REVISION, "5")
        .build();
    let mut s0 = d0.clone();
    s0.status = actions(plan(&d0, &busy)).status.and_then(|d| d.status);
    assert!(actions(plan(&s0, &busy)).deletes.is_empty());
}

#[test]
fn adopts_matching_orphans_releases_mismatches_and_ignores_others() {
    let d = deployment("foo", 1).build();
    let orphan = rs("orphan", 1, 1).orphan().arc();
    let mut mismatched = rs("mismatched", 0, 1).image("x").build();
    mismatched.metadata.labels = Some([("foo".to_owned(), "baz".to_owned())].into());
    let mut foreign = rs("foreign", 1, 1).build();
    foreign.metadata.owner_references.as_mut().unwrap()[0].uid = "other".into();
    let p = plan(&d, &[orphan, Arc::new(mismatched), Arc::new(foreign)]);
    let names = |v: &[Arc<ReplicaSet>]| v.iter().map(|r| rsu::name(r).to_owned()).collect::<Vec<_>>();
    assert_eq!(names(&p.claims.adopt), ["orphan"]);
    assert_eq!(names(&p.claims.release), ["mismatched"]);
    // The adopted one is the new ReplicaSet: nothing is created.
    assert!(actions(p).create.is_none());
}

#[test]
fn empty_selector_only_records_the_generation() {
    let mut d = deployment("foo", 1).build();
    d.spec.as_mut().unwrap().selector = Default::default();
    let p = plan(&d, &[]);
    let Decision::SelectingAll { observed } = p.decision else {
        panic!()
    };
    assert_eq!(observed.unwrap().status.unwrap().observed_generation, Some(1));
}

#[test]
fn an_unknown_strategy_is_an_error_naming_the_deployment() {
    let mut d = deployment("foo", 1).build();
    d.spec.as_mut().unwrap().strategy.as_mut().unwrap().type_ = Some("BlueGreen".into());
    let err = plan_sync(&SyncInput {
        deployment: &d,
        replica_sets: &[],
        pods_of: &no_pods,
        now: ts(1000),
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Deployment ns/foo: deployment type \"BlueGreen\" isn't supported"
    );
}

#[test]
fn a_given_up_scale_down_still_writes_the_status() {
    // The old ReplicaSet reports more available pods than its size: no ReplicaSet is written, the
    // status is (upstream carries on to the history cleanup and the status after that case).
    let d = deployment("foo", 10).rolling(int(1), int(1)).build();
    let rss = [
        rs("old", 4, 1).image("old").revision("1").pods(6, 6).arc(),
        rs("new", 7, 2).revision("2").desired(10, 1).arc(),
    ];
    let a = actions(plan(&d, &rss));
    assert!(a.updates.is_empty(), "{:?}", a.updates);
    let status = a.status.unwrap().status.unwrap();
    assert_eq!(status.available_replicas, Some(13));
}

#[test]
fn terminating_replicas_only_with_its_feature_gate() {
    // Upstream leaves status.terminatingReplicas unset with DeploymentReplicaSetTerminatingReplicas
    // off, even where the sum is known (0 for a Deployment without ReplicaSets).
    let d = deployment("foo", 1).paused().build();
    let input = SyncInput {
        deployment: &d,
        replica_sets: &[],
        pods_of: &no_pods,
        now: ts(1000),
    };
    let status = |features| {
        let a = actions(plan_sync_with(&input, features).unwrap());
        a.status.unwrap().status.unwrap().terminating_replicas
    };
    let on = FeatureGates::default();
    assert!(
        on.deployment_replica_set_terminating_replicas,
        "on by default in 1.36"
    );
    assert_eq!(status(on), Some(0));
    let off = FeatureGates {
        deployment_replica_set_terminating_replicas: false,
        ..on
    };
    assert_eq!(status(off), None);
}

/// A Recreate Deployment scaled while two ReplicaSets are active and none has its template (a
/// rolling update switched to Recreate, scaled and given a new image while paused, then resumed): the
/// scale is a scaling event, which upstream's `scale` leaves to proportional scaling, and that only a
/// rolling Deployment does; so nothing is written, the next sync is the same scaling event, and the
/// Deployment stays where it is until its strategy or size changes again. Upstream does the same.
#[test]
fn recreate_scaled_with_two_active_replica_sets_stays_put_as_upstream() {
    let d = deployment("foo", 3).recreate().image("c").build();
    let old = rs("foo-a", 5, 100).image("a").desired(8, 1).arc();
    let older = rs("foo-b", 2, 50).image("b").desired(8, 1).arc();
    let a = actions(plan(&d, &[old, older]));
    assert!(
        a.create.is_none() && a.updates.is_empty() && a.deletes.is_empty(),
        "{a:?}"
    );
    let status = a
        .status
        .as_ref()
        .and_then(|d| d.status.as_ref())
        .expect("a status write");
    assert_eq!((status.replicas, status.updated_replicas), (Some(7), Some(0)));
}
