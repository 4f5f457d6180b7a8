//! An in-memory API server for the executor's and the orphan worker's tests: Jobs and pods in one
//! shared state, written through [`PodControl`] (pods) and through a real `kube::Client` whose
//! transport is this state (a Job's GET and its status PUT), so requests go through kube's URL
//! building and decoding as against a real server. Writes can be made to fail or to never return
//! (the controller "dies" mid-sync when the test drops the sync's future).

use controller::compact_pod::{Pod, PodStatus};
use std::{
    collections::{BTreeMap, HashSet},
    convert::Infallible,
    sync::Arc,
};

use bytes::Bytes;
use controller::ControlError;
use controller::Owner;
use controller::PodControl;
use controller::Written;
use controller::pod_from_template;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full};
use k8s_openapi::{
    api::{
        batch::v1::{Job, JobStatus},
        core::v1::{PodStatus as FullPodStatus, PodTemplateSpec},
    },
    apimachinery::pkg::apis::meta::v1::{OwnerReference, Time},
};
use kube::{Client, client::Body, core::Status};
use parking_lot::Mutex;
use serde_json::Value;

use crate::fixtures::ts;

/// Everything the fake server holds, and how its writes misbehave.
#[derive(Debug, Default)]
pub struct World {
    pub jobs: BTreeMap<String, Job>,
    /// By `namespace/name`.
    pub pods: BTreeMap<String, Pod>,
    rv: u64,
    created: u64,
    /// Pod names whose patches fail with a 500.
    pub fail_patch: HashSet<String>,
    /// Pod names whose deletes fail with a 500.
    pub fail_delete: HashSet<String>,
    /// Pod creates allowed before every further one is forbidden (a quota).
    pub pod_quota: Option<usize>,
    /// Every pod patch hangs forever.
    pub hang_patches: bool,
    /// Status PUTs left before every further one hangs forever.
    pub hang_status_puts_after: Option<usize>,
    /// Every status PUT fails with a 500.
    pub fail_status_puts: bool,
    /// Every status written, in order.
    pub status_puts: Vec<JobStatus>,
    /// For every status PUT: the resourceVersion it was sent with, and the one it answered.
    pub status_put_versions: Vec<(Option<String>, String)>,
    /// Every pod write, as `verb name`.
    pub pod_writes: Vec<String>,
}

impl World {
    fn next_rv(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    pub fn job(&self, key: &str) -> Job {
        self.jobs[key].clone()
    }

    /// Pods still carrying the tracking finalizer.
    pub fn with_finalizer(&self) -> Vec<String> {
        self.pods
            .values()
            .filter(|p| crate::spec::has_tracking_finalizer(&p.metadata))
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    /// The kubelet's part: sets a pod's phase.
    pub fn set_phase(&mut self, name: &str, phase: &str) {
        let rv = self.next_rv();
        let p = self.pods.get_mut(&format!("ns/{name}")).expect("pod");
        p.status.get_or_insert_with(PodStatus::default).phase = Some(controller::compact_pod::intern(phase));
        p.metadata.resource_version = Some(rv);
    }

    pub fn add_pod(&mut self, pod: Pod) {
        let key = format!("ns/{}", pod.metadata.name.as_deref().unwrap_or(""));
        self.pods.insert(key, pod);
    }
}

/// The fake server; clones share it.
#[derive(Debug, Clone, Default)]
pub struct FakeCluster(pub Arc<Mutex<World>>);

fn api_error(verb: &'static str, key: &str, code: u16, reason: &str) -> ControlError {
    let status = Status::failure(reason, reason).with_code(code);
    ControlError::api(verb, key, kube::Error::Api(Box::new(status)))
}

impl FakeCluster {
    pub fn world(&self) -> parking_lot::MutexGuard<'_, World> {
        self.0.lock()
    }

    /// A client whose requests this fake answers.
    pub fn client(&self) -> Client {
        let state = self.0.clone();
        let svc = tower::service_fn(move |req: Request<Body>| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(answer(&state, req).await) }
        });
        Client::new(svc, "default")
    }

    fn create(
        &self,
        owner: &Owner,
        template: &PodTemplateSpec,
        prefix: Option<&str>,
    ) -> Result<Written, ControlError> {
        let mut pod = pod_from_template(owner, template)?;
        let mut w = self.0.lock();
        if let Some(left) = w.pod_quota.as_mut() {
            if *left == 0 {
                return Err(api_error("create pod", &owner.key(), 403, "Forbidden"));
            }
            *left -= 1;
        }
        w.created += 1;
        let name = format!(
            "{}{}",
            prefix.map_or_else(
                || pod.metadata.generate_name.clone().unwrap_or_default(),
                str::to_owned
            ),
            w.created
        );
        pod.metadata.name = Some(name.clone());
        pod.metadata.uid = Some(format!("uid-{name}"));
        pod.metadata.resource_version = Some(w.next_rv());
        pod.metadata.creation_timestamp = Some(Time(ts(1)));
        pod.status = Some(FullPodStatus {
            phase: Some("Pending".into()),
            ..FullPodStatus::default()
        });
        w.pod_writes.push(format!("create {name}"));
        w.add_pod(Pod::from(&pod));
        Ok(Written::of(&pod.metadata))
    }
}

impl PodControl for FakeCluster {
    async fn create_pod(&self, owner: &Owner, template: &PodTemplateSpec) -> Result<Written, ControlError> {
        self.create(owner, template, None)
    }

    async fn create_pod_with_generate_name(
        &self,
        owner: &Owner,
        template: &PodTemplateSpec,
        generate_name: &str,
    ) -> Result<Written, ControlError> {
        self.create(owner, template, Some(generate_name))
    }

    /// By name, as the real `PodControl` deletes (no UID precondition, as upstream's `DeletePod`).
    async fn delete_pod(&self, _: &Owner, pod: &Pod) -> Result<(), ControlError> {
        let key = format!("ns/{}", pod.metadata.name.as_deref().unwrap_or(""));
        let mut w = self.0.lock();
        let rv = w.next_rv();
        w.pod_writes
            .push(format!("delete {}", pod.metadata.name.as_deref().unwrap_or("")));
        if w.fail_delete.contains(pod.metadata.name.as_deref().unwrap_or("")) {
            return Err(api_error("delete pod", &key, 500, "InternalError"));
        }
        let Some(p) = w.pods.get_mut(&key) else {
            return Err(api_error("delete pod", &key, 404, "NotFound"));
        };
        if p.metadata.finalizers.as_ref().is_some_and(|f| !f.is_empty()) {
            p.metadata.deletion_timestamp = Some(Time(ts(50)));
            p.metadata.resource_version = Some(rv);
        } else {
            w.pods.remove(&key);
        }
        Ok(())
    }

    async fn patch_pod(&self, namespace: &str, name: &str, patch: &Value) -> Result<(), ControlError> {
        self.patch_pod_returning(namespace, name, patch).await.map(|_| ())
    }

    /// Answers the patched pod's name and new resourceVersion, as the real server does.
    async fn patch_pod_returning(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Option<Written>, ControlError> {
        let key = format!("{namespace}/{name}");
        if self.0.lock().hang_patches {
            futures::future::pending::<()>().await;
        }
        let mut w = self.0.lock();
        w.pod_writes.push(format!("patch {name}"));
        if w.fail_patch.contains(name) {
            return Err(api_error("patch pod", &key, 500, "InternalError"));
        }
        let rv = w.next_rv();
        let Some(p) = w.pods.get_mut(&key) else {
            return Err(api_error("patch pod", &key, 404, "NotFound"));
        };
        apply_patch(p, &patch["metadata"]);
        p.metadata.resource_version = Some(rv.clone());
        if p.metadata.deletion_timestamp.is_some() && p.metadata.finalizers.as_ref().is_none_or(Vec::is_empty)
        {
            w.pods.remove(&key);
        }
        Ok(Some(Written {
            metadata: controller::writes::WrittenMeta {
                name: Some(name.to_owned()),
                resource_version: Some(rv),
            },
        }))
    }
}

/// The strategic-merge patches this crate sends: adoption (controller reference and finalizer),
/// release, and removal of the tracking finalizer.
fn apply_patch(p: &mut Pod, meta: &Value) {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let finalizers = p.metadata.finalizers.get_or_insert_with(Vec::new);
    let gone = strings(&meta["$deleteFromPrimitiveList/finalizers"]);
    finalizers.retain(|f| !gone.contains(f));
    for f in strings(&meta["finalizers"]) {
        if !finalizers.contains(&f) {
            finalizers.push(f);
        }
    }
    for r in meta["ownerReferences"].as_array().into_iter().flatten() {
        let refs = p.metadata.owner_references.get_or_insert_with(Vec::new);
        if r["$patch"] == "delete" {
            refs.retain(|o| r["uid"].as_str() != Some(o.uid.as_str()));
        } else if let Ok(o) = serde_json::from_value::<OwnerReference>(r.clone()) {
            refs.push(o);
        }
    }
}

async fn answer(state: &Mutex<World>, req: Request<Body>) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    // /apis/batch/v1/namespaces/{ns}/jobs/{name}[/status]
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (Some(ns), Some(name)) = (parts.get(4), parts.get(6)) else {
        return json(404, &status(404, "NotFound"));
    };
    let key = format!("{ns}/{name}");
    if method == http::Method::PUT {
        let hang = {
            let mut w = state.lock();
            match w.hang_status_puts_after.as_mut() {
                Some(0) => true,
                Some(n) => {
                    *n -= 1;
                    false
                }
                None => false,
            }
        };
        if hang {
            futures::future::pending::<()>().await;
        }
        let sent: Job = serde_json::from_slice(&body).expect("a Job");
        let mut w = state.lock();
        if w.fail_status_puts {
            return json(500, &status(500, "InternalError"));
        }
        let rv = w.next_rv();
        let Some(job) = w.jobs.get_mut(&key) else {
            return json(404, &status(404, "NotFound"));
        };
        job.status = sent.status.clone();
        job.metadata.resource_version = Some(rv.clone());
        let out = serde_json::to_value(&*job).expect("json");
        w.status_put_versions
            .push((sent.metadata.resource_version.clone(), rv));
        w.status_puts.push(sent.status.unwrap_or_default());
        return json(200, &out);
    }
    match state.lock().jobs.get(&key) {
        Some(job) => json(200, &serde_json::to_value(job).expect("json")),
        None => json(404, &status(404, "NotFound")),
    }
}

fn status(code: u16, reason: &str) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": reason})
}

fn json(code: u16, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).expect("json"))))
        .expect("response")
}
