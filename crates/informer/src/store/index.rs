//! Index functions: each maps an object to the values it is filed under (client-go `index.go`).

use std::sync::Arc;

use kube::Resource;

/// An index function. It may return several values (or none) per object.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The name of the namespace index (client-go `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";
/// The name of the index on the UID of an object's controller (its ownerReference with controller=true).
pub const CONTROLLER_UID_INDEX: &str = "controller-uid";

/// Files an object under its namespace (client-go `MetaNamespaceIndexFunc`).
pub fn namespace_index<K: Resource>() -> IndexFn<K> {
    Arc::new(|obj: &K| obj.meta().namespace.iter().cloned().collect())
}

/// Files an object under the UID of its controller, if it has one. Controllers use it to find the pods
/// they own without scanning the namespace.
pub fn controller_uid_index<K: Resource>() -> IndexFn<K> {
    Arc::new(|obj: &K| {
        obj.meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.controller == Some(true))
            .map(|r| r.uid.clone())
            .take(1)
            .collect()
    })
}
