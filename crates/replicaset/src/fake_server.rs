//! A fake API server for the executor's tests: pods written through [`PodControl`], the ReplicaSet
//! read and its status written through a real `kube::Client` whose transport is this state (so
//! requests go through kube's URL building and decoding), and a clock that writes advance, so a
//! test can make a scale-up take time as it does against a real server.

use std::{
    collections::BTreeMap,
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use controller::{Clock, ControlError, Owner, PodControl, Written, pod_control::pod_from_template};
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full};
use k8s_openapi::{
    api::{
        apps::v1::{ReplicaSet, ReplicaSetStatus},
        core::v1::{Pod, PodTemplateSpec},
    },
    apimachinery::pkg::apis::meta::v1::OwnerReference,
    jiff::Timestamp,
};
use kube::{Client, client::Body, core::Status};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// Wall-clock time that the test and the fake's writes move on.
#[derive(Debug)]
pub struct FakeClock(AtomicI64);

impl FakeClock {
    pub fn at(t: Timestamp) -> Self {
        FakeClock(AtomicI64::new(t.as_millisecond()))
    }

    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).expect("a short duration");
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millisecond(self.0.load(Ordering::SeqCst)).expect("a valid time")
    }
}

/// What the fake server holds, and how long its writes take.
#[derive(Debug)]
pub struct World {
    pub rs: ReplicaSet,
    /// Pods by name (one namespace).
    pub pods: BTreeMap<String, Pod>,
    /// Every pod write, as `verb name`, in order.
    pub pod_writes: Vec<String>,
    /// Every status written, in order.
    pub status_puts: Vec<ReplicaSetStatus>,
    /// Deletes fail with this 500 message.
    pub fail_deletes: Option<&'static str>,
    /// The clock moves on by this much during each pod create and each status PUT.
    pub create_takes: Duration,
    pub put_takes: Duration,
    rv: u64,
    created: usize,
}

impl World {
    fn next_rv(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }
}

/// The fake server; clones share it.
#[derive(Debug, Clone)]
pub struct FakeServer {
    world: Arc<Mutex<World>>,
    pub clock: Arc<FakeClock>,
}

impl FakeServer {
    /// A server holding `rs`, with the clock at `now`; resourceVersions start at 100.
    pub fn new(rs: ReplicaSet, now: Timestamp) -> Self {
        let world = World {
            rs,
            pods: BTreeMap::new(),
            pod_writes: Vec::new(),
            status_puts: Vec::new(),
            fail_deletes: None,
            create_takes: Duration::ZERO,
            put_takes: Duration::ZERO,
            rv: 100,
            created: 0,
        };
        FakeServer {
            world: Arc::new(Mutex::new(world)),
            clock: Arc::new(FakeClock::at(now)),
        }
    }

    pub fn world(&self) -> parking_lot::MutexGuard<'_, World> {
        self.world.lock()
    }

    /// Stores a cached pod as the full object the server holds (the projection's fields are named as
    /// the full type's, so it decodes as one).
    pub fn add_pod(&self, pod: controller::CompactPod) {
        let pod: Pod =
            serde_json::from_value(serde_json::to_value(&pod).expect("serializes")).expect("a Pod");
        let name = pod.metadata.name.clone().expect("a named pod");
        self.world.lock().pods.insert(name, pod);
    }

    /// A client whose requests this fake answers (the ReplicaSet's GET and status PUT).
    pub fn client(&self) -> Client {
        let server = self.clone();
        let svc = tower::service_fn(move |req: Request<Body>| {
            let server = server.clone();
            async move { Ok::<_, Infallible>(server.answer(req).await) }
        });
        Client::new(svc, "default")
    }

    async fn answer(&self, req: Request<Body>) -> Response<Full<Bytes>> {
        let put = req.method() == http::Method::PUT;
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let mut w = self.world.lock();
        if put {
            let sent: ReplicaSet = serde_json::from_slice(&body).expect("a ReplicaSet");
            let status = sent.status.unwrap_or_default();
            w.status_puts.push(status.clone());
            w.rs.status = Some(status);
            w.rs.metadata.resource_version = Some(w.next_rv());
            self.clock.advance(w.put_takes);
        }
        json(200, &serde_json::to_value(&w.rs).expect("json"))
    }

    fn patched(&self, name: &str, patch: &Value) -> Result<Pod, ControlError> {
        let mut w = self.world.lock();
        w.pod_writes.push(format!("patch {name}"));
        let rv = w.next_rv();
        let Some(pod) = w.pods.get_mut(name) else {
            return Err(api_error("patch pod", name, 404, "NotFound", "not found"));
        };
        for r in patch["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Ok(o) = serde_json::from_value::<OwnerReference>(r.clone()) {
                pod.metadata.owner_references.get_or_insert_with(Vec::new).push(o);
            }
        }
        pod.metadata.resource_version = Some(rv);
        Ok(pod.clone())
    }
}

fn api_error(verb: &'static str, name: &str, code: u16, reason: &str, message: &str) -> ControlError {
    let status = Status::failure(message, reason).with_code(code);
    ControlError::api(verb, format!("ns/{name}"), kube::Error::Api(Box::new(status)))
}

impl PodControl for FakeServer {
    async fn create_pod(&self, owner: &Owner, template: &PodTemplateSpec) -> Result<Written, ControlError> {
        let mut pod = pod_from_template(owner, template)?;
        let mut w = self.world.lock();
        w.created += 1;
        let name = format!("{}{}", owner.name, w.created);
        pod.metadata.name = Some(name.clone());
        pod.metadata.uid = Some(format!("uid-{name}"));
        pod.metadata.resource_version = Some(w.next_rv());
        w.pod_writes.push(format!("create {name}"));
        let written = Written::of(&pod.metadata);
        w.pods.insert(name, pod);
        self.clock.advance(w.create_takes);
        Ok(written)
    }

    async fn delete_pod(&self, _: &Owner, pod: &controller::CompactPod) -> Result<(), ControlError> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let mut w = self.world.lock();
        w.pod_writes.push(format!("delete {name}"));
        if let Some(message) = w.fail_deletes {
            let status = Status::failure(message, "InternalError").with_code(500);
            return Err(ControlError::delete_pod(
                format!("ns/{name}"),
                kube::Error::Api(Box::new(status)),
            ));
        }
        match w.pods.remove(&name) {
            Some(_) => Ok(()),
            None => Err(api_error("delete pod", &name, 404, "NotFound", "not found")),
        }
    }

    async fn patch_pod(&self, _: &str, name: &str, patch: &Value) -> Result<(), ControlError> {
        self.patched(name, patch).map(|_| ())
    }

    async fn patch_pod_returning(
        &self,
        _: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Option<Written>, ControlError> {
        self.patched(name, patch).map(|p| Some(Written::of(&p.metadata)))
    }
}

fn json(code: u16, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            serde_json::to_vec(body).unwrap_or_else(|_| json!({}).to_string().into_bytes()),
        )))
        .expect("response")
}
