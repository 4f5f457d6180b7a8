//! Why one look at an object failed, naming the object as upstream's logs do.

use crate::identity::Identity;

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// Discovery has no resource for the kind in that version (yet): retried quietly, as upstream
    /// retries a REST mapping error, since a CRD may just have been created.
    #[error("unable to get REST mapping for {kind}.{api_version}")]
    NoMapping { api_version: String, kind: String },
    /// The object is still known only as someone's owner: looked at again, quietly, until a monitor
    /// sees it or it is found gone.
    #[error("item {0} hasn't been observed via informer yet")]
    NotObserved(Box<Identity>),
    #[error("error syncing item {item}: {source}")]
    Api {
        item: Box<Identity>,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "updateMaxRetries({attempts}) has reached. The garbage collector will retry later for owner {item}"
    )]
    Conflicts { item: Box<Identity>, attempts: usize },
    #[error("failed to orphan dependents of owner {owner}, got errors: {errors}")]
    Orphaning { owner: Box<Identity>, errors: String },
}

impl GcError {
    /// Whether this failure is expected while the graph catches up, and so logged only at debug.
    pub fn is_quiet(&self) -> bool {
        matches!(self, GcError::NoMapping { .. } | GcError::NotObserved(_))
    }
}

/// Whether a kube error is the API server's 404.
pub fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

pub fn conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

pub fn unsupported_media_type(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 415)
}
