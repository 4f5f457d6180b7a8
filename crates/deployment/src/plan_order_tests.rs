//! The order ReplicaSets are taken in, whatever order the cache lists them in: old ones oldest
//! first (then by name) and the new one last, as upstream sorts its list by creation time before
//! anything else; writes in the order upstream makes them.

use std::sync::Arc;

use controller::compact_pod::Pod;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition};

use super::*;
use crate::{
    conditions::{self, REPLICA_FAILURE, TRUE},
    fixtures::*,
    replica_sets as rsu,
};

fn no_pods(_: &str) -> Vec<Arc<Pod>> {
    Vec::new()
}

fn actions(d: &Deployment, rss: &[Arc<ReplicaSet>]) -> Actions {
    let p = plan_sync(&SyncInput {
        deployment: d,
        replica_sets: rss,
        pods_of: &no_pods,
        now: ts(1000),
    })
    .unwrap();
    match p.decision {
        Decision::Sync(a) => *a,
        Decision::SelectingAll { .. } => panic!("not a sync"),
    }
}

fn updated(a: &Actions) -> Vec<&str> {
    a.updates.iter().map(|u| rsu::name(&u.rs)).collect()
}

#[test]
fn the_oldest_old_replica_sets_failure_is_reported() {
    let failing = |name: &str, created: i64| {
        let mut b = rs(name, 1, created).image(name).revision("1");
        b.0.status.as_mut().unwrap().conditions = Some(vec![ReplicaSetCondition {
            type_: REPLICA_FAILURE.into(),
            status: TRUE.into(),
            reason: Some("FailedCreate".into()),
            message: Some(format!("quota {name}")),
            last_transition_time: Some(conditions::now_time(ts(5))),
        }]);
        b.arc()
    };
    let d = deployment("foo", 2)
        .annotation(crate::annotations::REVISION, "2")
        .build();
    let rss = [
        failing("o2", 2),
        failing("o1", 1),
        rs("new", 2, 3).revision("2").desired(2, 0).arc(),
    ];
    let status = actions(&d, &rss).status.unwrap().status.unwrap();
    let c = conditions::get(&status, REPLICA_FAILURE).unwrap();
    assert_eq!(c.message.as_deref(), Some("quota o1"));
}

#[test]
fn a_rollback_to_a_shared_revision_takes_the_oldest() {
    let d = deployment("foo", 1)
        .image("v3")
        .annotation(crate::annotations::ROLLBACK_TO, "1")
        .annotation(crate::annotations::REVISION, "3")
        .build();
    let rss = [
        rs("p", 0, 2).image("p").revision("1").arc(),
        rs("q", 0, 1).image("q").revision("1").arc(),
        rs("cur", 1, 3).image("v3").revision("3").arc(),
    ];
    let a = actions(&d, &rss);
    let (d, _) = a.rollback.unwrap();
    let image = d.spec.unwrap().template.spec.unwrap().containers[0].image.clone();
    assert_eq!(image.as_deref(), Some("q"));
}

#[test]
fn recreate_scales_old_replica_sets_down_oldest_first() {
    let d = deployment("foo", 3).recreate().image("v2").build();
    let rss = [
        rs("x", 1, 2).image("x").revision("2").arc(),
        rs("y", 2, 1).image("y").revision("1").arc(),
    ];
    assert_eq!(updated(&actions(&d, &rss)), ["y", "x"]);
}

#[test]
fn proportional_scaling_writes_in_size_order() {
    // Growing: the largest first (newer first among equals), as upstream writes them.
    let d = deployment("foo", 20).build();
    let rss = [
        rs("old", 3, 1).image("old").revision("1").desired(10, 0).arc(),
        rs("new", 7, 2).revision("2").desired(10, 0).arc(),
    ];
    let a = actions(&d, &rss);
    assert_eq!(updated(&a), ["new", "old"]);
    let sizes: Vec<i32> = a.updates.iter().map(|u| rsu::replicas(&u.rs)).collect();
    assert_eq!(sizes, [14, 6]);
}
