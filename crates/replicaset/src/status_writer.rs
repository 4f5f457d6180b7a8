//! Writing the status to the object's status subresource, in its own kind's shape.

use k8s_openapi::api::apps::v1::ReplicaSetStatus;
use kube::{Api, Client};

use controller::{
    ControlError, get_verb,
    writes::{self, Written},
};

use crate::kind::ReplicaKind;

/// Writes `status` (with `observedGeneration` set to the generation acted on) with a full PUT of the
/// status subresource; on failure reads the object again and retries once (upstream
/// `updateReplicaSetStatus`, `statusUpdateRetries = 1`).
pub async fn write_status<K: ReplicaKind>(
    client: &Client,
    obj: &K,
    mut status: ReplicaSetStatus,
) -> Result<Written, ControlError> {
    let meta = obj.meta();
    let ns = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let key = format!("{ns}/{name}");
    status.observed_generation = meta.generation;
    let mut body = obj.with_status(status.clone());
    body.meta_mut().managed_fields = None;
    let first = writes::replace_status(client, &ns, &name, &body).await;
    let Err(first_err) = first else {
        return first.map_err(|e| ControlError::api("update status", key, e));
    };
    tracing::debug!(object = %key, kind = %K::kind(&()), "status update failed ({first_err}); retrying once with a fresh read");
    let api: Api<K> = Api::namespaced(client.clone(), &ns);
    let fresh = api
        .get(&name)
        .await
        .map_err(|e| ControlError::api(get_verb(&K::kind(&())), key.clone(), e))?;
    writes::replace_status(client, &ns, &name, &fresh.with_status(status))
        .await
        .map_err(|e| ControlError::api("update status", key, e))
}
