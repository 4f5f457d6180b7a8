//! Shadow mode through a worker's look at an object, against a fake API server: what is filed, and
//! what clears it once upstream's collector has done the same.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use controller::{
    Build, Context,
    discovery::{Discovered, Mapping},
    shadow::ShadowState,
};
use informer::{NoopMetrics, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use serde_json::json;
use testing::ApiServer;

use crate::{
    controller::{COMPONENT, GarbageCollector},
    graph::{Change, Observed},
    identity::{FOREGROUND, Identity, ORPHAN},
};

const NS: &str = "ns";

/// A shadowed collector over `server`, which knows ConfigMaps, its disagreements reported at once.
fn shadowed(server: &ApiServer) -> (GarbageCollector, Arc<ShadowState>) {
    server.insert(&serde_json::from_value::<Namespace>(json!({"metadata": {"name": NS}})).unwrap());
    let factory = SharedInformerFactory::new(server.client());
    let state = Arc::new(ShadowState::new(Duration::ZERO, |_| {}));
    let cx = Context::new(&factory, server.client(), &NoopMetrics, COMPONENT);
    let gc = GarbageCollector::shadow(cx, state.clone(), ());
    let mapping = Mapping {
        resource: "configmaps".into(),
        namespaced: true,
    };
    *gc.mapper.write() = Arc::new(Discovered {
        kinds: BTreeMap::from([(("v1".to_owned(), "ConfigMap".to_owned()), mapping)]),
        ..Discovered::default()
    });
    (gc, state)
}

fn config_map(name: &str, uid: &str, metadata: serde_json::Value) -> ConfigMap {
    let mut meta = json!({"name": name, "namespace": NS, "uid": uid, "resourceVersion": "1"});
    if let (Some(meta), serde_json::Value::Object(more)) = (meta.as_object_mut(), metadata) {
        meta.extend(more);
    }
    serde_json::from_value(json!({ "metadata": meta })).unwrap()
}

fn identity(name: &str, uid: &str) -> Identity {
    Identity {
        kind: "ConfigMap".into(),
        api_version: "v1".into(),
        namespace: NS.into(),
        name: name.into(),
        uid: uid.into(),
    }
}

/// What the graph is told of an object being deleted with `finalizers`.
fn deleting(name: &str, uid: &str, finalizers: &[&str]) -> Change {
    Change::Added(Observed {
        identity: identity(name, uid),
        owners: Vec::new(),
        deleting: true,
        finalizers: finalizers.iter().map(|f| (*f).to_owned()).collect(),
    })
}

/// Another finalizer than the collector's, which keeps the owner after upstream removed its own.
const HOLD: &str = "example.com/hold";
const DELETED_AT: &str = "2026-11-30T00:00:00Z";

/// The owner `u1`, being deleted and held by `finalizer` and [`HOLD`], in the server and the graph.
fn owner_being_deleted(server: &ApiServer, gc: &GarbageCollector, finalizer: &str) {
    let meta = json!({"deletionTimestamp": DELETED_AT, "finalizers": [HOLD, finalizer]});
    server.insert(&config_map("owner", "u1", meta));
    gc.graph.lock().apply(deleting("owner", "u1", &[HOLD, finalizer]));
}

/// Upstream's collector removed its finalizer from the owner; [`HOLD`] keeps it.
fn finalizer_removed(server: &ApiServer) {
    let meta = json!({"deletionTimestamp": DELETED_AT, "finalizers": [HOLD], "resourceVersion": "2"});
    server.insert(&config_map("owner", "u1", meta));
}

fn reported(state: &ShadowState) -> Vec<String> {
    state
        .current()
        .into_iter()
        .flat_map(|d| {
            d.differences
                .into_iter()
                .map(move |l| format!("{}: {l}", d.object))
        })
        .collect()
}

#[tokio::test]
async fn a_dependent_of_a_missing_owner_stands_until_upstream_deletes_it() {
    let server = ApiServer::new();
    let (gc, state) = shadowed(&server);
    let missing = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "u0"}]);
    server.insert(&config_map("a", "u1", json!({"ownerReferences": missing})));
    gc.graph.lock().apply(Change::Added(Observed {
        identity: identity("a", "u1"),
        owners: serde_json::from_value(missing).unwrap(),
        ..Observed::default()
    }));
    gc.attempt_to_delete("u1").await.unwrap();
    assert_eq!(
        reported(&state),
        ["ns/a (v1 ConfigMap): kcm-rs would delete it (background propagation): no owner holds it"]
    );
    gc.review_filing(&Change::Deleted(Observed {
        identity: identity("a", "u1"),
        ..Observed::default()
    }));
    assert!(reported(&state).is_empty(), "upstream deleted it");
}

#[tokio::test]
async fn a_foreground_finalizer_upstream_removed_is_not_filed_again() {
    let server = ApiServer::new();
    let (gc, state) = shadowed(&server);
    owner_being_deleted(&server, &gc, FOREGROUND);
    gc.attempt_to_delete("u1").await.unwrap();
    assert_eq!(
        reported(&state),
        [
            "ns/owner (v1 ConfigMap): metadata.finalizers: kcm-rs would remove foregroundDeletion: no dependent blocks it"
        ]
    );
    finalizer_removed(&server);
    gc.attempt_to_delete("u1").await.unwrap();
    assert!(reported(&state).is_empty());
}

#[tokio::test]
async fn an_orphan_finalizer_upstream_removed_clears_the_filing() {
    let server = ApiServer::new();
    let (gc, state) = shadowed(&server);
    owner_being_deleted(&server, &gc, ORPHAN);
    gc.attempt_to_orphan("u1").await.unwrap();
    assert_eq!(
        reported(&state),
        [
            "ns/owner (v1 ConfigMap): metadata.finalizers: kcm-rs would orphan its 0 dependents, then remove orphan"
        ]
    );
    // The deleting worker has nothing to say of an owner being orphaned, and leaves the filing.
    gc.attempt_to_delete("u1").await.unwrap();
    assert_eq!(reported(&state).len(), 1);
    finalizer_removed(&server);
    gc.attempt_to_orphan("u1").await.unwrap();
    assert!(reported(&state).is_empty());
}
