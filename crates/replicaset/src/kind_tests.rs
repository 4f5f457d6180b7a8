//! A ReplicationController seen as a ReplicaSet and its status written back, as upstream's
//! conversion adapters do.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{PodTemplateSpec, ReplicationControllerSpec},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};

use super::*;

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

fn rc(replicas: Option<i32>) -> ReplicationController {
    ReplicationController {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("u1".into()),
            generation: Some(3),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicationControllerSpec {
            replicas,
            min_ready_seconds: Some(5),
            selector: Some(labels()),
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels()),
                    ..ObjectMeta::default()
                }),
                spec: None,
            }),
        }),
        status: Some(ReplicationControllerStatus {
            replicas: 2,
            fully_labeled_replicas: Some(2),
            ready_replicas: Some(1),
            available_replicas: Some(1),
            observed_generation: Some(2),
            conditions: Some(vec![ReplicationControllerCondition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                reason: Some("FailedCreate".into()),
                message: Some("quota".into()),
                last_transition_time: Some(Time(Timestamp::UNIX_EPOCH)),
            }]),
        }),
    }
}

#[test]
fn a_replication_controller_is_seen_as_a_replica_set_with_match_labels() {
    let rc = rc(Some(3));
    let rs = rc.as_replica_set();
    let spec = rs.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.min_ready_seconds, Some(5));
    assert_eq!(spec.selector.match_labels, Some(labels()));
    assert_eq!(spec.template, rc.spec.as_ref().unwrap().template);
    assert_eq!(rs.metadata, rc.metadata);
    let status = rs.status.as_ref().unwrap();
    assert_eq!(
        (status.replicas, status.ready_replicas, status.observed_generation),
        (2, Some(1), Some(2))
    );
    assert_eq!(status.terminating_replicas, None);
    assert_eq!(
        status.conditions.as_ref().unwrap()[0].reason.as_deref(),
        Some("FailedCreate")
    );
    assert_eq!(rc.selector().unwrap(), rs.selector().unwrap());
}

#[test]
fn absent_replicas_count_as_one_as_the_api_server_defaults_them() {
    let rc = rc(None);
    assert_eq!(rc.as_replica_set().spec.as_ref().unwrap().replicas, Some(1));
}

#[test]
fn the_status_goes_back_field_by_field_and_the_spec_is_untouched() {
    let rc = rc(Some(3));
    let mut status = rc.as_replica_set().status.clone().unwrap();
    status.replicas = 3;
    status.available_replicas = Some(3);
    status.observed_generation = Some(3);
    status.terminating_replicas = Some(1);
    status.conditions = None;
    let written = rc.with_status(status);
    assert_eq!(written.spec, rc.spec);
    assert_eq!(written.metadata, rc.metadata);
    let s = written.status.unwrap();
    assert_eq!(
        (s.replicas, s.available_replicas, s.observed_generation),
        (3, Some(3), Some(3))
    );
    assert_eq!(s.conditions, None);
}

#[test]
fn a_replica_set_is_its_own_view() {
    let rs = ReplicaSet::default();
    assert!(matches!(rs.as_replica_set(), Cow::Borrowed(_)));
}

#[test]
fn only_replica_sets_plan_terminating_replicas() {
    let gates = FeatureGates::default();
    assert!(
        gates.deployment_replica_set_terminating_replicas,
        "on by default in 1.36"
    );
    assert!(ReplicaSet::plan_gates(gates).deployment_replica_set_terminating_replicas);
    assert!(!ReplicationController::plan_gates(gates).deployment_replica_set_terminating_replicas);
}
