//! `writes` against kube's `Api`: the same requests on the wire, the same errors, and only the
//! name and resourceVersion decoded from the answer.

use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
use kcm_testing::{ApiServer, Verb};
use kube::Api;
use serde_json::{Value, json};

use super::*;

/// A pod the API server returned: managedFields, spec, status and all.
const RECORDED: &str = include_str!("../../../benches/fixtures/pod.json");

/// A server holding pod `p` and ReplicaSet `web` in namespace `ns`, which the writes below change.
fn server() -> ApiServer {
    let server = ApiServer::new();
    server.insert(&crate::testing::pod("p").build_full());
    server.insert(&kcm_testing::replica_set("web").build());
    server
}

fn recorded_pod() -> Pod {
    serde_json::from_str(RECORDED).expect("fixture")
}

fn recorded() -> Value {
    serde_json::from_str(RECORDED).expect("fixture")
}

#[test]
fn only_the_name_and_resource_version_are_read_from_a_full_answer() {
    let full = recorded_pod();
    let written: Written = serde_json::from_str(RECORDED).expect("decodes");
    assert_eq!(written, Written::of(&full.metadata));
    assert!(written.metadata.name.is_some() && written.metadata.resource_version.is_some());
}

#[tokio::test]
async fn every_write_sends_what_kubes_api_sends() {
    // Created in the namespace it is sent to, as the API server requires.
    let mut pod = recorded_pod();
    pod.metadata.namespace = Some("ns".into());
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some("web".into()),
            ..ObjectMeta::default()
        },
        ..ReplicaSet::default()
    };
    let (ours_server, theirs_server) = (server(), server());
    let ours = ours_server.client();
    let pods: Api<Pod> = Api::namespaced(theirs_server.client(), "ns");
    let sets: Api<ReplicaSet> = Api::namespaced(theirs_server.client(), "ns");
    let labels = Patch::Strategic(json!({"metadata": {"labels": {"a": "b"}}}));

    create(&ours, "ns", &pod).await.expect("create");
    pods.create(&PostParams::default(), &pod).await.expect("create");
    replace(&ours, "ns", "web", &rs).await.expect("replace");
    sets.replace("web", &PostParams::default(), &rs)
        .await
        .expect("replace");
    replace_status(&ours, "ns", "web", &rs).await.expect("status");
    sets.replace_status("web", &PostParams::default(), &rs)
        .await
        .expect("status");
    patch::<Pod, _>(&ours, "ns", "p", &PatchParams::default(), &labels)
        .await
        .expect("patch");
    pods.patch("p", &PatchParams::default(), &labels)
        .await
        .expect("patch");
    delete::<Pod>(&ours, "ns", "p", &DeleteParams::default())
        .await
        .expect("delete");
    pods.delete("p", &DeleteParams::default()).await.expect("delete");

    let (ours, theirs) = (ours_server.requests(), theirs_server.requests());
    assert_eq!(ours.len(), 5);
    assert_eq!(ours, theirs);
    assert_eq!(ours[0].uri, "/api/v1/namespaces/ns/pods?");
    assert_eq!(ours[2].uri, "/apis/apps/v1/namespaces/ns/replicasets/web/status?");
}

#[tokio::test]
async fn a_write_returns_the_generated_name_and_the_new_resource_version() {
    let server = ApiServer::new();
    server.on(Verb::Create, "pods").answer(201, recorded());
    let written = create(&server.client(), "ns", &recorded_pod())
        .await
        .expect("created");
    let full = recorded_pod();
    assert_eq!(written.metadata.name, full.metadata.name);
    assert_eq!(written.metadata.resource_version, full.metadata.resource_version);
}

#[tokio::test]
async fn a_deletion_answered_with_a_status_or_the_object_succeeds() {
    let gone = json!({"kind": "Status", "apiVersion": "v1", "status": "Success"});
    for answer in [recorded(), gone] {
        let server = server();
        server.on(Verb::Delete, "pods").answer(200, answer);
        delete::<Pod>(&server.client(), "ns", "p", &DeleteParams::default())
            .await
            .expect("deleted");
    }
}

#[tokio::test]
async fn a_refused_write_is_kubes_api_error() {
    let server = ApiServer::new();
    server
        .on(Verb::Create, "pods")
        .fail(404, "NotFound", "pods \"p\" not found");
    let client = server.client();
    let err = delete::<Pod>(&client, "ns", "p", &DeleteParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"),
        "{err}"
    );
    let err = create(&client, "ns", &recorded_pod()).await.unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 404), "{err}");
}
