//! Doing: emptying one kind in a terminating namespace (upstream
//! `deleteAllContentForGroupVersionResource`): estimate the pods' grace, delete the collection (or
//! each item where the kind has no collection delete), list what is left, and say how long to wait
//! for it. Deciding what the leftovers mean is [`left_over`], a pure function.

use std::collections::BTreeMap;

use controller::{ControlError, path_segment};
use k8s_openapi::{
    api::core::v1::Pod,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Client, Resource as _,
    api::{DeleteParams, DynamicObject, ListParams, ObjectMeta},
    core::Request,
};

use controller::discovery::DiscoveredResource;

/// The wait assumed for content held by finalizers (upstream `finalizerEstimateSeconds`).
pub const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// What is left of one kind after its deletion, and how long to give it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remaining {
    /// Seconds to wait before looking again; 0 when nothing is expected to go away by itself.
    pub estimate: i64,
    pub count: usize,
    /// Instances left, by finalizer.
    pub finalizers: BTreeMap<String, usize>,
}

/// One kind's outcome: what is left, and the error that stopped it, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub remaining: Remaining,
    pub error: Option<String>,
}

impl Outcome {
    /// Nothing known to be left (the kind cannot be listed), `estimate` to wait all the same.
    fn waiting(estimate: i64) -> Self {
        Self {
            remaining: Remaining {
                estimate,
                ..Remaining::default()
            },
            error: None,
        }
    }

    fn failed(estimate: i64, error: String) -> Self {
        Self {
            error: Some(error),
            ..Self::waiting(estimate)
        }
    }
}

/// Deletes every `resource` in `namespace`, deleted at `deleted_at`.
pub async fn empty(
    client: &Client,
    resource: &DiscoveredResource,
    namespace: &str,
    deleted_at: Timestamp,
    now: Timestamp,
) -> Outcome {
    let estimate = if resource.is_pods() {
        match Api::<Pod>::namespaced(client.clone(), namespace)
            .list(&ListParams::default())
            .await
        {
            Ok(pods) => within_grace(grace_estimate(&pods.items), deleted_at, now),
            Err(e) => return Outcome::failed(0, text("list", resource, namespace, e)),
        }
    } else {
        0
    };
    let ar = resource.api_resource();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &ar);
    match delete_collection(client, resource, namespace).await {
        Ok(true) => {}
        Ok(false) => {
            if let Err(e) = delete_each(&api, resource, namespace).await {
                return Outcome::failed(estimate, e);
            }
        }
        Err(e) => return Outcome::failed(estimate, e),
    }
    if !resource.supports("list") {
        return Outcome::waiting(estimate);
    }
    match list(&api).await {
        Ok(items) => left_over(&items, estimate, resource, namespace),
        Err(e) if unsupported(&e) => Outcome::waiting(estimate),
        Err(e) => Outcome::failed(estimate, text("list", resource, namespace, e)),
    }
}

/// What the items still listed after the deletion mean (upstream's end of
/// `deleteAllContentForGroupVersionResource`): with a grace estimate, wait for it; held by
/// finalizers, wait [`FINALIZER_ESTIMATE_SECONDS`]; neither, an error, for they should be gone.
pub fn left_over(
    items: &[ObjectMeta],
    estimate: i64,
    resource: &DiscoveredResource,
    namespace: &str,
) -> Outcome {
    if items.is_empty() {
        return Outcome::default();
    }
    let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
    for f in items.iter().flat_map(|i| i.finalizers.iter().flatten()) {
        *finalizers.entry(f.clone()).or_default() += 1;
    }
    let (estimate, error) = match (estimate, finalizers.is_empty()) {
        (0, true) => (
            0,
            Some(format!(
                "unexpected items still remain in namespace: {namespace} for gvr: {resource}"
            )),
        ),
        (0, false) => (FINALIZER_ESTIMATE_SECONDS, None),
        (e, _) => (e, None),
    };
    Outcome {
        remaining: Remaining {
            estimate,
            count: items.len(),
            finalizers,
        },
        error,
    }
}

/// The longest grace period of the pods still running (upstream
/// `estimateGracefulTerminationForPods`): terminal pods have nothing to wait for.
pub fn grace_estimate(pods: &[Pod]) -> i64 {
    pods.iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .filter_map(|p| p.spec.as_ref()?.termination_grace_period_seconds)
        .max()
        .unwrap_or(0)
        .max(0)
}

/// The estimate, or 0 once that long has passed since the namespace was deleted.
pub fn within_grace(estimate: i64, deleted_at: Timestamp, now: Timestamp) -> i64 {
    if deleted_at.duration_until(now) >= SignedDuration::from_secs(estimate) {
        0
    } else {
        estimate
    }
}

/// The whole collection at once, in the background (the garbage collector must not orphan
/// anything the namespace's deletion takes): `Ok(false)` where the kind has no collection delete.
async fn delete_collection(client: &Client, r: &DiscoveredResource, namespace: &str) -> Result<bool, String> {
    if !r.supports("deletecollection") {
        return Ok(false);
    }
    let url = DynamicObject::url_path(&r.api_resource(), Some(namespace));
    let request = Request::new(url)
        .delete_collection(&DeleteParams::background(), &ListParams::default())
        .map_err(|e| e.to_string())?;
    match client.request_text(request).await {
        Ok(_) => Ok(true),
        Err(e) if unsupported(&e) => Ok(false),
        Err(e) => Err(text("delete collection of", r, namespace, e)),
    }
}

/// Lists and deletes each item, for a kind without a collection delete.
async fn delete_each(
    api: &Api<DynamicObject>,
    r: &DiscoveredResource,
    namespace: &str,
) -> Result<(), String> {
    if !r.supports("list") {
        return Ok(());
    }
    let items = match list(api).await {
        Ok(items) => items,
        Err(e) if unsupported(&e) => return Ok(()),
        Err(e) => return Err(text("list", r, namespace, e)),
    };
    for item in items {
        // Escaped as client-go's request escapes it (an RBAC object's name may hold `#`, `?` or a
        // space). A listed name is a valid path segment; one that is not could name no object, and
        // upstream's delete of it would find none: skipped, as upstream ignores that 404.
        let name = item.name.unwrap_or_default();
        let Ok(name) = path_segment(&name) else {
            continue;
        };
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if unsupported(&e) => {}
            Err(e) => return Err(text("delete", r, namespace, e)),
        }
    }
    Ok(())
}

/// The metadata of every item, as the metadata client reads it: as `PartialObjectMetadataList`, or,
/// from a server that cannot answer so (406), as the whole objects (client-go's metadata client
/// also accepts plain JSON).
async fn list(api: &Api<DynamicObject>) -> kube::Result<Vec<ObjectMeta>> {
    match api.list_metadata(&ListParams::default()).await {
        Ok(list) => Ok(list.items.into_iter().map(|i| i.metadata).collect()),
        Err(kube::Error::Api(s)) if s.code == 406 => {
            let list = api.list(&ListParams::default()).await?;
            Ok(list.items.into_iter().map(|i| i.metadata).collect())
        }
        Err(e) => Err(e),
    }
}

/// Not found or method not allowed: a kind discovery lists without the verb at its top level.
fn unsupported(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404 || s.code == 405)
}

/// An API error as upstream words it (the Status message); any other error with the request it
/// ended, as Go's URL errors carry it.
fn text(verb: &'static str, r: &DiscoveredResource, namespace: &str, e: kube::Error) -> String {
    match e {
        e @ kube::Error::Api(_) => ControlError::api(verb, namespace, e).to_string(),
        e => format!("{verb} {} in namespace {namespace}: {e}", r.resource),
    }
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
