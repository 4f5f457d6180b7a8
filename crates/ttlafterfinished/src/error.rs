//! What a sync can fail with, each naming the Job.

use controller::ControlError;
use informer::ObjectKey;

use crate::expiry::ExpiryError;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("Job {key}: {source}")]
    Expiry { key: ObjectKey, source: ExpiryError },
    #[error("cleaning up Job {key}: {source}")]
    Api { key: ObjectKey, source: ControlError },
}
