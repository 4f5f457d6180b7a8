//! `KubePodControl` against an in-memory API server behind a real `kube::Client`: what it sends, the
//! events it records and the errors it returns, compared with upstream's `RealPodControl`.

use std::collections::BTreeMap;

use kcm_testing::{ApiServer, Verb};
use serde_json::json;

use super::*;

fn owner() -> Owner {
    Owner {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        namespace: "ns".into(),
        name: "web-abc".into(),
        uid: "u1".into(),
        resource_version: "7".into(),
        deleting: false,
    }
}

fn labelled_template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("app".into(), "web".into())])),
            ..ObjectMeta::default()
        }),
        spec: None,
    }
}

/// A client of `server` for the pod control, and the recorder it records events in.
fn control(server: &ApiServer) -> (KubePodControl, EventRecorder) {
    let recorder = EventRecorder::in_memory();
    (KubePodControl::new(server.client(), recorder.clone()), recorder)
}

/// A server holding pod `name` with `uid`, at resourceVersion 41 (its next write is 42).
fn with_pod(name: &str, uid: &str) -> ApiServer {
    let server = ApiServer::new();
    let mut pod = crate::testing::pod(name).uid(uid).build_full();
    pod.metadata.resource_version = Some("41".into());
    server.insert(&pod);
    server
}

/// The (reason, message) of every event recorded.
fn events(recorder: &EventRecorder) -> Vec<(String, String)> {
    recorder
        .recorded()
        .into_iter()
        .map(|e| (e.reason.into_owned(), e.message))
        .collect()
}

#[test]
fn pod_from_template_copies_metadata_and_sets_the_controller_ref() {
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("app".into(), "web".into())])),
            annotations: Some(BTreeMap::from([("a".into(), "b".into())])),
            finalizers: Some(vec!["f".into()]),
            name: Some("ignored".into()),
            ..ObjectMeta::default()
        }),
        spec: None,
    };
    let pod = pod_from_template(&owner(), &template).unwrap();
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-abc-"));
    assert_eq!(pod.metadata.name, None);
    assert_eq!(pod.metadata.finalizers, Some(vec!["f".to_owned()]));
    let r = &pod.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (r.uid.as_str(), r.controller, r.block_owner_deletion),
        ("u1", Some(true), Some(true))
    );
}

#[tokio::test]
async fn a_template_without_labels_is_refused_with_upstreams_message_and_no_request() {
    let server = ApiServer::new();
    let (control, recorder) = control(&server);
    let err = control
        .create_pod(&owner(), &PodTemplateSpec::default())
        .await
        .unwrap_err();
    // The ReplicaFailure condition shows this text; the owner stays in the error for logs.
    assert_eq!(err.to_string(), "unable to create pods, no labels");
    assert!(matches!(&err, ControlError::NoLabels { owner } if owner == "ns/web-abc"));
    assert!(server.requests().is_empty());
    assert!(events(&recorder).is_empty(), "upstream records no event");
}

#[tokio::test]
async fn a_failed_create_returns_the_servers_message_and_records_error_creating() {
    let msg = "pods \"web-abc-x\" is forbidden: exceeded quota: q";
    let server = ApiServer::new();
    server.on(Verb::Create, "pods").fail(403, "Forbidden", msg);
    let (control, recorder) = control(&server);
    let err = control
        .create_pod(&owner(), &labelled_template())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        msg,
        "returned unwrapped, as upstream's createPods"
    );
    assert_eq!(
        events(&recorder),
        [(REASON_FAILED_CREATE.to_owned(), format!("Error creating: {msg}"))]
    );
    // On the owner as the sync read it, as client-go's GetReference names it.
    let on = &recorder.recorded()[0].object;
    assert_eq!(
        (
            on.kind.as_deref(),
            on.uid.as_deref(),
            on.resource_version.as_deref()
        ),
        (Some("ReplicaSet"), Some("u1"), Some("7"))
    );
}

#[tokio::test]
async fn a_delete_sends_no_uid_precondition_so_a_reused_name_is_deleted() {
    // The cache still shows the old pod; the server has a new one under the same name.
    let server = with_pod("web-abc-1", "uid-new");
    let (control, recorder) = control(&server);
    let cached = crate::testing::pod("web-abc-1").uid("uid-old").build();
    control.delete_pod(&owner(), &cached).await.expect("deleted");
    let seen = server.requests();
    assert_eq!(
        format!("{} {}", seen[0].method, seen[0].path()),
        "DELETE /api/v1/namespaces/ns/pods/web-abc-1"
    );
    assert!(seen[0].body["preconditions"].is_null(), "{}", seen[0].body);
    assert_eq!(
        events(&recorder),
        [(
            REASON_SUCCESSFUL_DELETE.to_owned(),
            "Deleted pod: web-abc-1".to_owned()
        )]
    );
}

#[tokio::test]
async fn a_failed_delete_is_wrapped_as_upstreams_and_records_error_deleting() {
    let msg = "etcdserver: request timed out";
    let server = with_pod("web-abc-1", "uid-1");
    server.on(Verb::Delete, "pods").fail(500, "InternalError", msg);
    let (control, recorder) = control(&server);
    let pod = crate::testing::pod("web-abc-1").uid("uid-1").build();
    let err = control.delete_pod(&owner(), &pod).await.unwrap_err();
    assert_eq!(err.to_string(), format!("unable to delete pods: {msg}"));
    assert_eq!(err.code(), Some(500));
    assert_eq!(
        events(&recorder),
        [(REASON_FAILED_DELETE.to_owned(), format!("Error deleting: {msg}"))]
    );
}

#[tokio::test]
async fn deleting_a_pod_already_gone_is_not_found_without_an_event() {
    let server = ApiServer::new();
    let (control, recorder) = control(&server);
    let pod = crate::testing::pod("web-abc-1").build();
    let err = control.delete_pod(&owner(), &pod).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(
        err.to_string(),
        "pods \"web-abc-1\" not found",
        "unwrapped, as upstream"
    );
    assert!(events(&recorder).is_empty());
}

#[tokio::test]
async fn a_patch_returns_the_patched_pod_for_the_consistency_store() {
    let server = with_pod("web-abc-1", "uid-1");
    let (control, _) = control(&server);
    let patched = control
        .patch_pod_returning("ns", "web-abc-1", &json!({"metadata": {"uid": "uid-1"}}))
        .await
        .expect("patched")
        .expect("the pod");
    assert_eq!(patched.metadata.resource_version.as_deref(), Some("42"));
    let err = control.patch_pod("ns", "gone", &json!({})).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
}
