//! Rollback through the deprecated `deprecated.deployment.rollback.to` annotation (apps/v1's form of
//! `spec.rollbackTo`): the Deployment takes the template of the ReplicaSet with the asked revision
//! (upstream `rollback.go`). `kubectl rollout undo` patches the template itself and never comes here.

use controller::PlannedEvent;
use controller::events::TYPE_NORMAL;

use crate::{
    annotations::{self, ROLLBACK_TO},
    conditions::quoted,
    hash::POD_TEMPLATE_HASH_LABEL,
    new_rs::SizeError,
    replica_sets as rsu,
    work::Work,
};

pub const REASON_ROLLBACK_DONE: &str = "DeploymentRollback";
pub const REASON_ROLLBACK_NOT_FOUND: &str = "DeploymentRollbackRevisionNotFound";
pub const REASON_ROLLBACK_UNCHANGED: &str = "DeploymentRollbackTemplateUnchanged";
pub const MSG_NO_LAST_REVISION: &str = "Unable to find last revision.";
pub const MSG_REVISION_NOT_FOUND: &str = "Unable to find the revision to rollback to.";

/// What a rollback tells, around the Deployment's write (upstream `rollback`): the warnings once
/// the new ReplicaSet exists, whatever the write then does, so that a sync whose creation fails
/// does not tell them again on every retry; the rollback done once the write succeeded.
#[derive(Debug, Default)]
pub struct RollbackEvents {
    pub before: Vec<PlannedEvent>,
    pub after: Vec<PlannedEvent>,
}

impl Work<'_> {
    /// Rolls back to `revision` (0: the one before the current). Whatever happens, the annotation is
    /// removed and the Deployment written, so the rollback is not tried again.
    pub fn rollback(&mut self, revision: i64) -> Result<(), SizeError> {
        self.ensure_new(true)?;
        let mut revision = revision;
        if revision == 0 {
            revision = annotations::last_revision(self.slots.iter().map(|s| &s.rs().metadata));
            if revision == 0 {
                self.clear_rollback(warning(
                    REASON_ROLLBACK_NOT_FOUND,
                    MSG_NO_LAST_REVISION.to_owned(),
                ));
                return Ok(());
            }
        }
        let target = self
            .olds_then_new()
            .find(|i| annotations::revision(&self.rs(*i).metadata).is_ok_and(|v| v == revision));
        let Some(i) = target else {
            self.clear_rollback(warning(
                REASON_ROLLBACK_NOT_FOUND,
                MSG_REVISION_NOT_FOUND.to_owned(),
            ));
            return Ok(());
        };
        let rs = self.rs(i).clone();
        let name = self.name().to_owned();
        let Some(template) = rsu::template(&rs).cloned() else {
            self.clear_rollback(RollbackEvents::default());
            return Ok(());
        };
        let d_template = self
            .d
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        if rsu::equal_ignore_hash(&d_template, &template) {
            self.clear_rollback(warning(
                REASON_ROLLBACK_UNCHANGED,
                format!(
                    "The rollback revision contains the same template as current deployment {}",
                    quoted(&name)
                ),
            ));
            return Ok(());
        }
        let mut template = template;
        if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.remove(POD_TEMPLATE_HASH_LABEL);
        }
        if let Some(spec) = self.d.spec.as_mut() {
            spec.template = template;
        }
        self.d.metadata.annotations = Some(annotations::for_rollback(
            self.d.metadata.annotations.as_ref(),
            rs.metadata.annotations.as_ref(),
        ));
        self.clear_rollback(RollbackEvents {
            before: Vec::new(),
            after: vec![PlannedEvent {
                type_: TYPE_NORMAL,
                reason: REASON_ROLLBACK_DONE.into(),
                message: format!("Rolled back deployment {} to revision {revision}", quoted(&name)),
            }],
        });
        Ok(())
    }

    /// Removes the annotation; the Deployment is then written, with `events` around the write.
    fn clear_rollback(&mut self, events: RollbackEvents) {
        if let Some(a) = self.d.metadata.annotations.as_mut() {
            a.remove(ROLLBACK_TO);
        }
        self.rollback = Some(events);
    }
}

/// A rollback that cannot be made: one warning before the write that clears the annotation.
fn warning(reason: &'static str, message: String) -> RollbackEvents {
    RollbackEvents {
        before: vec![PlannedEvent::warning(reason, message)],
        after: Vec::new(),
    }
}
