//! Index functions: each maps an object to the values it is filed under (client-go `index.go`).

use std::sync::Arc;

use kube::Resource;

/// An index function. It may return several values (or none) per object.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The name of the namespace index (client-go `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// Files an object under its namespace (client-go `MetaNamespaceIndexFunc`).
pub fn namespace_index<K: Resource>() -> IndexFn<K> {
    Arc::new(|obj: &K| obj.meta().namespace.iter().cloned().collect())
}
