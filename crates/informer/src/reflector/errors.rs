use std::time::Duration;

/// Why one list-and-watch attempt ended. The reflector logs it, backs off and starts again; none of
/// these stops it.
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError {
    #[error("{resource}: list failed: {source}")]
    List { resource: String, source: kube::Error },
    #[error("{resource}: watch failed: {source}")]
    Watch { resource: String, source: kube::Error },
    #[error("{resource}: watch returned an error: {code} {reason}: {message}")]
    WatchStatus {
        resource: String,
        code: u16,
        reason: String,
        message: String,
    },
    #[error("{resource}: resource version {resource_version:?} is too old (410 Gone); relisting")]
    Expired {
        resource: String,
        resource_version: String,
    },
    #[error("{resource}: watch closed after {elapsed:?} without events")]
    VeryShortWatch { resource: String, elapsed: Duration },
}

impl ReflectorError {
    /// Expected in normal operation (compaction, apiserver restarts): logged at info, not as an error.
    pub fn is_expected(&self) -> bool {
        matches!(
            self,
            ReflectorError::Expired { .. } | ReflectorError::VeryShortWatch { .. }
        )
    }
}

/// 410 Gone / Expired, or "too large resource version": the RV cannot be served, relist from "".
pub(crate) fn is_expired(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(s) => is_expired_status(s.code, &s.reason, &s.message),
        _ => false,
    }
}

pub(crate) fn is_expired_status(code: u16, reason: &str, message: &str) -> bool {
    code == 410 || reason == "Expired" || reason == "Gone" || message.contains("Too large resource version")
}

/// Errors after which the watch is simply retried after a backoff, without a relist (client-go
/// `isWatchErrorRetriable`: throttling and refused connections).
pub(crate) fn is_retriable(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(s) => s.code == 429,
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            let text = format!("{err:?}");
            text.contains("Connection refused") || text.contains("ConnectionRefused")
        }
        _ => false,
    }
}

/// The server refused a streaming list (watch-list): fall back to LIST for this attempt.
pub(crate) fn is_watch_list_refused(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if (400..500).contains(&s.code) && s.code != 429 && s.code != 410)
}
