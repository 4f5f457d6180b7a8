//! The pod patches of the Job controller, as upstream sends them: strategic merge patches that
//! change only the owner reference and the tracking finalizer, so they never overwrite another
//! writer's change. Adoption and release also carry the pod's UID as a precondition, so a pod
//! re-created under the name is left alone.

use controller::compact_pod::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Value, json};

use crate::spec::JOB_TRACKING_FINALIZER;

/// The patch removing the tracking finalizer (strategic merge, primitive list).
pub(crate) fn remove_finalizer_patch() -> Value {
    json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}})
}

/// Adoption: the Job's controller reference, and the tracking finalizer so the pod is counted.
pub(super) fn adoption_patch(owner_ref: &OwnerReference, p: &Pod) -> Value {
    json!({"metadata": {
        "ownerReferences": [owner_ref],
        "uid": p.metadata.uid,
        "finalizers": [JOB_TRACKING_FINALIZER]}})
}

/// Release: the Job's owner reference and the tracking finalizer go; the Job no longer counts it.
pub(super) fn release_patch(owner_uid: &str, p: &Pod) -> Value {
    json!({"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
        "uid": p.metadata.uid,
        "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}})
}
