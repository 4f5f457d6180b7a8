//! Errors from the API calls controllers make, with the object they concern.

/// The status cause the API server gives when a namespace is being deleted.
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// The cause under the error of a request that a layer of this process's own client refused (a
/// shard's write fence, shadow mode's read-only guard): it never left, and waiting changes nothing,
/// so nothing sends it again (the event recorder's tries among them, `events::transient`).
#[derive(Debug, Clone, Copy, Default, thiserror::Error)]
#[error("refused by this process")]
pub struct RefusedHere;

/// A write to the API server that failed, naming the object.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("{message}")]
    Api {
        /// `create pod`, `delete pod`, `patch pod`, `update status`, ...
        verb: &'static str,
        /// `namespace/name` of the object, or of the owner for creations.
        key: String,
        /// What upstream's error shows, and so what events and the ReplicaFailure condition show:
        /// the server's message, with the context upstream's `PodControl` adds (see
        /// [`ControlError::delete_pod`]).
        message: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// Upstream's text exactly (`RealPodControl.createPods`), as it becomes the ReplicaFailure
    /// message; the owner is kept for logs, which name it through the sync's error.
    #[error("unable to create pods, no labels")]
    NoLabels { owner: String },
    #[error("{what}: {message}")]
    Refused { what: String, message: String },
}

impl ControlError {
    pub fn api(verb: &'static str, key: impl Into<String>, source: kube::Error) -> Self {
        let message = message_of(&source);
        ControlError::Api {
            verb,
            key: key.into(),
            message,
            source: Box::new(source),
        }
    }

    /// A failed pod delete as upstream's `RealPodControl.DeletePod` returns it, the server's
    /// message after `unable to delete pods: `, which the ReplicaFailure condition shows. NotFound
    /// is returned unwrapped, as upstream does: callers count it as done.
    pub fn delete_pod(key: impl Into<String>, source: kube::Error) -> Self {
        let mut err = Self::api("delete pod", key, source);
        if !err.is_not_found()
            && let ControlError::Api { message, .. } = &mut err
        {
            *message = format!("unable to delete pods: {message}");
        }
        err
    }

    fn status(&self) -> Option<&kube::core::Status> {
        match self {
            ControlError::Api { source, .. } => match &**source {
                kube::Error::Api(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    /// A create under a name the server already has: the AlreadyExists reason, not any 409
    /// (apimachinery `IsAlreadyExists` looks at the reason only).
    pub fn is_already_exists(&self) -> bool {
        self.status().is_some_and(kube::core::Status::is_already_exists)
    }

    /// 422 Invalid, e.g. a UID precondition that no longer holds.
    pub fn is_invalid(&self) -> bool {
        self.code() == Some(422)
    }

    /// The namespace is being deleted: creations there will never succeed.
    pub fn is_namespace_terminating(&self) -> bool {
        self.status().is_some_and(namespace_terminating)
    }
}

/// Whether `status` says its namespace is being deleted (apimachinery `HasStatusCause` with
/// [`NAMESPACE_TERMINATING_CAUSE`]).
pub(crate) fn namespace_terminating(status: &kube::core::Status) -> bool {
    status
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == NAMESPACE_TERMINATING_CAUSE))
}

/// The text upstream shows for an error: the Status message for API errors.
pub fn message_of(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(s) if !s.message.is_empty() => s.message.clone(),
        other => other.to_string(),
    }
}
