//! Doing: carries out a [`SyncPlan`]: ReplicaSet adoption and release ([`Executor::claim`], first),
//! then creation (with upstream's collision handling), updates, history deletions, then the
//! Deployment's status or, for a rollback, its spec; each write's events once it succeeded. The
//! first failed write ends the sync, to be retried with backoff, as upstream; a rolling update's
//! old-ReplicaSet scale-downs are the exception, as upstream's: their failure stops the other
//! scale-downs only, and the status is still written.

use controller::ClaimPlan;
use controller::ClaimWrites;
use controller::PlannedEvent;
use controller::execute_claims;
use controller::recheck_owner;
use std::{sync::Arc, time::Duration};

use controller::Clock;
use controller::ControlError;
use controller::EventRecorder;
use controller::Owner;
use controller::adopt_patch;
use controller::events::TYPE_WARNING;
use controller::object_reference;
use controller::release_patch;
use controller::writes;
use informer::{Lister, ObjectKey};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::{
    Client,
    api::{DeleteParams, Patch, PatchParams},
};

use crate::{
    conditions::{self, FALSE, PROGRESSING},
    plan::{Actions, Decision, MSG_SELECTING_ALL, PlanError, REASON_SELECTING_ALL, RsWrite, SyncPlan},
    replica_sets as rsu, spec,
};

/// Why a sync must be retried (with the rate limiter).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("claiming replica sets for {key}: {source}")]
    Claim { key: ObjectKey, source: ControlError },
    #[error("creating the new replica set of {key}: {source}")]
    Create { key: ObjectKey, source: ControlError },
    #[error(
        "hash collision for {key}: replica set {name} exists and is not this Deployment's; collisionCount raised"
    )]
    Collision { key: ObjectKey, name: String },
    #[error("updating a replica set of {key}: {source}")]
    Update { key: ObjectKey, source: ControlError },
    #[error("deleting an old replica set of {key}: {source}")]
    Delete { key: ObjectKey, source: ControlError },
    #[error("updating the status of {key}: {source}")]
    Status { key: ObjectKey, source: ControlError },
    #[error("rolling back {key}: {source}")]
    Rollback { key: ObjectKey, source: ControlError },
    /// As upstream: an error, retried with backoff and told in no event, that only a change to the
    /// Deployment fixes (a selector that does not parse, a maxSurge percentage past int32).
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// The writes of one Deployment controller.
pub struct Executor {
    pub client: Client,
    pub recorder: EventRecorder,
    pub replica_sets: Lister<ReplicaSet>,
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").finish_non_exhaustive()
    }
}

impl Executor {
    /// Carries out `plan`'s decision for `d`, its claims made already ([`Self::claim`]); returns
    /// when to sync again.
    pub async fn execute(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        plan: SyncPlan,
    ) -> Result<Option<Duration>, SyncError> {
        let SyncPlan { owner, decision, .. } = plan;
        let reference = object_reference(&owner);
        match decision {
            Decision::SelectingAll { observed } => {
                self.recorder.record(
                    &reference,
                    TYPE_WARNING,
                    REASON_SELECTING_ALL,
                    MSG_SELECTING_ALL.to_owned(),
                );
                if let Some(w) = observed {
                    // Upstream ignores this write's outcome too.
                    let _ = self.write_status(key, &w).await;
                }
                Ok(None)
            }
            Decision::Sync(actions) => self.apply(key, &owner, d, *actions).await,
        }
    }

    async fn apply(
        &self,
        key: &ObjectKey,
        owner: &Owner,
        d: &Deployment,
        a: Actions,
    ) -> Result<Option<Duration>, SyncError> {
        let reference = object_reference(owner);
        let emit = |events: &[PlannedEvent]| {
            for e in events {
                self.recorder
                    .record(&reference, e.type_, e.reason.clone(), e.message.clone());
            }
        };
        emit(&a.events);
        let (client, ns) = (&self.client, owner.namespace.as_str());
        if let Some(create) = &a.create {
            match writes::create(client, ns, &create.rs).await {
                Ok(_) => emit(&create.events),
                Err(e) => return self.create_failed(key, owner, d, &a, create, e).await,
            }
        }
        let mut gave_up = false;
        for u in &a.updates {
            if u.best_effort && gave_up {
                continue;
            }
            let name = rsu::name(&u.rs);
            match writes::replace(client, ns, name, &u.rs).await {
                Ok(_) => emit(&u.events),
                Err(e) => {
                    let source =
                        ControlError::api("update replicaset", format!("{}/{name}", owner.namespace), e);
                    if !u.best_effort {
                        return Err(SyncError::Update {
                            key: key.clone(),
                            source,
                        });
                    }
                    // Upstream's rolling update stops scaling old ReplicaSets down at the first
                    // failure and still cleans up and writes the status; the next event syncs again.
                    tracing::warn!(deployment = %key, "scaling down an old replica set: {source}");
                    gave_up = true;
                }
            }
        }
        for rs in &a.deletes {
            let name = rsu::name(rs);
            match writes::delete::<ReplicaSet>(client, ns, name, &DeleteParams::default()).await {
                Ok(()) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(SyncError::Delete {
                        key: key.clone(),
                        source: ControlError::api(
                            "delete replicaset",
                            format!("{}/{name}", owner.namespace),
                            e,
                        ),
                    });
                }
            }
        }
        if let Some(w) = &a.status {
            self.write_status(key, w).await?;
        }
        if let Some((w, events)) = &a.rollback {
            emit(&events.before);
            let mut body = w.clone();
            body.metadata.managed_fields = None;
            writes::replace(client, ns, &owner.name, &body)
                .await
                .map_err(|e| SyncError::Rollback {
                    key: key.clone(),
                    source: ControlError::api("update deployment", key.to_string(), e),
                })?;
            emit(&events.after);
        }
        Ok(a.requeue_after)
    }

    /// Upstream's three outcomes of a failed create (only the AlreadyExists reason is the first two;
    /// any other failure, another 409 included, is the third): the ReplicaSet exists and is ours (a stale
    /// cache; plan again), it exists and is not (a hash collision: raise collisionCount so the next
    /// name differs), or the create failed (ReplicaSetCreateError on Progressing and in an event).
    async fn create_failed(
        &self,
        key: &ObjectKey,
        owner: &Owner,
        d: &Deployment,
        a: &Actions,
        create: &RsWrite,
        e: kube::Error,
    ) -> Result<Option<Duration>, SyncError> {
        let name = rsu::name(&create.rs).to_owned();
        let already_exists = is_already_exists(&e);
        let source = ControlError::api("create replicaset", format!("{}/{name}", owner.namespace), e);
        if already_exists {
            let existing = self.replica_sets.get(Some(&owner.namespace), &name);
            let Some(existing) = existing else {
                // Not in the cache yet: plan again once it is.
                return Err(SyncError::Create {
                    key: key.clone(),
                    source,
                });
            };
            let ours = controller::pod_util::is_controlled_by(&existing.metadata, &owner.uid);
            let same = rsu::template(&existing)
                .zip(d.spec.as_ref().map(|s| &s.template))
                .is_some_and(|(a, b)| rsu::equal_ignore_hash(a, b));
            if ours && same {
                return Ok(Some(Duration::ZERO));
            }
            let mut w = d.clone();
            let status = w.status.get_or_insert_with(Default::default);
            status.collision_count = Some(status.collision_count.unwrap_or(0).saturating_add(1));
            self.write_status(key, &w).await?;
            return Err(SyncError::Collision {
                key: key.clone(),
                name,
            });
        }
        if source.is_namespace_terminating() {
            // Every create there will fail; nothing to report or retry.
            return Ok(None);
        }
        let message = format!(
            "Failed to create new replica set {}: {source}",
            conditions::quoted(&name)
        );
        if spec::progress_deadline(d).is_some() {
            let mut w = a.before_create.clone().unwrap_or_else(|| d.clone());
            let c = conditions::new(
                PROGRESSING,
                FALSE,
                conditions::FAILED_RS_CREATE,
                message.clone(),
                self.clock.now(),
            );
            conditions::set(w.status.get_or_insert_with(Default::default), c);
            // The create error is the one to report; this write's outcome does not matter.
            let _ = self.write_status(key, &w).await;
        }
        self.recorder.record(
            &object_reference(owner),
            TYPE_WARNING,
            conditions::FAILED_RS_CREATE,
            message,
        );
        Err(SyncError::Create {
            key: key.clone(),
            source,
        })
    }

    /// Writes the Deployment's status and annotations through the status subresource (a full PUT,
    /// as upstream's `UpdateStatus`; no retry: a conflict is retried by the next sync).
    async fn write_status(&self, key: &ObjectKey, w: &Deployment) -> Result<(), SyncError> {
        let ns = w.metadata.namespace.as_deref().unwrap_or_default();
        let name = w.metadata.name.as_deref().unwrap_or_default();
        let mut body = w.clone();
        body.metadata.managed_fields = None;
        writes::replace_status(&self.client, ns, name, &body)
            .await
            .map(drop)
            .map_err(|e| SyncError::Status {
                key: key.clone(),
                source: ControlError::api("update status", key.to_string(), e),
            })
    }

    /// Adopts and releases ReplicaSets ([`execute_claims`]: all of them whatever fails, adoption
    /// after one fresh read of the Deployment) and returns the UIDs of the orphans that were gone
    /// when adopted: the sync must be planned without them. Any other failure, an adoption refused
    /// because another controller took the ReplicaSet first among them, fails the sync once every
    /// claim was tried, so that nothing is planned over a ReplicaSet that is not the Deployment's
    /// (upstream `ClaimReplicaSets`).
    pub async fn claim(
        &self,
        key: &ObjectKey,
        owner: &Owner,
        claims: &ClaimPlan<ReplicaSet>,
    ) -> Result<Vec<String>, SyncError> {
        let outcome = execute_claims(&ReplicaSetClaims(&self.client), owner, claims, || {
            recheck_owner::<Deployment>(&self.client, owner, "replica sets")
        })
        .await;
        outcome.gone_or_first_error().map_err(|source| SyncError::Claim {
            key: key.clone(),
            source,
        })
    }
}

/// Whether a create failed because the object exists: the AlreadyExists reason, not any 409
/// (apimachinery `IsAlreadyExists` looks at the reason only).
pub fn is_already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_already_exists())
}

/// ReplicaSets claimed with plain patches.
struct ReplicaSetClaims<'a>(&'a Client);

impl ClaimWrites<ReplicaSet> for ReplicaSetClaims<'_> {
    fn adopt_patch(&self, owner: &Owner, rs: &ReplicaSet) -> serde_json::Value {
        adopt_patch(owner, rs.metadata.uid.as_deref().unwrap_or(""))
    }

    fn release_patch(&self, owner: &Owner, rs: &ReplicaSet) -> serde_json::Value {
        release_patch(&owner.uid, rs.metadata.uid.as_deref().unwrap_or(""))
    }

    async fn patch(
        &self,
        rs: &ReplicaSet,
        patch: &serde_json::Value,
    ) -> Result<Option<String>, ControlError> {
        let (ns, name) = (rs.metadata.namespace.as_deref().unwrap_or(""), rsu::name(rs));
        writes::patch::<ReplicaSet, _>(
            self.0,
            ns,
            name,
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
        .map(|w| w.metadata.resource_version)
        .map_err(|e| ControlError::api("patch replicaset", format!("{ns}/{name}"), e))
    }
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
