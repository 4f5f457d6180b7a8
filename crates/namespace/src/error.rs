//! What a pass can fail with, each naming the namespace.

use controller::ControlError;

#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    #[error("namespace {name}: {source}")]
    Api { name: String, source: ControlError },
    /// Upstream `retryOnConflictError`: the namespace read after a conflict is another one.
    #[error("namespace {name}: namespace uid has changed across retries")]
    UidChanged { name: String },
    /// What stopped the namespace from being emptied; it is tried again with backoff.
    #[error("deletion of namespace {name} failed: {}", errors.join(", "))]
    Content { name: String, errors: Vec<String> },
}

impl DeleteError {
    pub(crate) fn api(name: &str, verb: &'static str, source: kube::Error) -> Self {
        DeleteError::Api {
            name: name.to_owned(),
            source: ControlError::api(verb, name, source),
        }
    }
}
