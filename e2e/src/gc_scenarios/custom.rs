//! Owners and dependents of a custom resource, Widget: a kind each collector learns only from
//! discovery (the CRD is installed before either collector starts), and one whose API refuses the
//! strategic merge patches the collector tries first when it rewrites ownerReferences, so orphaning
//! a Widget's dependents takes its JSON-merge-patch fallback.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams},
};
use serde_json::json;

use super::helpers::{KEPT_FOR, Kind, delete, finalizers, is_empty, make, owned_by, record, snapshot, until};
use crate::{Cluster, TestNamespace, differential::Outcome, wait_for};

const GROUP: &str = "gc.kcm-rs.test";
const VERSION: &str = "v1";
pub(super) const WIDGET: &str = "Widget";
const PLURAL: &str = "widgets";
/// The API server serves a new CRD within a second or two; a bound for a slow, loaded plane.
const ESTABLISH_WAIT: Duration = Duration::from_secs(60);

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, WIDGET), PLURAL)
}

pub(super) fn widget_api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

pub(super) fn widgets(ns: &TestNamespace) -> Api<DynamicObject> {
    Api::namespaced_with(ns.cluster.client.clone(), &ns.name, &widget_resource())
}

/// Installs the Widget CRD (server-side apply: a rerun on the same plane finds it there already) and
/// waits until it is Established. Call it before either collector starts, so that both find Widgets
/// in discovery at once rather than at their next periodic resync. It is left installed: the test
/// namespaces, Widgets and all, are still being deleted when the test ends.
pub async fn install_widgets(cluster: &Cluster) {
    let name = format!("{PLURAL}.{GROUP}");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "widget", "kind": WIDGET, "listKind": "WidgetList"},
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true
                }}
            }]
        }
    });
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    crds.patch(
        &name,
        &PatchParams::apply("kcm-rs-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap_or_else(|e| panic!("apply CRD {name}: {e}"));
    wait_for(&format!("CRD {name} Established"), ESTABLISH_WAIT, || async {
        let crd = crds.get(&name).await.map_err(|e| e.to_string())?;
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        if conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
        {
            Ok(())
        } else {
            Err(format!("{conditions:?}"))
        }
    })
    .await;
}

/// A Widget owning a ConfigMap and a Widget: the collector follows references to a custom kind
/// from a built-in dependent and from a custom one.
pub(super) async fn custom_owner_background(ns: TestNamespace) -> Outcome {
    let owner = make(&ns, Kind::Widget, "owner", json!({})).await;
    let refs = owned_by(&[&owner], false);
    make(&ns, Kind::ConfigMap, "a", refs.clone()).await;
    make(&ns, Kind::Widget, "b", refs).await;
    delete(&ns, &owner, &DeleteParams::background()).await;
    let left = until(&ns, "the Widget's dependents deleted", is_empty).await;
    let mut out = Outcome::new();
    record(&mut out, "left", &left);
    out
}

/// Orphaning rewrites each dependent's ownerReferences with a patch, which a Widget accepts only as
/// a JSON merge patch; the owner goes only once both dependents are released.
pub(super) async fn custom_dependents_orphan(ns: TestNamespace) -> Outcome {
    let owner = make(&ns, Kind::Widget, "owner", json!({})).await;
    let refs = owned_by(&[&owner], false);
    make(&ns, Kind::Widget, "a", refs.clone()).await;
    make(&ns, Kind::Widget, "b", refs).await;
    let deleting = delete(&ns, &owner, &DeleteParams::orphan()).await;
    let mut out = Outcome::from([(
        "owner's finalizers once deleted".into(),
        finalizers(deleting.as_ref()),
    )]);
    until(&ns, "the owner gone", |o| !o.contains_key("Widget/owner")).await;
    tokio::time::sleep(KEPT_FOR).await;
    record(&mut out, "left", &snapshot(&ns).await);
    out
}

/// The owner's `foregroundDeletion` finalizer is removed, once its blocking dependents are gone,
/// with a patch a Widget must accept.
pub(super) async fn custom_foreground(ns: TestNamespace) -> Outcome {
    let owner = make(&ns, Kind::Widget, "owner", json!({})).await;
    let refs = owned_by(&[&owner], true);
    make(&ns, Kind::Widget, "a", refs.clone()).await;
    make(&ns, Kind::Widget, "b", refs).await;
    let deleting = delete(&ns, &owner, &DeleteParams::foreground()).await;
    let mut out = Outcome::from([(
        "owner's finalizers once deleted".into(),
        finalizers(deleting.as_ref()),
    )]);
    let left = until(&ns, "the Widget and its dependents deleted", is_empty).await;
    record(&mut out, "left", &left);
    out
}
