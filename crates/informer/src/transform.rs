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

/// Reduces a Pod to what the workload controllers (ReplicaSet, Deployment, Job) read: metadata
/// without managedFields, `spec.nodeName`, `spec.restartPolicy`, the containers' names, and the whole
/// status. Everything else in the spec (volumes, container details, tolerations, affinity, ...) is
/// dropped. `k8s-openapi`'s `Pod` keeps every optional field inline (a `Container` is about 2 KiB and a
/// `Volume` 3 KiB before any content), so this is where most of a cached pod's memory goes.
///
/// Only for informers whose handlers and listers need no more than that; the pod informer that
/// kcm-rs's controllers share is one.
pub fn slim_pod(pod: &mut k8s_openapi::api::core::v1::Pod) {
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    pod.metadata.managed_fields = None;
    if let Some(spec) = pod.spec.take() {
        let names = |cs: Vec<Container>| -> Vec<Container> {
            cs.into_iter()
                .map(|c| Container {
                    name: c.name,
                    ..Container::default()
                })
                .collect()
        };
        pod.spec = Some(PodSpec {
            node_name: spec.node_name,
            restart_policy: spec.restart_policy,
            containers: names(spec.containers),
            init_containers: spec.init_containers.map(names).filter(|v| !v.is_empty()),
            ..PodSpec::default()
        });
    }
}
