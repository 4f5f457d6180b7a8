//! What each verb does to the store, with the API server's answers and refusals: optimistic
//! concurrency on updates, UID preconditions on deletes and patches, the status subresource, server
//! fields a client cannot set, and namespaces that refuse new objects while terminating.
//!
//! Not modelled: watches, field selectors, dry runs, server-side apply, JSON patches, admission, and
//! graceful pod deletion (a pod without finalizers goes at once, as if no kubelet held it).

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use serde_json::{Value, json};

use super::{
    patch,
    request::{Request, Verb},
    store::{Key, Store, meta_str},
};
use controller::NAMESPACE_TERMINATING_CAUSE;

/// Resources whose status is written only through `/status`, so writes of the object keep it.
const WITH_STATUS: &[&str] = &[
    "pods",
    "replicasets",
    "deployments",
    "statefulsets",
    "daemonsets",
    "jobs",
    "cronjobs",
    "namespaces",
    "nodes",
    "services",
];

/// Metadata the server owns: a write of the object cannot change it.
const SERVER_FIELDS: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
];

#[derive(Debug)]
pub(super) struct Answer {
    pub code: u16,
    pub body: Value,
}

/// A failure answered as a `Status`.
#[derive(Debug, Clone)]
pub(super) struct Refusal {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// A `details.causes[].reason`, e.g. `NamespaceTerminating`.
    pub cause: Option<&'static str>,
}

impl Refusal {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            reason: reason.to_owned(),
            message: message.into(),
            cause: None,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
            "code": self.code, "reason": self.reason, "message": self.message});
        if let Some(cause) = self.cause {
            status["details"] = json!({"causes": [{"reason": cause, "message": self.message}]});
        }
        status
    }
}

fn not_found(req: &Request) -> Refusal {
    let name = req.name.as_deref().unwrap_or_default();
    Refusal::new(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", req.qualified_resource()),
    )
}

/// 409 as the storage layer words it.
fn conflict(req: &Request, why: &str) -> Refusal {
    let name = req.name.as_deref().unwrap_or_default();
    let message = format!(
        "Operation cannot be fulfilled on {} \"{name}\": {why}",
        req.qualified_resource()
    );
    Refusal::new(409, "Conflict", message)
}

const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// Answers `req` from `store` at time `now`.
pub(super) fn serve(store: &mut Store, req: &Request, now: Timestamp) -> Result<Answer, Refusal> {
    let ok = |body| Ok(Answer { code: 200, body });
    match req.verb {
        Some(Verb::Create) => create(store, req, now),
        Some(Verb::Get) => ok(store.get(&key(req)).cloned().ok_or_else(|| not_found(req))?),
        Some(Verb::List) => ok(list(store, req)),
        Some(Verb::Update) => ok(update(store, req)?),
        Some(Verb::Patch) => ok(patch(store, req)?),
        Some(Verb::Delete) => ok(delete(store, req, now)?),
        Some(verb @ (Verb::Watch | Verb::DeleteCollection)) => Err(Refusal::new(
            405,
            "MethodNotAllowed",
            format!("the fake API server does not serve {verb:?}"),
        )),
        None => Err(Refusal::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )),
    }
}

fn key(req: &Request) -> Key {
    Key::new(
        &req.resource,
        req.namespace.as_deref().unwrap_or_default(),
        req.name.as_deref().unwrap_or_default(),
    )
}

fn time(t: Timestamp) -> Value {
    serde_json::to_value(Time(t)).expect("a time serializes")
}

fn create(store: &mut Store, req: &Request, now: Timestamp) -> Result<Answer, Refusal> {
    let mut obj = req.body.clone();
    if !obj.is_object() {
        return Err(Refusal::new(400, "BadRequest", "the body is not an object"));
    }
    if let Some(ns) = &req.namespace {
        if meta_str(&obj, "namespace").is_some_and(|sent| sent != ns) {
            let message =
                "the namespace of the provided object does not match the namespace sent on the request";
            return Err(Refusal::new(400, "BadRequest", message));
        }
        if terminating(store, ns) {
            let message = format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                req.resource,
                req.name.as_deref().unwrap_or_default()
            );
            let mut refusal = Refusal::new(403, "Forbidden", message);
            refusal.cause = Some(NAMESPACE_TERMINATING_CAUSE);
            return Err(refusal);
        }
    }
    let name = match (meta_str(&obj, "name"), meta_str(&obj, "generateName")) {
        (Some(name), _) => name.to_owned(),
        (None, Some(prefix)) => store.generate_name(prefix),
        (None, None) => return Err(Refusal::new(422, "Invalid", "name or generateName is required")),
    };
    let key = Key::new(&req.resource, req.namespace.as_deref().unwrap_or_default(), &name);
    if store.get(&key).is_some() {
        let message = format!("{} \"{name}\" already exists", req.qualified_resource());
        return Err(Refusal::new(409, "AlreadyExists", message));
    }
    let meta = &mut obj["metadata"];
    meta["name"] = json!(name);
    if let Some(ns) = &req.namespace {
        meta["namespace"] = json!(ns);
    }
    meta["uid"] = json!(store.new_uid(&name));
    meta["creationTimestamp"] = time(now);
    let meta = meta.as_object_mut().expect("metadata is an object");
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    if obj.get("spec").is_some() {
        obj["metadata"]["generation"] = json!(1);
    }
    // The API server resets what clients send as status, and the pod and namespace strategies start
    // them in their first phase.
    match req.resource.as_str() {
        "pods" => obj["status"] = json!({"phase": "Pending"}),
        "namespaces" => obj["status"] = json!({"phase": "Active"}),
        resource if WITH_STATUS.contains(&resource) => obj["status"] = json!({}),
        _ => {}
    }
    Ok(Answer {
        code: 201,
        body: store.commit(key, obj),
    })
}

fn terminating(store: &Store, namespace: &str) -> bool {
    store
        .get(&Key::new("namespaces", "", namespace))
        .is_some_and(|ns| {
            !ns["metadata"]["deletionTimestamp"].is_null() || ns["status"]["phase"] == "Terminating"
        })
}

fn list(store: &Store, req: &Request) -> Value {
    let selector = req.query("labelSelector").unwrap_or_default();
    let items: Vec<Value> = store
        .list(&req.resource, req.namespace.as_deref())
        .filter(|obj| selects(&selector, &obj["metadata"]["labels"]))
        .cloned()
        .collect();
    let api_version = if req.group.is_empty() {
        "v1".to_owned()
    } else {
        let version = req.uri.trim_start_matches('/').split('/').nth(2).unwrap_or("v1");
        format!("{}/{version}", req.group)
    };
    let kind = items
        .first()
        .and_then(|i| i["kind"].as_str())
        .map_or_else(|| "List".to_owned(), |k| format!("{k}List"));
    json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"resourceVersion": store.last_version().to_string()}, "items": items})
}

/// Equality-based label selectors (`a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-separated).
fn selects(selector: &str, labels: &Value) -> bool {
    selector.split(',').filter(|r| !r.is_empty()).all(|requirement| {
        if let Some((k, v)) = requirement.split_once("!=") {
            labels[k.trim()] != v.trim()
        } else if let Some((k, v)) = requirement.split_once('=') {
            labels[k.trim()] == v.trim_start_matches('=').trim()
        } else if let Some(k) = requirement.strip_prefix('!') {
            labels[k.trim()].is_null()
        } else {
            !labels[requirement.trim()].is_null()
        }
    })
}

/// The stored object, after checking the resourceVersion and uid a write names against it.
fn current(store: &Store, req: &Request, sent: &Value) -> Result<Value, Refusal> {
    let old = store.get(&key(req)).cloned().ok_or_else(|| not_found(req))?;
    if let Some(rv) = meta_str(sent, "resourceVersion")
        && Some(rv) != meta_str(&old, "resourceVersion")
    {
        return Err(conflict(req, MODIFIED));
    }
    Ok(old)
}

/// The written object from what the client sent: status only through `/status`, everything else
/// but status and the server's fields through the object, and a new generation for a new spec.
fn written(req: &Request, old: &Value, mut new: Value) -> Result<Value, Refusal> {
    match req.subresource.as_deref() {
        Some("status") => {
            let mut out = old.clone();
            out["status"] = new["status"].take();
            Ok(out)
        }
        Some(_) => Err(not_found(req)),
        None => {
            for field in SERVER_FIELDS {
                match old["metadata"].get(*field) {
                    Some(v) => new["metadata"][*field] = v.clone(),
                    None => {
                        new["metadata"].as_object_mut().map(|m| m.remove(*field));
                    }
                }
            }
            if WITH_STATUS.contains(&req.resource.as_str()) {
                new["status"] = old["status"].clone();
            }
            if new.get("spec") != old.get("spec") && !old["metadata"]["generation"].is_null() {
                let generation = old["metadata"]["generation"].as_i64().unwrap_or_default();
                new["metadata"]["generation"] = json!(generation + 1);
            }
            Ok(new)
        }
    }
}

fn update(store: &mut Store, req: &Request) -> Result<Value, Refusal> {
    let old = current(store, req, &req.body)?;
    if let Some(uid) = meta_str(&req.body, "uid")
        && Some(uid) != meta_str(&old, "uid")
    {
        let have = meta_str(&old, "uid").unwrap_or_default();
        let why = format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {have}");
        return Err(conflict(req, &why));
    }
    let new = written(req, &old, req.body.clone())?;
    Ok(store.commit(key(req), new))
}

fn patch(store: &mut Store, req: &Request) -> Result<Value, Refusal> {
    let old = current(store, req, &req.body)?;
    let mut new = old.clone();
    match req.content_type.as_deref().unwrap_or_default() {
        "application/merge-patch+json" => patch::merge(&mut new, &req.body),
        "application/strategic-merge-patch+json" => {
            patch::strategic(&mut new, &req.body).map_err(|e| Refusal::new(400, "BadRequest", e))?;
        }
        other => {
            let message = format!("the fake API server does not apply {other} patches");
            return Err(Refusal::new(415, "UnsupportedMediaType", message));
        }
    }
    // A patch naming another uid is an update of the immutable uid: refused as Invalid, which
    // is how upstream's claims recognise a pod recreated under the same name.
    if meta_str(&new, "uid") != meta_str(&old, "uid") {
        let kind = old["kind"].as_str().unwrap_or_default();
        let name = req.name.as_deref().unwrap_or_default();
        let uid = meta_str(&new, "uid").unwrap_or_default();
        let message = format!(
            "{kind} \"{name}\" is invalid: metadata.uid: Invalid value: \"{uid}\": field is immutable"
        );
        return Err(Refusal::new(422, "Invalid", message));
    }
    let new = written(req, &old, new)?;
    Ok(store.commit(key(req), new))
}

fn delete(store: &mut Store, req: &Request, now: Timestamp) -> Result<Value, Refusal> {
    let key = key(req);
    let mut old = store.get(&key).cloned().ok_or_else(|| not_found(req))?;
    let preconditions = &req.body["preconditions"];
    for (field, name) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        if let Some(want) = preconditions[field].as_str()
            && Some(want) != meta_str(&old, field)
        {
            let have = meta_str(&old, field).unwrap_or_default();
            let why =
                format!("Precondition failed: {name} in precondition: {want}, {name} in object meta: {have}");
            return Err(conflict(req, &why));
        }
    }
    let held = old["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if !held {
        return Ok(store.remove(&key).unwrap_or(old));
    }
    if !old["metadata"]["deletionTimestamp"].is_null() {
        return Ok(old);
    }
    old["metadata"]["deletionTimestamp"] = time(now);
    old["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    Ok(store.commit(key, old))
}
