//! Waiting for caches (client-go `WaitForCacheSync`).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{listener::HandlerRegistration, shared::SharedInformer};

/// How often `wait_for_cache_sync` looks (client-go `syncedPollPeriod`).
pub const CACHE_SYNC_POLL_PERIOD: Duration = Duration::from_millis(100);

/// Anything that can tell whether it has synced.
pub trait HasSynced: Send + Sync {
    fn has_synced(&self) -> bool;
}

impl HasSynced for HandlerRegistration {
    fn has_synced(&self) -> bool {
        HandlerRegistration::has_synced(self)
    }
}

impl<K> HasSynced for SharedInformer<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    fn has_synced(&self) -> bool {
        SharedInformer::has_synced(self)
    }
}

/// Waits until every one has synced (true) or `cancel` fires first (false).
pub async fn wait_for_cache_sync(cancel: &CancellationToken, synced: &[&dyn HasSynced]) -> bool {
    loop {
        if synced.iter().all(|s| s.has_synced()) {
            return true;
        }
        tokio::select! {
            () = cancel.cancelled() => return false,
            () = tokio::time::sleep(CACHE_SYNC_POLL_PERIOD) => {}
        }
    }
}
