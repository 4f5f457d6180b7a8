//! Transforms run on every object before it is stored (client-go `TransformFunc`).

use std::sync::Arc;

use kube::Resource;

/// Mutates an object in place before it reaches the store and the handlers. Must be idempotent.
pub type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// Drops `metadata.managedFields`, which no controller reads and which is often half of an object's
/// metadata. kube-controller-manager installs the same transform on its informer factory.
pub fn strip_managed_fields<K: Resource>() -> Transform<K> {
    Arc::new(|obj: &mut K| obj.meta_mut().managed_fields = None)
}
