//! An API server in memory, answering kube's real `Client` through a `tower::service_fn`.
//!
//! A test seeds objects, hands the controller [`ApiServer::client`], and reads back what the server
//! holds and the requests it saw. Rules made with [`ApiServer::on`] make chosen requests fail, hang,
//! answer something else, drop the connection or take time, so error paths are reached through the answers production
//! would get.

mod faults;
mod patch;
mod request;
mod routes;
mod store;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use kube::{Client, Resource, client::Body};
use parking_lot::Mutex;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use controller::Clock as _;
pub use faults::When;
pub use request::{Request, Verb};

use crate::FakeClock;
use faults::{Outcome, Rule};
use store::{Key, Store};

/// The server; clones share it.
#[derive(Debug, Clone, Default)]
pub struct ApiServer {
    state: Arc<Mutex<State>>,
    clock: Arc<FakeClock>,
}

#[derive(Debug, Default)]
struct State {
    store: Store,
    rules: Vec<Rule>,
    log: Vec<Request>,
}

impl ApiServer {
    /// A server with no objects, its clock at the epoch.
    pub fn new() -> Self {
        Self::default()
    }

    /// A server whose creation and deletion timestamps, and whose slow writes, use `clock`.
    pub fn with_clock(clock: Arc<FakeClock>) -> Self {
        ApiServer {
            state: Arc::default(),
            clock,
        }
    }

    pub fn clock(&self) -> Arc<FakeClock> {
        self.clock.clone()
    }

    /// A client whose every request this server answers.
    pub fn client(&self) -> Client {
        let server = self.clone();
        let svc = tower::service_fn(move |req: http::Request<Body>| {
            let server = server.clone();
            async move { server.answer(req).await }
        });
        Client::new(svc, "default")
    }

    /// Stores `obj` as a test seeds it, without a request: its resourceVersion and uid are kept, so
    /// the objects a test hands its controller's caches match the server's, and later writes get
    /// higher versions.
    pub fn insert<K>(&self, obj: &K)
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        let mut value = serde_json::to_value(obj).expect("the object serializes");
        for (field, default) in [("apiVersion", K::api_version(&())), ("kind", K::kind(&()))] {
            if value[field].is_null() {
                value[field] = Value::String(default.into_owned());
            }
        }
        let key = key_of::<K>(
            obj.meta().namespace.as_deref().unwrap_or_default(),
            obj.meta().name.as_deref().unwrap_or_default(),
        );
        self.state.lock().store.seed(key, value);
    }

    pub fn get<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let state = self.state.lock();
        state.store.get(&key_of::<K>(namespace, name)).map(decode)
    }

    /// Every object of `K`'s resource, ordered by namespace and name.
    pub fn list<K>(&self) -> Vec<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let state = self.state.lock();
        state.store.list(&K::plural(&()), None).map(decode).collect()
    }

    /// Changes an object as another writer would (the kubelet setting a pod's phase): `change` runs
    /// on the stored object, which gets the next resourceVersion. Panics if there is none.
    pub fn modify<K>(&self, namespace: &str, name: &str, change: impl FnOnce(&mut K))
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let key = key_of::<K>(namespace, name);
        let mut state = self.state.lock();
        let mut obj: K = decode(state.store.get(&key).expect("the object to modify is stored"));
        change(&mut obj);
        let value = serde_json::to_value(&obj).expect("the object serializes");
        state.store.commit(key, value);
    }

    /// Removes an object at once, finalizers or not (a test's shortcut, not a DELETE).
    pub fn remove<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let removed = self.state.lock().store.remove(&key_of::<K>(namespace, name));
        removed.as_ref().map(decode)
    }

    /// Starts a rule for requests of `verb` to `resource` (plural, `pods`).
    pub fn on(&self, verb: Verb, resource: &str) -> When<'_> {
        When::new(self, verb, resource)
    }

    /// Drops every rule: requests are served again.
    pub fn clear_rules(&self) {
        self.state.lock().rules.clear();
    }

    /// Every request so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().log.clone()
    }

    /// The writes to `resource` so far, as `<verb> <name>` ([`Request::summary`]), failed ones included.
    pub fn writes(&self, resource: &str) -> Vec<String> {
        let state = self.state.lock();
        state
            .log
            .iter()
            .filter(|r| r.resource == resource && r.verb.is_some_and(Verb::writes))
            .map(Request::summary)
            .collect()
    }

    /// The answer to `req`, or the error of a connection dropped under it.
    async fn answer(&self, req: http::Request<Body>) -> Result<http::Response<Full<Bytes>>, std::io::Error> {
        let (parts, body) = req.into_parts();
        let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let (code, body) = match self.decide(Request::parse(&parts, &body)) {
            Reply::Answer(code, body) => (code, body),
            Reply::Hang => return std::future::pending().await,
            Reply::Dropped => return Err(std::io::ErrorKind::ConnectionReset.into()),
        };
        Ok(http::Response::builder()
            .status(code)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(serde_json::to_vec(&body).expect("json"))))
            .expect("a response"))
    }

    /// Logs `request` and answers it, unless a rule says it hangs or its connection drops.
    fn decide(&self, request: Request) -> Reply {
        let mut state = self.state.lock();
        let state = &mut *state;
        let index = state.log.len();
        state.log.push(request);
        let request = &state.log[index];
        let outcome = faults::decide(&mut state.rules, request, &self.clock);
        let lost = matches!(outcome, Outcome::LoseAnswer);
        let (code, body) = match outcome {
            Outcome::Hang => return Reply::Hang,
            Outcome::Drop => return Reply::Dropped,
            Outcome::Fail(refusal) => (refusal.code, refusal.to_json()),
            Outcome::Answer(code, body) => (code, body),
            Outcome::Serve | Outcome::LoseAnswer => {
                match routes::serve(&mut state.store, request, self.clock.now()) {
                    Ok(answer) => (answer.code, answer.body),
                    Err(refusal) => (refusal.code, refusal.to_json()),
                }
            }
        };
        let logged = &mut state.log[index];
        logged.code = Some(code);
        if (200..300).contains(&code) && logged.verb.is_some_and(Verb::writes) {
            logged.name = store::meta_str(&body, "name")
                .map(str::to_owned)
                .or(logged.name.take());
            logged.answered_version = store::meta_str(&body, "resourceVersion").map(str::to_owned);
        }
        if lost {
            Reply::Dropped
        } else {
            Reply::Answer(code, body)
        }
    }
}

/// What [`ApiServer::decide`] made of a request.
enum Reply {
    Answer(u16, Value),
    Hang,
    Dropped,
}

fn key_of<K: Resource<DynamicType = ()>>(namespace: &str, name: &str) -> Key {
    Key::new(&K::plural(&()), namespace, name)
}

fn decode<K: DeserializeOwned>(value: &Value) -> K {
    serde_json::from_value(value.clone()).expect("a stored object decodes as its type")
}

#[cfg(test)]
mod tests;
