//! Writing a ReplicaSet's status to its status subresource.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use kube::{Api, Client};

use controller::{
    ControlError,
    writes::{self, Written},
};

/// Writes `status` (with `observedGeneration` set to the generation acted on) with a full PUT of the
/// status subresource; on failure reads the ReplicaSet again and retries once (upstream
/// `updateReplicaSetStatus`, `statusUpdateRetries = 1`).
pub async fn write_replica_set_status(
    client: &Client,
    rs: &ReplicaSet,
    mut status: ReplicaSetStatus,
) -> Result<Written, ControlError> {
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    let key = format!("{ns}/{name}");
    status.observed_generation = rs.metadata.generation;
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    let mut body = rs.clone();
    body.metadata.managed_fields = None;
    body.status = Some(status.clone());
    let first = writes::replace_status(client, &ns, &name, &body).await;
    let Err(first_err) = first else {
        return first.map_err(|e| ControlError::api("update status", key, e));
    };
    tracing::debug!(replica_set = %key, "status update failed ({first_err}); retrying once with a fresh read");
    let mut fresh = api
        .get(&name)
        .await
        .map_err(|e| ControlError::api("get replicaset", key.clone(), e))?;
    fresh.status = Some(status);
    writes::replace_status(client, &ns, &name, &fresh)
        .await
        .map_err(|e| ControlError::api("update status", key, e))
}
