//! Finding owners and owned objects, written once over the object kind: the index every controller
//! lists its candidates from, the candidates themselves, and the two lookups an event handler makes
//! (the controller a reference points to, and the owners whose selector takes an orphan). Upstream
//! spreads these over `PodControllerUIDIndex`, each controller's `resolveControllerRef` and the
//! listers' `GetPod*`/`GetDeploymentsForReplicaSet` expansions; kube-runtime's `trigger_owners` is the
//! same idea.

use std::sync::Arc;

use informer::{LabelMatcher, Lister, Store, store::IndexFn};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::{pod_util::controller_of, ref_manager::Owner};

/// Index name: objects by their controller's UID, and orphans by namespace (upstream
/// `PodControllerUIDIndex`, applied to ReplicaSets too). One name for every kind, so that two
/// controllers sharing an informer (the ReplicaSet and the Deployment controller on ReplicaSets)
/// share one index instead of keeping two identical ones.
pub const OWNER_INDEX: &str = "owner";

/// The index value of objects controlled by the object with this UID.
pub fn owned_by(uid: &str) -> String {
    uid.to_owned()
}

/// The index value of objects in `namespace` with no controller.
pub fn orphans_in(namespace: &str) -> String {
    format!("orphan/{namespace}")
}

/// Files an object under its controller's UID, or under `orphan/<namespace>`. A controller's
/// candidates are then its own objects plus the orphans it may adopt, without scanning the namespace.
pub fn owner_index<K: Resource>() -> IndexFn<K> {
    Arc::new(|obj: &K| {
        let meta = obj.meta();
        match controller_of(meta) {
            Some(r) => vec![owned_by(&r.uid)],
            None => vec![orphans_in(meta.namespace.as_deref().unwrap_or(""))],
        }
    })
}

/// The objects `owner` controls plus the orphans of its namespace: what its claims decide over.
/// `store` must carry [`OWNER_INDEX`].
pub fn candidates<K: Resource, O: Resource>(store: &Store<K>, owner: &O) -> Vec<Arc<K>> {
    let meta = owner.meta();
    let uid = meta.uid.as_deref().unwrap_or_default();
    let ns = meta.namespace.as_deref().unwrap_or_default();
    let mut found = controlled_by(store, uid);
    found.extend(store.by_index(OWNER_INDEX, &orphans_in(ns)).unwrap_or_default());
    found
}

/// The objects whose controller has this UID. `store` must carry [`OWNER_INDEX`].
pub fn controlled_by<K: Resource>(store: &Store<K>, uid: &str) -> Vec<Arc<K>> {
    store.by_index(OWNER_INDEX, &owned_by(uid)).unwrap_or_default()
}

/// The pods in `namespace` whose controller reference names this owner by kind and name as well as
/// UID, as upstream's pod controllers list them (`FilterPodsByOwner`, whose index key holds all four):
/// a reference that carries the owner's UID under another kind or name, or from another namespace,
/// makes the pod no one's, never counted or deleted. (Claims over ReplicaSets go by UID alone, there
/// and here: [`candidates`].)
pub fn controlled_pods<K: Resource>(
    store: &Store<K>,
    namespace: &str,
    kind: &str,
    name: &str,
    uid: &str,
) -> Vec<Arc<K>> {
    let mut found = controlled_by(store, uid);
    found.retain(|o| names_owner(o.meta(), namespace, kind, name));
    found
}

/// Whether `meta` is in `namespace` with a controller reference of this kind and name.
fn names_owner(meta: &ObjectMeta, namespace: &str, kind: &str, name: &str) -> bool {
    meta.namespace.as_deref().unwrap_or_default() == namespace
        && controller_of(meta).is_some_and(|r| r.kind == kind && r.name == name)
}

/// [`candidates`] for a pod controller: the orphans, and of its own only those [`controlled_pods`]
/// would find.
pub fn pod_candidates<K, O>(store: &Store<K>, owner: &O) -> Vec<Arc<K>>
where
    K: Resource,
    O: Resource<DynamicType = ()>,
{
    let meta = owner.meta();
    let ns = meta.namespace.as_deref().unwrap_or_default();
    let (kind, name) = (O::kind(&()), meta.name.as_deref().unwrap_or_default());
    let mut found = candidates(store, owner);
    found.retain(|o| controller_of(o.meta()).is_none() || names_owner(o.meta(), ns, &kind, name));
    found
}

/// The `K` a controller reference points to, if the lister knows one of that kind, name and UID
/// (upstream's `resolveControllerRef`): a reference to a deleted and re-created owner resolves to
/// nothing.
pub fn resolve_controller<K>(
    lister: &Lister<K>,
    namespace: Option<&str>,
    r: &OwnerReference,
) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()>,
{
    if r.kind != K::kind(&()) {
        return None;
    }
    lister
        .get(namespace, &r.name)
        .filter(|o| o.meta().uid.as_deref() == Some(r.uid.as_str()))
}

/// The owners in `child`'s namespace whose selector takes `child`: what an orphan's change wakes.
/// `selector` gives an owner's matcher, or `None` where the owner selects nothing here (an invalid
/// or empty selector). A child without labels wakes no one, as upstream's lister expansions return
/// an error for it; the next sync of a selecting owner still adopts it.
pub fn selecting<K>(
    lister: &Lister<K>,
    child: &ObjectMeta,
    selector: impl Fn(&K) -> Option<LabelMatcher>,
) -> Vec<Arc<K>>
where
    K: Resource,
{
    let Some(ns) = child.namespace.as_deref() else {
        return Vec::new();
    };
    let labels = child.labels.as_ref().filter(|l| !l.is_empty());
    if labels.is_none() {
        return Vec::new();
    }
    lister
        .list_namespace(ns, &LabelMatcher::Everything)
        .into_iter()
        .filter(|o| selector(o).is_some_and(|m| m.matches_labels(labels)))
        .collect()
}

impl Owner {
    /// The claiming owner for any kind: its apiVersion and kind from the type, the rest from its
    /// metadata.
    pub fn of<K: Resource<DynamicType = ()>>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            api_version: K::api_version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
        }
    }
}

#[cfg(test)]
#[path = "owners_tests.rs"]
mod tests;
