//! `KubePodControl` against a fake API server behind a real `kube::Client`: what it sends, the
//! events it records and the errors it returns, compared with upstream's `RealPodControl`.

use std::{collections::BTreeMap, convert::Infallible, sync::Arc};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full};
use kube::client::Body;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::*;

fn owner() -> Owner {
    Owner {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        namespace: "ns".into(),
        name: "web-abc".into(),
        uid: "u1".into(),
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

/// Pods by name in namespace `ns`, every request seen, and a failure to answer with.
#[derive(Debug, Default)]
struct Server {
    pods: BTreeMap<String, Value>,
    /// `METHOD path` and the request body.
    seen: Vec<(String, Value)>,
    /// Every request fails with this code, reason and message.
    fail: Option<(u16, &'static str, &'static str)>,
}

#[derive(Debug, Clone, Default)]
struct FakeServer(Arc<Mutex<Server>>);

impl FakeServer {
    fn with_pod(self, name: &str, uid: &str) -> Self {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "ns", "name": name, "uid": uid, "resourceVersion": "7"}});
        self.0.lock().pods.insert(name.into(), pod);
        self
    }

    fn failing(self, code: u16, reason: &'static str, message: &'static str) -> Self {
        self.0.lock().fail = Some((code, reason, message));
        self
    }

    fn control(&self) -> (KubePodControl, EventRecorder) {
        let state = self.0.clone();
        let svc = tower::service_fn(move |req: Request<Body>| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(answer(&state, req).await) }
        });
        let recorder = EventRecorder::in_memory();
        (
            KubePodControl::new(Client::new(svc, "default"), recorder.clone()),
            recorder,
        )
    }

    fn seen(&self) -> Vec<(String, Value)> {
        self.0.lock().seen.clone()
    }
}

async fn answer(state: &Mutex<Server>, req: Request<Body>) -> Response<Full<Bytes>> {
    let line = format!("{} {}", req.method(), req.uri().path());
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut s = state.lock();
    s.seen.push((line.clone(), body.clone()));
    if let Some((code, reason, message)) = s.fail {
        return respond(code, &failure(code, reason, message));
    }
    let name = line.rsplit('/').next().unwrap_or_default().to_owned();
    match line.split_once(' ').map_or("", |(m, _)| m) {
        "POST" => {
            let mut pod = body;
            let name = format!(
                "{}1",
                pod["metadata"]["generateName"].as_str().unwrap_or_default()
            );
            pod["metadata"]["name"] = json!(name);
            pod["metadata"]["resourceVersion"] = json!("8");
            s.pods.insert(name, pod.clone());
            respond(201, &pod)
        }
        "DELETE" => {
            let Some(pod) = s.pods.get(&name).cloned() else {
                return respond(
                    404,
                    &failure(404, "NotFound", &format!("pods \"{name}\" not found")),
                );
            };
            // The API server's precondition check.
            let want = &body["preconditions"]["uid"];
            if !want.is_null() && *want != pod["metadata"]["uid"] {
                let msg = format!(
                    "Precondition failed: UID in precondition: {want}, UID in object meta: {}",
                    pod["metadata"]["uid"]
                );
                return respond(409, &failure(409, "Conflict", &msg));
            }
            s.pods.remove(&name);
            respond(200, &pod)
        }
        "PATCH" => {
            let Some(pod) = s.pods.get_mut(&name) else {
                return respond(
                    404,
                    &failure(404, "NotFound", &format!("pods \"{name}\" not found")),
                );
            };
            pod["metadata"]["resourceVersion"] = json!("42");
            let pod = pod.clone();
            respond(200, &pod)
        }
        _ => respond(405, &failure(405, "MethodNotAllowed", "unexpected request")),
    }
}

fn failure(code: u16, reason: &str, message: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message})
}

fn respond(code: u16, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).expect("json"))))
        .expect("response")
}

/// The (reason, message) of every event recorded.
fn events(recorder: &EventRecorder) -> Vec<(&'static str, String)> {
    recorder
        .recorded()
        .into_iter()
        .map(|e| (e.reason, e.message))
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
    let server = FakeServer::default();
    let (control, recorder) = server.control();
    let err = control
        .create_pod(&owner(), &PodTemplateSpec::default())
        .await
        .unwrap_err();
    // The ReplicaFailure condition shows this text; the owner stays in the error for logs.
    assert_eq!(err.to_string(), "unable to create pods, no labels");
    assert!(matches!(&err, ControlError::NoLabels { owner } if owner == "ns/web-abc"));
    assert!(server.seen().is_empty());
    assert!(events(&recorder).is_empty(), "upstream records no event");
}

#[tokio::test]
async fn a_failed_create_returns_the_servers_message_and_records_error_creating() {
    let msg = "pods \"web-abc-x\" is forbidden: exceeded quota: q";
    let server = FakeServer::default().failing(403, "Forbidden", msg);
    let (control, recorder) = server.control();
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
        [(REASON_FAILED_CREATE, format!("Error creating: {msg}"))]
    );
}

#[tokio::test]
async fn a_delete_sends_no_uid_precondition_so_a_reused_name_is_deleted() {
    // The cache still shows the old pod; the server has a new one under the same name.
    let server = FakeServer::default().with_pod("web-abc-1", "uid-new");
    let (control, recorder) = server.control();
    let cached = crate::testing::pod("web-abc-1").uid("uid-old").build();
    control.delete_pod(&owner(), &cached).await.expect("deleted");
    let seen = server.seen();
    assert_eq!(seen[0].0, "DELETE /api/v1/namespaces/ns/pods/web-abc-1");
    assert!(seen[0].1["preconditions"].is_null(), "{}", seen[0].1);
    assert_eq!(
        events(&recorder),
        [(REASON_SUCCESSFUL_DELETE, "Deleted pod: web-abc-1".to_owned())]
    );
}

#[tokio::test]
async fn a_failed_delete_is_wrapped_as_upstreams_and_records_error_deleting() {
    let msg = "etcdserver: request timed out";
    let server = FakeServer::default()
        .with_pod("web-abc-1", "uid-1")
        .failing(500, "InternalError", msg);
    let (control, recorder) = server.control();
    let pod = crate::testing::pod("web-abc-1").uid("uid-1").build();
    let err = control.delete_pod(&owner(), &pod).await.unwrap_err();
    assert_eq!(err.to_string(), format!("unable to delete pods: {msg}"));
    assert_eq!(err.code(), Some(500));
    assert_eq!(
        events(&recorder),
        [(REASON_FAILED_DELETE, format!("Error deleting: {msg}"))]
    );
}

#[tokio::test]
async fn deleting_a_pod_already_gone_is_not_found_without_an_event() {
    let server = FakeServer::default();
    let (control, recorder) = server.control();
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
    let server = FakeServer::default().with_pod("web-abc-1", "uid-1");
    let (control, _) = server.control();
    let patched = control
        .patch_pod_returning("ns", "web-abc-1", &json!({"metadata": {"uid": "uid-1"}}))
        .await
        .expect("patched")
        .expect("the pod");
    assert_eq!(patched.metadata.resource_version.as_deref(), Some("42"));
    let err = control.patch_pod("ns", "gone", &json!({})).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
}
