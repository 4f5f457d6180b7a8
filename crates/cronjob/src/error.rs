//! What a sync can fail with, each naming the CronJob.

use controller::ControlError;
use informer::ObjectKey;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A read or write of the API server failed; the queue retries the CronJob with backoff.
    #[error("CronJob {key}: {source}")]
    Api { key: ObjectKey, source: ControlError },
    /// A Job the Replace policy had to delete is still there (upstream's words).
    #[error("could not replace job {job}")]
    Replace { key: ObjectKey, job: String },
}
