//! The collector's requests, each addressed through discovery's REST mapping of the object's
//! `apiVersion` and `kind` (upstream `operations.go` and `patch.go`): metadata reads, deletions
//! with preconditions, and patches of ownerReferences and finalizers.

use std::{sync::Arc, time::Duration};

use controller::{
    discovery::{Discovered, Mapping},
    path_segment,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy},
    core::{ApiResource, PartialObjectMeta},
};
use parking_lot::RwLock;
use serde_json::{Value, json};

use crate::{
    decide::Policy,
    error::{GcError, conflict, not_found, unsupported_media_type},
    identity::Identity,
};

/// The waits between tries of a finalizer's removal on conflicts (client-go `retry.DefaultBackoff`:
/// 4 steps from 10 ms, each 5 times longer; its 10% jitter left out).
const CONFLICT_BACKOFF: [Duration; 3] = [
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(250),
];

pub type Metadata = PartialObjectMeta<DynamicObject>;

/// The latest discovery, shared with the monitors' sync, which replaces it.
pub type Mapper = Arc<RwLock<Arc<Discovered>>>;

/// The API calls, over the collector's client.
#[derive(Clone)]
pub struct Operations {
    client: Client,
    mapper: Mapper,
}

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operations").finish_non_exhaustive()
    }
}

impl Operations {
    pub fn new(client: Client, mapper: Mapper) -> Self {
        Self { client, mapper }
    }

    /// The REST mapping of a kind in a version.
    pub fn mapping(&self, api_version: &str, kind: &str) -> Result<Mapping, GcError> {
        self.mapper
            .read()
            .mapping(api_version, kind)
            .cloned()
            .ok_or_else(|| GcError::NoMapping {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            })
    }

    /// The dynamic API of `item`'s resource, in its namespace if the resource is namespaced, and
    /// the name as the request's path carries it, escaped as client-go escapes it; `None` for a name
    /// that cannot be one segment of a path (an ownerReference's is not validated). No object has
    /// such a name, and upstream's metadata client, which sends it all the same, finds none: `50%`
    /// as `50%25`, `a/b` as a subresource, `..` as the namespace, of another UID. So the collector
    /// takes it for not found without asking.
    fn api(&self, item: &Identity) -> Result<Option<(Api<DynamicObject>, String)>, GcError> {
        let Ok(name) = path_segment(&item.name) else {
            return Ok(None);
        };
        let name = name.into_owned();
        let mapping = self.mapping(&item.api_version, &item.kind)?;
        let (group, version) = match item.api_version.split_once('/') {
            Some((g, v)) => (g.to_owned(), v.to_owned()),
            None => (String::new(), item.api_version.clone()),
        };
        let resource = ApiResource {
            group,
            version,
            api_version: item.api_version.clone(),
            kind: item.kind.clone(),
            plural: mapping.resource,
        };
        let api = if mapping.namespaced {
            Api::namespaced_with(self.client.clone(), &item.namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        };
        Ok(Some((api, name)))
    }

    fn failed(item: &Identity) -> impl FnOnce(kube::Error) -> GcError + '_ {
        move |source| GcError::Api {
            item: Box::new(item.clone()),
            source: Box::new(source),
        }
    }

    /// The object's metadata; `Ok(None)` if it is not found.
    pub async fn get(&self, item: &Identity) -> Result<Option<Metadata>, GcError> {
        let Some((api, name)) = self.api(item)? else {
            return Ok(None);
        };
        match api.get_metadata(&name).await {
            Ok(m) => Ok(Some(m)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(Self::failed(item)(e)),
        }
    }

    /// Deletes `item` if it is still the object of that UID and, when `resource_version` is given,
    /// unchanged since; a conflict caused only by a change that left its ownerReferences as they
    /// were is retried without the version (upstream `deleteObject`). `Ok(false)`: not found.
    pub async fn delete(
        &self,
        item: &Identity,
        resource_version: Option<&str>,
        owners: &[OwnerReference],
        policy: Policy,
    ) -> Result<bool, GcError> {
        let Some((api, name)) = self.api(item)? else {
            return Ok(false);
        };
        let params = |rv: Option<&str>| DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(item.uid.clone()),
                resource_version: rv.map(str::to_owned),
            }),
            propagation_policy: Some(match policy {
                Policy::Background => PropagationPolicy::Background,
                Policy::Foreground => PropagationPolicy::Foreground,
                Policy::Orphan => PropagationPolicy::Orphan,
            }),
            ..DeleteParams::default()
        };
        let mut result = api.delete(&name, &params(resource_version)).await;
        if let Err(e) = &result
            && conflict(e)
            && let Some(rv) = resource_version
        {
            match api.get_metadata(&name).await {
                Err(e) if not_found(&e) => return Ok(false),
                Ok(live)
                    if live.metadata.uid.as_deref() == Some(&item.uid)
                        && live.metadata.resource_version.as_deref() != Some(rv)
                        && live.metadata.owner_references.as_deref().unwrap_or_default() == owners =>
                {
                    result = api.delete(&name, &params(None)).await;
                }
                _ => {}
            }
        }
        match result {
            Ok(_) => Ok(true),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(Self::failed(item)(e)),
        }
    }

    /// A strategic merge patch, or where the resource has none (custom resources answer 415), the
    /// JSON merge patch `fallback` makes from the object's live metadata (upstream `patch`).
    /// `Ok(false)`: not found.
    pub async fn patch(
        &self,
        item: &Identity,
        strategic: Value,
        fallback: impl FnOnce(&Metadata) -> Value,
    ) -> Result<bool, GcError> {
        let Some((api, name)) = self.api(item)? else {
            return Ok(false);
        };
        let params = PatchParams::default();
        let result = match api
            .patch_metadata(&name, &params, &Patch::Strategic(strategic))
            .await
        {
            Err(e) if unsupported_media_type(&e) => match api.get_metadata(&name).await {
                Ok(live) => {
                    api.patch_metadata(&name, &params, &Patch::Merge(fallback(&live)))
                        .await
                }
                Err(e) => Err(e),
            },
            other => other,
        };
        match result {
            Ok(_) => Ok(true),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(Self::failed(item)(e)),
        }
    }

    /// Removes `finalizer` from `item` on a fresh read, again on conflicts (upstream
    /// `removeFinalizer`); gone or without it already is done.
    pub async fn remove_finalizer(&self, item: &Identity, finalizer: &str) -> Result<(), GcError> {
        let Some((api, name)) = self.api(item)? else {
            return Ok(());
        };
        for wait in CONFLICT_BACKOFF.iter().map(Some).chain([None]) {
            let live = match api.get_metadata(&name).await {
                Ok(m) => m,
                Err(e) if not_found(&e) => return Ok(()),
                Err(e) => return Err(Self::failed(item)(e)),
            };
            let finalizers = live.metadata.finalizers.unwrap_or_default();
            if !finalizers.iter().any(|f| f == finalizer) {
                return Ok(());
            }
            let rest: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
            let patch = json!({"metadata": {
                "resourceVersion": live.metadata.resource_version,
                "finalizers": if rest.is_empty() { Value::Null } else { json!(rest) },
            }});
            match api
                .patch_metadata(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if not_found(&e) => return Ok(()),
                Err(e) if conflict(&e) => match wait {
                    Some(w) => tokio::time::sleep(*w).await,
                    None => break,
                },
                Err(e) => return Err(Self::failed(item)(e)),
            }
        }
        Err(GcError::Conflicts {
            item: Box::new(item.clone()),
            attempts: CONFLICT_BACKOFF.len() + 1,
        })
    }
}

/// The strategic merge patch that removes the references to `owners` from the object of `uid`;
/// the UID makes the patch fail on another object of the same name (upstream
/// `GenerateDeleteOwnerRefStrategicMergeBytes`).
pub fn drop_references(uid: &str, owners: &[String]) -> Value {
    let refs: Vec<Value> = owners
        .iter()
        .map(|o| json!({"$patch": "delete", "uid": o}))
        .collect();
    json!({"metadata": {"ownerReferences": refs, "uid": uid}})
}

/// The JSON merge patch that leaves the live object's references without those of `owners`, at
/// its resourceVersion.
pub fn drop_references_merge(live: &Metadata, owners: &[String]) -> Value {
    let refs = live.metadata.owner_references.as_deref().unwrap_or_default();
    let kept: Vec<&OwnerReference> = refs.iter().filter(|r| !owners.contains(&r.uid)).collect();
    json!({"metadata": {"resourceVersion": live.metadata.resource_version, "ownerReferences": kept}})
}

/// The strategic merge patch that makes the object's blocking references non-blocking.
pub fn unblock(uid: &str, refs: &[OwnerReference]) -> Value {
    let blocking: Vec<OwnerReference> = refs
        .iter()
        .filter(|r| r.block_owner_deletion == Some(true))
        .map(|r| OwnerReference {
            block_owner_deletion: Some(false),
            ..r.clone()
        })
        .collect();
    json!({"metadata": {"ownerReferences": blocking, "uid": uid}})
}

/// The JSON merge patch that makes every live reference non-blocking, at the live object's
/// resourceVersion: references read with that version, so that none added since the graph saw the
/// object is written away.
pub fn unblock_merge(live: &Metadata) -> Value {
    let resource_version = &live.metadata.resource_version;
    let refs = live.metadata.owner_references.as_deref().unwrap_or_default();
    let all: Vec<OwnerReference> = refs
        .iter()
        .map(|r| OwnerReference {
            block_owner_deletion: Some(false),
            ..r.clone()
        })
        .collect();
    json!({"metadata": {"resourceVersion": resource_version, "ownerReferences": all}})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name no single path segment can carry names no object: upstream's metadata client sends it
    /// and finds nothing (`50%` as `50%25`, `a/b` as a subresource, `..` as the namespace); the
    /// collector answers not found without a request. A name that needs escaping is sent escaped.
    #[tokio::test]
    async fn names_no_path_segment_carries_are_not_found_without_a_request() {
        use std::collections::BTreeMap;
        let server = testing::ApiServer::new();
        let mapping = Mapping {
            resource: "configmaps".into(),
            namespaced: true,
        };
        let mapper: Mapper = Arc::new(RwLock::new(Arc::new(Discovered {
            kinds: BTreeMap::from([(("v1".to_owned(), "ConfigMap".to_owned()), mapping)]),
            ..Discovered::default()
        })));
        let ops = Operations::new(server.client(), mapper);
        let item = |name: &str| Identity {
            kind: "ConfigMap".into(),
            api_version: "v1".into(),
            namespace: "ns".into(),
            name: name.into(),
            uid: "u".into(),
        };
        for name in ["50%", "a/b", "..", "."] {
            assert!(ops.get(&item(name)).await.unwrap().is_none(), "{name}");
            assert!(
                !ops.delete(&item(name), None, &[], Policy::Background)
                    .await
                    .unwrap()
            );
            ops.remove_finalizer(&item(name), "orphan").await.unwrap();
        }
        assert!(server.requests().is_empty(), "{:?}", server.requests());
        assert!(ops.get(&item("ops#1")).await.unwrap().is_none());
        let uris: Vec<String> = server.requests().into_iter().map(|r| r.uri).collect();
        assert_eq!(uris, ["/api/v1/namespaces/ns/configmaps/ops%231"]);
    }

    fn reference(uid: &str, block: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: format!("cm-{uid}"),
            uid: uid.into(),
            block_owner_deletion: block,
            ..OwnerReference::default()
        }
    }

    fn live(refs: Vec<OwnerReference>) -> Metadata {
        let mut m: Metadata = serde_json::from_value(json!({"metadata": {"resourceVersion": "7"}})).unwrap();
        m.metadata.owner_references = Some(refs);
        m
    }

    #[test]
    fn references_are_dropped_by_uid_on_the_object_of_that_uid() {
        assert_eq!(
            drop_references("dep", &["a".into(), "b".into()]),
            json!({"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": "a"}, {"$patch": "delete", "uid": "b"}],
                "uid": "dep",
            }})
        );
        let refs = vec![
            reference("a", None),
            reference("b", None),
            reference("c", Some(true)),
        ];
        let merge = drop_references_merge(&live(refs), &["a".into(), "b".into()]);
        assert_eq!(merge["metadata"]["resourceVersion"], "7");
        assert_eq!(merge["metadata"]["ownerReferences"].as_array().unwrap().len(), 1);
        assert_eq!(merge["metadata"]["ownerReferences"][0]["uid"], "c");
    }

    #[test]
    fn unblocking_names_only_the_blocking_references_or_rewrites_them_all() {
        let refs = vec![
            reference("a", Some(true)),
            reference("b", None),
            reference("c", Some(false)),
        ];
        let strategic = unblock("dep", &refs);
        let named = strategic["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(named.len(), 1);
        assert_eq!(named[0]["uid"], "a");
        assert_eq!(named[0]["blockOwnerDeletion"], false);
        assert_eq!(strategic["metadata"]["uid"], "dep");
        let merge = unblock_merge(&live(refs));
        let all = merge["metadata"]["ownerReferences"].as_array().unwrap();
        assert!(all.iter().all(|r| r["blockOwnerDeletion"] == false));
        assert_eq!(all.len(), 3);
    }
}
