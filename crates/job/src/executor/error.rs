//! Why a sync must be retried (with the queue's backoff).

use controller::ControlError;
use controller::StaleCache;
use informer::{ObjectKey, SelectorError};

/// Why a sync must be retried (with the queue's backoff).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Upstream returns this error from `getPodsForJob` (no event): the Job is retried with backoff
    /// until it is fixed or deleted; other Jobs go on.
    #[error("couldn't convert the selector of Job {key}: {source}")]
    InvalidSelector { key: ObjectKey, source: SelectorError },
    /// A cache is older than this controller's own write (1.36 `StaleControllerConsistencyJob`).
    #[error("not syncing Job {key} yet: {source}")]
    Stale { key: ObjectKey, source: StaleCache },
    #[error("claiming pods for Job {key}: {source}")]
    Claim { key: ObjectKey, source: ControlError },
    #[error("managing the pods of Job {key}: {source}")]
    Manage { key: ObjectKey, source: ControlError },
    #[error("tracking the status of Job {key}: {source}")]
    Status { key: ObjectKey, source: ControlError },
    #[error("removing tracking finalizers of Job {key}: {source}")]
    Finalizers { key: ObjectKey, source: ControlError },
}
