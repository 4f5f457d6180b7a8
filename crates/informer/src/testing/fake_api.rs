//! A scripted API server for reflector and informer tests. It sits behind a real `kube::Client` (as a
//! tower service), so requests go through kube's URL building and response decoding exactly as
//! against a real server. Each LIST takes the next scripted list answer and each WATCH the next
//! scripted watch; a watch with nothing scripted stays open and silent. Exposed (feature `testing`)
//! for benches and other crates' tests; never used outside tests.

use std::{collections::VecDeque, convert::Infallible, sync::Arc};

use bytes::Bytes;
use futures::StreamExt as _;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::Frame;
use k8s_openapi::api::core::v1::Pod;
use kube::{Client, client::Body};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;

type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// A scripted answer.
#[derive(Debug)]
pub enum Answer {
    /// A JSON body with a status code.
    Json(u16, Value),
    /// A watch stream: each line sent is one event; dropping the sender ends the stream.
    Stream(mpsc::UnboundedReceiver<Value>),
    /// A watch stream of pre-encoded event lines (for benchmarks), which then stays open.
    Lines(Vec<Bytes>),
    /// A body as it is, with its status code and content type (protobuf answers).
    Raw {
        code: u16,
        content_type: &'static str,
        body: Bytes,
    },
    /// A watch stream sent as these chunks (protobuf frames, cut anywhere), which then ends.
    Chunks {
        content_type: &'static str,
        chunks: Vec<Bytes>,
    },
}

#[derive(Debug, Default)]
struct State {
    lists: VecDeque<Answer>,
    watches: VecDeque<Answer>,
    /// Every request as `LIST <query>` or `WATCH <query>`.
    requests: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct FakeApi {
    state: Arc<Mutex<State>>,
}

impl FakeApi {
    pub fn client(&self) -> Client {
        let state = self.state.clone();
        let svc = tower::service_fn(move |req: Request<Body>| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(answer(&state, &req)) }
        });
        Client::new(svc, "default")
    }

    pub fn list(&self, answer: Answer) {
        self.state.lock().lists.push_back(answer);
    }

    pub fn list_pods(&self, rv: &str, pods: &[Value]) {
        self.list(Answer::Json(
            200,
            json!({
                "apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": rv}, "items": pods
            }),
        ));
    }

    /// Scripts a watch and returns the sender that feeds its events.
    pub fn watch(&self) -> mpsc::UnboundedSender<Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.state.lock().watches.push_back(Answer::Stream(rx));
        tx
    }

    pub fn watch_answer(&self, answer: Answer) {
        self.state.lock().watches.push_back(answer);
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.lock().requests.clone()
    }
}

fn answer(state: &Mutex<State>, req: &Request<Body>) -> Response<ResponseBody> {
    let query = req.uri().query().unwrap_or_default().to_owned();
    let watch = query.split('&').any(|p| p == "watch=true");
    let mut s = state.lock();
    s.requests
        .push(format!("{} {query}", if watch { "WATCH" } else { "LIST" }));
    let next = if watch {
        s.watches.pop_front()
    } else {
        s.lists.pop_front()
    };
    drop(s);
    match next {
        Some(Answer::Json(code, body)) => json_response(code, &body),
        Some(Answer::Stream(rx)) => stream_response(rx),
        Some(Answer::Lines(lines)) => {
            let frames =
                futures::stream::iter(lines.into_iter().map(|l| Ok::<_, Infallible>(Frame::data(l))))
                    .chain(futures::stream::pending());
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(StreamBody::new(frames.boxed()).boxed_unsync())
                .expect("response")
        }
        Some(Answer::Raw {
            code,
            content_type,
            body,
        }) => Response::builder()
            .status(StatusCode::from_u16(code).expect("status"))
            .header("content-type", content_type)
            .body(http_body_util::Full::new(body).boxed_unsync())
            .expect("response"),
        Some(Answer::Chunks { content_type, chunks }) => {
            let frames =
                futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, Infallible>(Frame::data(c))));
            Response::builder()
                .status(200)
                .header("content-type", content_type)
                .body(StreamBody::new(frames.boxed()).boxed_unsync())
                .expect("response")
        }
        None if watch => {
            // Open and silent until the client goes away.
            let (tx, rx) = mpsc::unbounded_channel();
            std::mem::forget(tx);
            stream_response(rx)
        }
        None => json_response(
            500,
            &status(500, "InternalError", "nothing scripted for this LIST"),
        ),
    }
}

fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    let bytes = Bytes::from(serde_json::to_vec(body).expect("json"));
    Response::builder()
        .status(StatusCode::from_u16(code).expect("status"))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes).boxed_unsync())
        .expect("response")
}

fn stream_response(rx: mpsc::UnboundedReceiver<Value>) -> Response<ResponseBody> {
    let frames = futures::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        let mut line = serde_json::to_vec(&event).expect("json");
        line.push(b'\n');
        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(line))), rx))
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(StreamBody::new(frames.boxed()).boxed_unsync())
        .expect("response")
}

/// A `metav1.Status` failure body.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message})
}

/// A pod as the API server would send it.
pub fn pod(ns: &str, name: &str, rv: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "namespace": ns, "name": name, "resourceVersion": rv, "uid": format!("uid-{ns}-{name}"),
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1"}]
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    })
}

pub fn event(kind: &str, object: Value) -> Value {
    json!({"type": kind, "object": object})
}

pub fn bookmark(rv: &str, initial_events_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": rv});
    if initial_events_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"type": "BOOKMARK", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": meta}})
}

pub fn name_of(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}
