//! Doing: one pass over a terminating namespace (upstream `namespacedResourcesDeleter.Delete`), on
//! what the API server says now rather than on the cache, since other finalizers and controllers
//! edit a namespace while it terminates:
//!
//! 1. read it; gone or not being deleted, nothing to do;
//! 2. mark it `Terminating`; already without finalizers, nothing to do;
//! 3. empty it: pods first, and nothing else while pods remain; then every other namespaced kind
//!    (`content`), and write the five conditions (`conditions`);
//! 4. anything left to wait for, or any failure, ends the pass; otherwise remove the `kubernetes`
//!    finalizer, after which the API server deletes the namespace.

use controller::{
    Clock, ControlError,
    discovery::{DiscoveredResource, discover},
};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client,
    api::{PostParams, ResourceExt as _},
};

use crate::{conditions::Findings, content::empty, error::DeleteError};

/// The namespace finalizer this controller owns (upstream `v1.FinalizerKubernetes`).
pub const FINALIZER: &str = "kubernetes";

/// How a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// Nothing more to do: the namespace is finalized, gone, or not being deleted.
    Done,
    /// Content remains that should go by itself within `estimate` seconds.
    Remaining { estimate: i64 },
}

/// One pass over the namespace `name`.
pub async fn delete(client: &Client, clock: &dyn Clock, name: &str) -> Result<Deletion, DeleteError> {
    let api = Api::<Namespace>::all(client.clone());
    let err = |verb, e| DeleteError::api(name, verb, e);
    let Some(ns) = api.get_opt(name).await.map_err(|e| err("get namespace", e))? else {
        return Ok(Deletion::Done);
    };
    if ns.metadata.deletion_timestamp.is_none() {
        return Ok(Deletion::Done);
    }
    let mut ns = match write_retrying(&api, ns, Write::Terminating).await {
        Err(DeleteError::Api { source, .. }) if source.is_not_found() => return Ok(Deletion::Done),
        other => other?,
    };
    let Some(deleted_at) = ns.metadata.deletion_timestamp.as_ref().map(|t| t.0) else {
        return Ok(Deletion::Done);
    };
    if finalizers(&ns).is_empty() {
        return Ok(Deletion::Done);
    }
    let (estimate, errors) = delete_all_content(client, clock, &api, &mut ns, deleted_at).await;
    if !errors.is_empty() {
        return Err(DeleteError::Content {
            name: name.to_owned(),
            errors,
        });
    }
    if estimate > 0 {
        return Ok(Deletion::Remaining { estimate });
    }
    match write_retrying(&api, ns, Write::Finalize).await {
        Err(DeleteError::Api { source, .. }) if source.is_not_found() => Ok(Deletion::Done),
        other => other.map(|_| Deletion::Done),
    }
}

/// Empties the namespace and writes its conditions: the longest wait asked for, and the errors met
/// (upstream `deleteAllContent`).
async fn delete_all_content(
    client: &Client,
    clock: &dyn Clock,
    api: &Api<Namespace>,
    ns: &mut Namespace,
    deleted_at: k8s_openapi::jiff::Timestamp,
) -> (i64, Vec<String>) {
    let name = ns.name_any();
    let mut findings = Findings::default();
    let mut errors = Vec::new();
    let resources = match discover(client).await {
        Ok(found) => {
            if let Some(failure) = found.failure() {
                findings.discovery_partial(found.failed.len(), &failure);
                errors.push(failure);
            }
            found.namespaced().resources
        }
        Err(e) => {
            findings.discovery_failed(&e.to_string());
            errors.push(e.to_string());
            Vec::new()
        }
    };
    // Pods first (a stable sort keeps the rest in discovery's order).
    let mut deletable: Vec<&DiscoveredResource> = resources.iter().filter(|r| r.supports("delete")).collect();
    deletable.sort_by_key(|r| !r.is_pods());
    let mut estimate = 0;
    for r in deletable {
        let out = empty(client, r, &name, deleted_at, clock.now()).await;
        if let Some(e) = out.error {
            errors.push(if r.is_pods() {
                format!("failed to delete pods for namespace: {name}, err: {e}")
            } else {
                e.clone()
            });
            findings.content_error(e);
        }
        estimate = estimate.max(out.remaining.estimate);
        findings.remaining(
            &r.resource,
            &r.group,
            out.remaining.count,
            &out.remaining.finalizers,
        );
        // Nothing else is deleted while pods remain (OrderedNamespaceDeletion, GA and locked on
        // in 1.34); the conditions are then written without the totals, as upstream's are.
        if r.is_pods() && out.remaining.count > 0 {
            write_conditions(api, ns, &findings, false, clock).await;
            return (estimate, errors);
        }
    }
    write_conditions(api, ns, &findings, true, clock).await;
    (estimate, errors)
}

/// Writes the conditions if they changed; a failed write is logged and the pass goes on, as
/// upstream's.
async fn write_conditions(
    api: &Api<Namespace>,
    ns: &mut Namespace,
    findings: &Findings,
    totals: bool,
    clock: &dyn Clock,
) {
    let status = ns.status.get_or_insert_with(Default::default);
    if !findings.apply(status, totals, clock.now()) {
        return;
    }
    let name = ns.name_any();
    if let Err(e) = api.replace_status(&name, &PostParams::default(), &*ns).await {
        tracing::error!(namespace = %name, error = %ControlError::api("update status", &*name, e), "couldn't update status condition for namespace");
    }
}

fn finalizers(ns: &Namespace) -> &[String] {
    ns.spec
        .as_ref()
        .and_then(|s| s.finalizers.as_deref())
        .unwrap_or_default()
}

/// The namespace writes of a pass.
#[derive(Debug, Clone, Copy)]
enum Write {
    /// `status.phase: Terminating`, unless it already is.
    Terminating,
    /// The spec's finalizers without [`FINALIZER`], through the `finalize` subresource.
    Finalize,
}

/// `write`, again on a fresh read after each conflict, as long as the namespace read is the same
/// one (its UID); upstream `retryOnConflictError`.
async fn write_retrying(
    api: &Api<Namespace>,
    mut ns: Namespace,
    write: Write,
) -> Result<Namespace, DeleteError> {
    let name = ns.name_any();
    loop {
        let written = match write {
            Write::Terminating => {
                let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
                if ns.metadata.deletion_timestamp.is_none() || phase == Some("Terminating") {
                    return Ok(ns);
                }
                let mut next = ns.clone();
                next.status.get_or_insert_with(Default::default).phase = Some("Terminating".into());
                api.replace_status(&name, &PostParams::default(), &next).await
            }
            Write::Finalize => {
                api.replace_subresource("finalize", &name, &PostParams::default(), &finalized(&ns))
                    .await
            }
        };
        let e = match written {
            Ok(ns) => return Ok(ns),
            Err(e) => ControlError::api(write.verb(), &*name, e),
        };
        if !e.is_conflict() {
            return Err(DeleteError::Api { name, source: e });
        }
        let fresh = api
            .get(&name)
            .await
            .map_err(|e| DeleteError::api(&name, "get namespace", e))?;
        if fresh.metadata.uid != ns.metadata.uid {
            return Err(DeleteError::UidChanged { name });
        }
        ns = fresh;
    }
}

impl Write {
    fn verb(self) -> &'static str {
        match self {
            Write::Terminating => "update namespace status",
            Write::Finalize => "finalize namespace",
        }
    }
}

/// The namespace as the `finalize` subresource takes it: its metadata and spec, the spec's
/// finalizers without [`FINALIZER`], sorted and once each (upstream builds them as a set).
pub fn finalized(ns: &Namespace) -> Namespace {
    let mut rest: Vec<String> = finalizers(ns)
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    rest.sort();
    rest.dedup();
    let mut spec = ns.spec.clone().unwrap_or_default();
    spec.finalizers = Some(rest);
    Namespace {
        metadata: ns.metadata.clone(),
        spec: Some(spec),
        status: None,
    }
}

#[cfg(test)]
#[path = "deleter_tests.rs"]
mod tests;
