//! What a sync can fail with, naming the namespace.

use controller::ControlError;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Each account that could not be created, for one namespace.
    #[error("namespace {namespace}: {}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Create {
        namespace: String,
        errors: Vec<ControlError>,
    },
}
