//! Helpers of the garbage collector's scenarios: namespaces made and dropped without waiting for a
//! `default` ServiceAccount (bare mode has no controller to make one), objects made with references
//! written by hand, and the outcome, which names objects by kind and name and never by UID. Widgets
//! (the custom kind of `custom`) and Roles (whose names need only be path segments) are made,
//! deleted and listed beside ConfigMaps and Secrets.

use std::{collections::BTreeMap, future::Future, panic::AssertUnwindSafe, time::Duration};

use futures::FutureExt as _;
use k8s_openapi::{
    api::{
        core::v1::{ConfigMap, Event, Namespace, Secret},
        rbac::v1::Role,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api,
    api::{DeleteParams, DynamicObject, ListParams, PostParams},
};
use serde_json::{Value, json};

use super::custom::{WIDGET, widget_api_version, widgets};
use crate::{
    Cluster, TestNamespace,
    differential::{Outcome, Scenario, panic_message, together_then_solo},
    json::merge,
    wait_for,
};

/// Liveness bound for what the collector must do: it acts within a second or two once its graph is
/// filled, but each half starts with a collector just started (kube-controller-manager is restarted
/// for reference mode), which lists every kind first.
const WAIT: Duration = Duration::from_secs(60);
/// How long a scenario watches for what the collector must not do, once it has seen it act.
pub(super) const KEPT_FOR: Duration = Duration::from_secs(5);
/// How long an event the collector should have written is looked for. Events go out in the
/// background after the action they describe, so they may lag the deletion the scenario saw.
const EVENT_WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(250);
/// Picks the scenarios' objects out from what other controllers add (`kube-root-ca.crt` in
/// reference mode only).
const LABEL: &str = "kcm-rs.test/gc";
/// The warning upstream writes on a dependent whose owner it has seen in another namespace.
pub(super) const INVALID_NAMESPACE: &str = "OwnerRefInvalidNamespace";

/// Runs `scenarios` under `actor`, each in a namespace of its own, deleted after it (by whichever
/// namespace controller runs); all at once, then any solo ones. Each result is the outcome or the
/// panic's text.
pub async fn run_scenarios(
    cluster: &Cluster,
    scenarios: &[Scenario],
    actor: &str,
) -> Vec<Result<Outcome, String>> {
    together_then_solo(scenarios, |s| run_one(cluster, s, actor)).await
}

async fn run_one(cluster: &Cluster, scenario: Scenario, actor: &str) -> Result<Outcome, String> {
    let meta = ObjectMeta {
        generate_name: Some(format!("e2e-gc-{}-{actor}-", scenario.name)),
        ..ObjectMeta::default()
    };
    let ns = new_namespace(cluster, meta).await?;
    let result = AssertUnwindSafe((scenario.run)(ns.clone()))
        .catch_unwind()
        .await
        .map_err(|p| panic_message(&*p));
    drop_namespace(&ns).await;
    result
}

pub(super) async fn new_namespace(cluster: &Cluster, metadata: ObjectMeta) -> Result<TestNamespace, String> {
    let ns = Namespace {
        metadata,
        ..Namespace::default()
    };
    let created = Api::<Namespace>::all(cluster.client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .map_err(|e| format!("creating a namespace: {e}"))?;
    Ok(TestNamespace {
        cluster: cluster.clone(),
        name: created.metadata.name.expect("a namespace's name"),
    })
}

/// Nothing waits for it to go: the next scenarios do not look at other namespaces.
pub(super) async fn drop_namespace(ns: &TestNamespace) {
    let namespaces: Api<Namespace> = Api::all(ns.cluster.client.clone());
    if let Err(e) = namespaces.delete(&ns.name, &DeleteParams::background()).await {
        eprintln!("warning: deleting test namespace {}: {e}", ns.name);
    }
}

/// Runs `body`, then `cleanup` also when `body` panics, and carries the panic on: what a scenario
/// makes outside its namespace must not outlive it.
pub(super) async fn then_always<T>(body: impl Future<Output = T>, cleanup: impl Future<Output = ()>) -> T {
    let result = AssertUnwindSafe(body).catch_unwind().await;
    cleanup.await;
    match result {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    ConfigMap,
    Secret,
    Widget,
    Role,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::ConfigMap => "ConfigMap",
            Kind::Secret => "Secret",
            Kind::Widget => WIDGET,
            Kind::Role => "Role",
        }
    }

    fn api_version(self) -> String {
        match self {
            Kind::ConfigMap | Kind::Secret => "v1".to_owned(),
            Kind::Widget => widget_api_version(),
            Kind::Role => "rbac.authorization.k8s.io/v1".to_owned(),
        }
    }
}

/// An object of a scenario's, or one it only pretends exists: what a reference to it needs.
#[derive(Debug, Clone)]
pub(super) struct Made {
    pub(super) kind: Kind,
    pub(super) name: String,
    pub(super) uid: String,
}

impl Made {
    /// An owner that does not exist: a name of the scenario's choosing and a UID no object has.
    pub(super) fn absent(kind: Kind, name: &str) -> Made {
        Made {
            kind,
            name: name.to_owned(),
            uid: random_uid(),
        }
    }

    /// This object's name and kind with a UID that is not its own.
    pub(super) fn other_uid(&self) -> Made {
        Made {
            uid: random_uid(),
            ..self.clone()
        }
    }
}

fn random_uid() -> String {
    let hex = format!("{:032x}", rand::random::<u128>());
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Metadata holding references to `owners`, each with blockOwnerDeletion set to `block`.
pub(super) fn owned_by(owners: &[&Made], block: bool) -> Value {
    let refs: Vec<Value> = owners
        .iter()
        .map(|o| {
            json!({"apiVersion": o.kind.api_version(), "kind": o.kind.name(), "name": o.name,
                   "uid": o.uid, "blockOwnerDeletion": block})
        })
        .collect();
    json!({ "ownerReferences": refs })
}

/// Metadata for an object of the scenario's: its name and label, `meta` merged over them.
pub(super) fn metadata(name: &str, meta: Value) -> Value {
    let mut m = json!({"name": name, "labels": {LABEL: "yes"}});
    merge(&mut m, meta);
    m
}

/// Makes object `name` of `kind` in `ns` with `meta` merged into its metadata.
pub(super) async fn make(ns: &TestNamespace, kind: Kind, name: &str, meta: Value) -> Made {
    let object = json!({"apiVersion": kind.api_version(), "kind": kind.name(),
                        "metadata": metadata(name, meta)});
    let pp = PostParams::default();
    let created = match kind {
        Kind::ConfigMap => {
            let cm: ConfigMap = serde_json::from_value(object).expect("a ConfigMap");
            ns.api::<ConfigMap>().create(&pp, &cm).await.map(|o| o.metadata)
        }
        Kind::Secret => {
            let secret: Secret = serde_json::from_value(object).expect("a Secret");
            ns.api::<Secret>().create(&pp, &secret).await.map(|o| o.metadata)
        }
        Kind::Widget => {
            let widget: DynamicObject = serde_json::from_value(object).expect("a Widget");
            widgets(ns).create(&pp, &widget).await.map(|o| o.metadata)
        }
        Kind::Role => {
            let role: Role = serde_json::from_value(object).expect("a Role");
            ns.api::<Role>().create(&pp, &role).await.map(|o| o.metadata)
        }
    }
    .unwrap_or_else(|e| panic!("create {} {name}: {e}", kind.name()));
    Made {
        kind,
        name: name.to_owned(),
        uid: created.uid.expect("a UID"),
    }
}

/// Deletes `object` with `dp`; returns its metadata if the API server kept it for a finalizer
/// (`orphan`, `foregroundDeletion`), as the deletion's answer showed it.
pub(super) async fn delete(ns: &TestNamespace, object: &Made, dp: &DeleteParams) -> Option<ObjectMeta> {
    // kube's `Api` writes the name into the path as it is; a Role's may need escaping.
    let name = &*controller::path_segment(&object.name).expect("a path segment");
    match object.kind {
        Kind::ConfigMap => delete_through(ns.api::<ConfigMap>(), name, dp).await,
        Kind::Secret => delete_through(ns.api::<Secret>(), name, dp).await,
        Kind::Widget => delete_through(widgets(ns), name, dp).await,
        Kind::Role => delete_through(ns.api::<Role>(), name, dp).await,
    }
}

/// Deletes `name` through `api` with `dp`; its metadata if the API server kept it for a finalizer.
pub(super) async fn delete_through<K>(api: Api<K>, name: &str, dp: &DeleteParams) -> Option<ObjectMeta>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.delete(name, dp)
        .await
        .map(|r| r.left().map(|o| o.meta().clone()))
        .unwrap_or_else(|e| panic!("delete {} {name}: {e}", api.resource_url()))
}

/// The scenario's objects in a namespace, by `Kind/name`.
pub(super) type Objects = BTreeMap<String, ObjectMeta>;

async fn objects(ns: &TestNamespace) -> Result<Objects, String> {
    let lp = ListParams::default().labels(LABEL);
    let mut out = Objects::new();
    let cms = ns.api::<ConfigMap>().list(&lp).await.map_err(|e| e.to_string())?;
    for c in cms.items {
        out.insert(
            format!("ConfigMap/{}", c.metadata.name.clone().unwrap_or_default()),
            c.metadata,
        );
    }
    let secrets = ns.api::<Secret>().list(&lp).await.map_err(|e| e.to_string())?;
    for s in secrets.items {
        out.insert(
            format!("Secret/{}", s.metadata.name.clone().unwrap_or_default()),
            s.metadata,
        );
    }
    let custom = widgets(ns).list(&lp).await.map_err(|e| e.to_string())?;
    for w in custom.items {
        out.insert(
            format!("{WIDGET}/{}", w.metadata.name.clone().unwrap_or_default()),
            w.metadata,
        );
    }
    let roles = ns.api::<Role>().list(&lp).await.map_err(|e| e.to_string())?;
    for r in roles.items {
        out.insert(
            format!("Role/{}", r.metadata.name.clone().unwrap_or_default()),
            r.metadata,
        );
    }
    Ok(out)
}

/// Polls the scenario's objects in `ns` until `done` holds for them, and returns them.
pub(super) async fn until(ns: &TestNamespace, what: &str, done: impl Fn(&Objects) -> bool) -> Objects {
    wait_for(&format!("{what} in {}", ns.name), WAIT, || async {
        let now = objects(ns).await?;
        if done(&now) {
            Ok(now)
        } else {
            let seen: Vec<String> = now.iter().map(|(k, m)| format!("{k}: {}", state(m))).collect();
            Err(seen.join(" | "))
        }
    })
    .await
}

/// The scenario's objects in `ns` now.
pub(super) async fn snapshot(ns: &TestNamespace) -> Objects {
    until(ns, "a list of the objects", |_| true).await
}

/// Records `objects` under `stage`: which are left, then each one's state.
pub(super) fn record(out: &mut Outcome, stage: &str, objects: &Objects) {
    let names: Vec<&str> = objects.keys().map(String::as_str).collect();
    out.insert(stage.to_owned(), names.join(", "));
    for (name, meta) in objects {
        out.insert(format!("{stage}: {name}"), state(meta));
    }
}

/// An object's owners (kind and name; `blocking` where blockOwnerDeletion is set), its finalizers
/// and whether it is being deleted, sorted: what the collector changes on the objects it keeps.
pub(super) fn state(meta: &ObjectMeta) -> String {
    let mut owners: Vec<String> = meta
        .owner_references
        .iter()
        .flatten()
        .map(|r| {
            let blocking = if r.block_owner_deletion == Some(true) {
                " (blocking)"
            } else {
                ""
            };
            format!("{}/{}{blocking}", r.kind, r.name)
        })
        .collect();
    owners.sort();
    let mut text = format!("owners [{}]", owners.join(", "));
    let held_by = finalizers(Some(meta));
    if !held_by.is_empty() {
        text.push_str(&format!("; finalizers [{held_by}]"));
    }
    if meta.deletion_timestamp.is_some() {
        text.push_str("; being deleted");
    }
    text
}

/// The finalizers, sorted; empty for an object already gone.
pub(super) fn finalizers(meta: Option<&ObjectMeta>) -> String {
    let mut all = meta.and_then(|m| m.finalizers.clone()).unwrap_or_default();
    all.sort();
    all.join(", ")
}

pub(super) fn is_empty(objects: &Objects) -> bool {
    objects.is_empty()
}

/// Waits until the collector deletes a dependent of a missing owner in `ns`: proof that it watches
/// ConfigMaps before a scenario counts on it having seen an owner, or waits for something not to
/// happen. Neither half waits for its collector's caches (kcm-rs's starts once one controller's
/// synced, maybe the namespace controller's).
pub(super) async fn collector_working(ns: &TestNamespace) {
    let missing = Made::absent(Kind::ConfigMap, "missing");
    make(ns, Kind::ConfigMap, "canary", owned_by(&[&missing], false)).await;
    until(ns, "the canary deleted", |o| !o.contains_key("ConfigMap/canary")).await;
}

/// Whether `events` holds an [`INVALID_NAMESPACE`] event on an object named `name`, looked for up to
/// [`EVENT_WAIT`]; as a fact of the outcome.
pub(super) async fn invalid_namespace_event(events: &Api<Event>, name: &str) -> String {
    let lp = ListParams::default().fields(&format!("involvedObject.name={name},reason={INVALID_NAMESPACE}"));
    let deadline = tokio::time::Instant::now() + EVENT_WAIT;
    loop {
        let seen = events.list(&lp).await.is_ok_and(|l| !l.items.is_empty());
        if seen || tokio::time::Instant::now() >= deadline {
            return seen.to_string();
        }
        tokio::time::sleep(POLL).await;
    }
}
