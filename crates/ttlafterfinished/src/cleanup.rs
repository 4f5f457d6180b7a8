//! Doing: the deletion of a Job the cache says is due, after deciding again on a fresh read (upstream
//! `processJob` from its `Get` on): the cache may be behind a TTL raised, or a Job deleted and
//! re-created under the same name, and the UID read is the delete's precondition.

use std::time::Duration;

use controller::{Clock, ControlError, writes};
use informer::ObjectKey;
use k8s_openapi::api::batch::v1::Job;
use kube::{
    Api, Client,
    api::{DeleteParams, Preconditions, PropagationPolicy},
};

use crate::{
    error::SyncError,
    expiry::{Decision, decide},
};

/// What a cleanup did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cleanup {
    /// Gone, or no longer due and nothing to wait for.
    Nothing,
    /// Not due after all: look again after this long.
    Later(Duration),
    /// Deleted this many seconds after it became due.
    Deleted { late_seconds: f64 },
}

/// Reads the Job at `key` from the API server, decides again, and deletes it in the foreground if
/// it is due, on the condition that its UID is still the one read.
pub async fn delete_if_due(
    client: &Client,
    clock: &dyn Clock,
    key: &ObjectKey,
) -> Result<Cleanup, SyncError> {
    let api = |verb, e| SyncError::Api {
        key: key.clone(),
        source: ControlError::api(verb, key.to_string(), e),
    };
    let ns = key.namespace().unwrap_or_default();
    let Some(fresh) = Api::<Job>::namespaced(client.clone(), ns)
        .get_opt(key.name())
        .await
        .map_err(|e| api("get job", e))?
    else {
        return Ok(Cleanup::Nothing);
    };
    let decision = decide(&fresh, clock.now()).map_err(|source| SyncError::Expiry {
        key: key.clone(),
        source,
    })?;
    let expired_at = match decision {
        Decision::Delete { expired_at } => expired_at,
        Decision::Later(d) => return Ok(Cleanup::Later(d)),
        Decision::Nothing => return Ok(Cleanup::Nothing),
    };
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        preconditions: Some(Preconditions {
            uid: fresh.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    writes::delete::<Job>(client, ns, key.name(), &params)
        .await
        .map_err(|e| api("delete job", e))?;
    let late = expired_at.duration_until(clock.now()).as_secs_f64().max(0.0);
    Ok(Cleanup::Deleted { late_seconds: late })
}

#[cfg(test)]
#[path = "cleanup_tests.rs"]
mod tests;
