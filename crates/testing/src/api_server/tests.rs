//! The server through kube's `Api`, as the controllers reach it.

use std::time::Duration;

use k8s_openapi::{
    api::{
        apps::v1::{ReplicaSet, ReplicaSetStatus},
        core::v1::{Event, Namespace, NamespaceStatus, Pod},
    },
    jiff::Timestamp,
};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

use super::*;
use crate::{pod, replica_set};

fn code(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("not an API error: {other}"),
    }
}

fn pods(server: &ApiServer) -> Api<Pod> {
    Api::namespaced(server.client(), "ns")
}

#[tokio::test]
async fn a_creation_gets_a_generated_name_a_uid_a_version_and_a_pending_phase() {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(Timestamp::from_second(5).unwrap())));
    let mut sent = pod("ignored").label("app", "web").build_full();
    sent.metadata.name = None;
    sent.metadata.uid = None;
    sent.metadata.generate_name = Some("web-".into());
    let created = pods(&server).create(&PostParams::default(), &sent).await.unwrap();
    let m = &created.metadata;
    assert_eq!(m.name.as_deref(), Some("web-1"));
    assert_eq!(m.uid.as_deref(), Some("uid-web-1"));
    assert_eq!(m.resource_version.as_deref(), Some("1"));
    assert_eq!(
        m.creation_timestamp.as_ref().unwrap().0,
        Timestamp::from_second(5).unwrap()
    );
    assert_eq!(created.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
    assert_eq!(server.writes("pods"), ["create web-1"]);
    assert_eq!(server.requests()[0].answered_version.as_deref(), Some("1"));
    let err = pods(&server)
        .create(&PostParams::default(), &created)
        .await
        .unwrap_err();
    assert_eq!(code(err), (409, "pods \"web-1\" already exists".into()));
}

#[tokio::test]
async fn a_namespace_being_deleted_refuses_creations_with_upstreams_cause() {
    let server = ApiServer::new();
    server.insert(&Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some("ns".into()),
            ..Default::default()
        },
        status: Some(NamespaceStatus {
            phase: Some("Terminating".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    let err = pods(&server)
        .create(&PostParams::default(), &pod("p").build_full())
        .await
        .unwrap_err();
    let control = controller::ControlError::api("create pod", "ns/p", err);
    assert!(control.is_namespace_terminating(), "{control}");
}

#[tokio::test]
async fn an_update_with_an_old_version_conflicts_and_status_goes_only_through_its_subresource() {
    let server = ApiServer::new();
    server.insert(
        &replica_set("web")
            .replicas(1)
            .resource_version("5")
            .generation(1)
            .build(),
    );
    let api: Api<ReplicaSet> = Api::namespaced(server.client(), "ns");
    let mut rs = api.get("web").await.unwrap();
    rs.spec.as_mut().unwrap().replicas = Some(3);
    rs.status = Some(ReplicaSetStatus {
        replicas: 7,
        ..Default::default()
    });
    let updated = api.replace("web", &PostParams::default(), &rs).await.unwrap();
    assert_eq!(
        updated.metadata.generation,
        Some(2),
        "a new spec is a new generation"
    );
    assert_eq!(updated.status, None, "status is not written through the object");
    let err = api.replace("web", &PostParams::default(), &rs).await.unwrap_err();
    assert_eq!(code(err).0, 409, "sent with version 5, the server holds 6");
    let status = api.replace_status("web", &PostParams::default(), &updated).await;
    assert_eq!(status.unwrap().metadata.resource_version.as_deref(), Some("7"));
    let mut with_status = updated.clone();
    with_status.metadata.resource_version = Some("7".into());
    with_status.status = rs.status.clone();
    let written = api
        .replace_status("web", &PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(written.status.unwrap().replicas, 7);
    assert_eq!(written.spec.unwrap().replicas, Some(3));
}

#[tokio::test]
async fn claims_merge_by_uid_and_a_patch_naming_another_uid_is_invalid() {
    let server = ApiServer::new();
    server.insert(&pod("p").build_full());
    let owner = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1",
        "controller": true, "blockOwnerDeletion": true});
    let strategic = |p| Patch::Strategic(p);
    let params = PatchParams::default();
    let adopt = json!({"metadata": {"ownerReferences": [owner], "uid": "uid-p", "finalizers": ["f"]}});
    let adopted = pods(&server)
        .patch("p", &params, &strategic(adopt))
        .await
        .unwrap();
    assert_eq!(adopted.metadata.owner_references.unwrap()[0].uid, "u1");
    assert_eq!(adopted.metadata.finalizers, Some(vec!["f".to_owned()]));
    let release = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "u1"}], "uid": "uid-p",
        "$deleteFromPrimitiveList/finalizers": ["f"]}});
    let released = pods(&server)
        .patch("p", &params, &strategic(release))
        .await
        .unwrap();
    assert_eq!(released.metadata.owner_references, Some(vec![]));
    assert_eq!(released.metadata.finalizers, Some(vec![]));
    let stale = json!({"metadata": {"uid": "uid-old"}});
    let err = pods(&server)
        .patch("p", &params, &strategic(stale))
        .await
        .unwrap_err();
    assert_eq!(code(err).0, 422);
    let err = pods(&server)
        .patch("gone", &params, &strategic(json!({})))
        .await
        .unwrap_err();
    assert_eq!(code(err), (404, "pods \"gone\" not found".into()));
}

#[tokio::test]
async fn a_delete_checks_its_preconditions_and_waits_for_the_last_finalizer() {
    let clock = Arc::new(FakeClock::at(Timestamp::from_second(50).unwrap()));
    let server = ApiServer::with_clock(clock);
    let mut held = pod("p").build_full();
    held.metadata.finalizers = Some(vec!["f".into()]);
    server.insert(&held);
    let other_uid = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("uid-q".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = pods(&server).delete("p", &other_uid).await.unwrap_err();
    assert_eq!(
        code(err).1,
        "Operation cannot be fulfilled on pods \"p\": Precondition failed: UID in precondition: uid-q, \
         UID in object meta: uid-p"
    );
    pods(&server).delete("p", &DeleteParams::default()).await.unwrap();
    let deleting: Pod = server.get("ns", "p").expect("held by its finalizer");
    assert_eq!(
        deleting.metadata.deletion_timestamp.unwrap().0,
        Timestamp::from_second(50).unwrap()
    );
    let unhold = Patch::Strategic(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["f"]}}));
    pods(&server)
        .patch("p", &PatchParams::default(), &unhold)
        .await
        .unwrap();
    assert!(server.get::<Pod>("ns", "p").is_none());
}

#[tokio::test]
async fn lists_select_by_labels_and_events_take_merge_patches() {
    let server = ApiServer::new();
    server.insert(&pod("a").label("app", "web").build_full());
    server.insert(&pod("b").label("app", "db").build_full());
    let web = pods(&server)
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(web.items.len(), 1);
    assert_eq!(
        pods(&server)
            .list(&ListParams::default().labels("app!=web,app"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let events: Api<Event> = Api::namespaced(server.client(), "ns");
    let mut event = Event::default();
    event.metadata.name = Some("p.1".into());
    event.count = Some(1);
    events.create(&PostParams::default(), &event).await.unwrap();
    let patched = events
        .patch("p.1", &PatchParams::default(), &Patch::Merge(json!({"count": 2})))
        .await
        .unwrap();
    assert_eq!(patched.count, Some(2));
}

#[tokio::test]
async fn rules_fail_after_a_quota_take_time_answer_instead_and_hang() {
    let clock = Arc::new(FakeClock::default());
    let server = ApiServer::with_clock(clock.clone());
    server.insert(&replica_set("web").build());
    server
        .on(Verb::Create, "pods")
        .after(1)
        .fail(403, "Forbidden", "exceeded quota");
    server.on(Verb::Create, "pods").takes(Duration::from_secs(5));
    let new = |name: &str| pod(name).build_full();
    pods(&server)
        .create(&PostParams::default(), &new("a"))
        .await
        .unwrap();
    let err = pods(&server)
        .create(&PostParams::default(), &new("b"))
        .await
        .unwrap_err();
    assert_eq!(code(err), (403, "exceeded quota".into()));
    assert_eq!(
        clock.now(),
        Timestamp::from_second(5).unwrap(),
        "the failed creation took no time"
    );
    assert_eq!(server.writes("pods"), ["create a", "create b"]);

    let sets: Api<ReplicaSet> = Api::namespaced(server.client(), "ns");
    server.on(Verb::Get, "replicasets").named("web").answer(
        200,
        json!({"apiVersion": "apps/v1",
        "kind": "ReplicaSet", "metadata": {"name": "other"}}),
    );
    assert_eq!(
        sets.get("web").await.unwrap().metadata.name.as_deref(),
        Some("other")
    );
    server.clear_rules();
    server
        .on(Verb::Update, "replicasets")
        .subresource("status")
        .hang();
    let rs = sets.get("web").await.unwrap();
    let params = PostParams::default();
    let put = sets.replace_status("web", &params, &rs);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), put)
            .await
            .is_err(),
        "hangs"
    );
    assert_eq!(server.requests().last().unwrap().code, None);
}

#[tokio::test]
async fn a_dropped_connection_is_a_transport_error_whether_or_not_the_write_was_applied() {
    let server = ApiServer::new();
    server
        .on(Verb::Create, "pods")
        .named("a")
        .times(1)
        .drop_connection();
    server.on(Verb::Create, "pods").named("b").lose_answer();
    let new = |name: &str| pod(name).build_full();
    let pp = PostParams::default();
    for name in ["a", "b"] {
        let err = pods(&server).create(&pp, &new(name)).await.unwrap_err();
        assert!(!matches!(err, kube::Error::Api(_)), "{err}");
    }
    assert!(server.get::<Pod>("ns", "a").is_none(), "dropped unserved");
    assert!(server.get::<Pod>("ns", "b").is_some(), "served, its answer lost");
    pods(&server).create(&pp, &new("a")).await.unwrap();
}

#[tokio::test]
async fn another_writer_changes_an_object_with_the_next_version() {
    let server = ApiServer::new();
    server.insert(&pod("p").build_full());
    server.modify::<controller::CompactPod>("ns", "p", |p| {
        p.status.get_or_insert_default().phase = Some("Running".into());
    });
    let seen: controller::CompactPod = server.get("ns", "p").unwrap();
    assert_eq!(seen.status.unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(seen.metadata.resource_version.as_deref(), Some("2"));
    assert_eq!(server.list::<Pod>().len(), 1);
    assert!(server.remove::<Pod>("ns", "p").is_some());
    assert!(server.list::<Pod>().is_empty());
}
