//! The pod index controllers list their candidates from.

use crate::compact_pod::Pod;
use std::sync::Arc;

use informer::store::IndexFn;

use crate::pod_util::controller_of;

/// Index name: pods by controller UID, and orphans by namespace (upstream `PodControllerUIDIndex`).
pub const POD_OWNER_INDEX: &str = "pod-owner";

/// The index value of pods controlled by the object with this UID.
pub fn owned_by(uid: &str) -> String {
    uid.to_owned()
}

/// The index value of pods in `namespace` with no controller.
pub fn orphans_in(namespace: &str) -> String {
    format!("orphan/{namespace}")
}

/// Files a pod under its controller's UID, or under `orphan/<namespace>`. A controller's candidates are
/// then its own pods plus the orphans it may adopt, without scanning the namespace.
pub fn pod_owner_index() -> IndexFn<Pod> {
    Arc::new(|pod: &Pod| match controller_of(&pod.metadata) {
        Some(r) => vec![owned_by(&r.uid)],
        None => vec![orphans_in(pod.metadata.namespace.as_deref().unwrap_or(""))],
    })
}
