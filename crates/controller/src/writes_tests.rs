//! `writes` against kube's `Api`: the same requests on the wire, the same errors, and only the
//! name and resourceVersion decoded from the answer.

use std::{convert::Infallible, sync::Arc};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full};
use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
use kube::{Api, client::Body};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::*;

/// A pod the API server returned: managedFields, spec, status and all.
const RECORDED: &str = include_str!("../../../benches/fixtures/pod.json");

/// One request as it reached the server: method, path and query, content type, body.
type Seen = (String, String, Option<String>, Value);

/// What the server answers for a ReplicaSet: kube's `Api` decodes the answer as the type it wrote.
const REPLICA_SET: &str = r#"{"apiVersion": "apps/v1", "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "ns", "resourceVersion": "9"}}"#;

/// A server that answers every request with `code` and `answer` (ReplicaSet writes with
/// [`REPLICA_SET`]), recording what it received.
fn server(code: u16, answer: &str) -> (Client, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let answer = Bytes::from(answer.to_owned());
    let svc = tower::service_fn(move |req: Request<Body>| {
        let (log, answer) = (log.clone(), answer.clone());
        async move {
            let method = req.method().to_string();
            let uri = req.uri().to_string();
            let ctype = req
                .headers()
                .get(http::header::CONTENT_TYPE)
                .map(|v| v.to_str().unwrap_or_default().to_owned());
            let body = req
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let answer = if uri.contains("/replicasets/") {
                Bytes::from_static(REPLICA_SET.as_bytes())
            } else {
                answer
            };
            log.lock().push((method, uri, ctype, body));
            let res = Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Full::new(answer))
                .expect("response");
            Ok::<_, Infallible>(res)
        }
    });
    (Client::new(svc, "default"), seen)
}

fn not_found() -> String {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
        "message": "pods \"p\" not found", "code": 404})
    .to_string()
}

fn recorded_pod() -> Pod {
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
    let pod = recorded_pod();
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some("web".into()),
            ..ObjectMeta::default()
        },
        ..ReplicaSet::default()
    };
    let (ours, ours_seen) = server(200, RECORDED);
    let (theirs, theirs_seen) = server(200, RECORDED);
    let pods: Api<Pod> = Api::namespaced(theirs.clone(), "ns");
    let sets: Api<ReplicaSet> = Api::namespaced(theirs, "ns");
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

    let (ours, theirs) = (ours_seen.lock().clone(), theirs_seen.lock().clone());
    assert_eq!(ours.len(), 5);
    assert_eq!(ours, theirs);
    assert_eq!(ours[0].1, "/api/v1/namespaces/ns/pods?");
    assert_eq!(ours[2].1, "/apis/apps/v1/namespaces/ns/replicasets/web/status?");
}

#[tokio::test]
async fn a_write_returns_the_generated_name_and_the_new_resource_version() {
    let (client, _) = server(201, RECORDED);
    let written = create(&client, "ns", &recorded_pod()).await.expect("created");
    let full = recorded_pod();
    assert_eq!(written.metadata.name, full.metadata.name);
    assert_eq!(written.metadata.resource_version, full.metadata.resource_version);
}

#[tokio::test]
async fn a_deletion_answered_with_a_status_or_the_object_succeeds() {
    let gone = json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}).to_string();
    for answer in [RECORDED.to_owned(), gone] {
        let (client, _) = server(200, &answer);
        delete::<Pod>(&client, "ns", "p", &DeleteParams::default())
            .await
            .expect("deleted");
    }
}

#[tokio::test]
async fn a_refused_write_is_kubes_api_error() {
    let (client, _) = server(404, &not_found());
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
