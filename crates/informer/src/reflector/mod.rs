//! The reflector (client-go `tools/cache/reflector.go`): keeps a sink in step with the API server by
//! LIST + WATCH from a resourceVersion, or by a streaming list (watch-list), relisting after 410 Gone
//! and backing off on errors.
//!
//! Resource-version rules, as upstream: the first list asks for RV "0" (served from the apiserver's
//! watch cache); later relists ask for the last RV seen; after an Expired / too-large answer the next
//! list asks for "" (a consistent read). Watches resume from the last RV seen (object or bookmark), with
//! bookmarks on and a server-side timeout drawn from 5-10 minutes so that many reflectors do not
//! reconnect in step.

mod backoff;
mod errors;
mod list;
mod watch;

use std::{sync::Arc, time::Duration};

use ahash::AHashMap;
use kube::Resource;
use rand::Rng as _;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use errors::ReflectorError;

use crate::{
    key::ObjectKey,
    listwatch::ListerWatcher,
    metrics::{NoopMetrics, ReflectorMetrics},
    transform::Transform,
};

/// First retry delay after a failed list or watch (client-go reflector `backoffManager`: 800 ms).
pub const BACKOFF_INITIAL: Duration = Duration::from_millis(800);
/// Longest retry delay (client-go: 30 s), which keeps an unhealthy apiserver at ~0.22 QPS per reflector.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The backoff starts over this long after it last started (client-go: `defaultBackoffReset`, 2
/// minutes).
pub const BACKOFF_RESET: Duration = Duration::from_secs(120);
/// Server-side watch timeouts are drawn from [MIN, 2*MIN) (client-go `defaultMinWatchTimeout`).
pub const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);
/// Page size of consistent ("" RV) lists (client-go pager default).
pub const LIST_PAGE_SIZE: u32 = 500;
/// A watch that ends sooner than this with no event is an error (client-go `VeryShortWatchError`).
pub const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);
/// The annotation on the bookmark that ends a streaming list's initial events.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// What a reflector tells its sink, in the order it learned it.
#[derive(Debug)]
pub enum ReflectorEvent<K> {
    /// The complete contents of the reflector's scope at `resource_version` (a LIST or the initial
    /// events of a watch-list). Objects in the sink's scope that are not here are gone.
    Replace {
        objects: Snapshot<K>,
        resource_version: String,
    },
    Added(K),
    Modified(K),
    Deleted(K),
    /// The server has sent everything up to this resourceVersion (a watch bookmark).
    Bookmark {
        resource_version: String,
    },
}

/// A full listing by key, each object already in the `Arc` the store will hold. A streaming list
/// builds it as its events arrive and the informer applies it as it is: no second map, and no copy
/// of the objects into a list and then into `Arc`s. With those copies an idle kcm-rs caching many
/// pods peaked well above its settled size (the `list_memory` bench; figures in benches/results/).
pub type Snapshot<K> = AHashMap<ObjectKey, Arc<K>>;

/// Reflector settings; `Default` gives upstream's.
#[derive(Clone)]
pub struct ReflectorConfig<K> {
    /// Start with a streaming list (client-go `WatchListClient`, on by default since 1.35); falls back
    /// to LIST when the server refuses it.
    pub watch_list: bool,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub transform: Option<Transform<K>>,
    pub metrics: Arc<dyn ReflectorMetrics>,
}

impl<K> Default for ReflectorConfig<K> {
    fn default() -> Self {
        Self {
            watch_list: true,
            label_selector: None,
            field_selector: None,
            transform: None,
            metrics: Arc::new(NoopMetrics),
        }
    }
}

impl<K> std::fmt::Debug for ReflectorConfig<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("watch_list", &self.watch_list)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .finish()
    }
}

/// Lists and watches one resource in one scope (all namespaces or one) and feeds a channel.
pub struct Reflector<K> {
    /// The kind's list and watch calls, in whatever wire format it is fetched.
    api: Box<dyn ListerWatcher<K>>,
    /// For logs and errors, e.g. `pods` or `pods in ns1`.
    resource: String,
    config: ReflectorConfig<K>,
    /// The RV of the newest event or list seen; where the next watch starts.
    last_sync_rv: String,
    /// Set after an Expired / too-large answer: the next list must be a consistent read (RV "").
    last_rv_unavailable: bool,
    /// One backoff for relists and refused watches alike, as client-go's reflector has.
    backoff: backoff::Backoff,
}

impl<K> std::fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field("resource", &self.resource)
            .field("last_sync_rv", &self.last_sync_rv)
            .finish()
    }
}

type Sink<K> = mpsc::UnboundedSender<ReflectorEvent<K>>;

/// How one list-and-watch attempt ended without an error.
enum Ended {
    /// The token was cancelled.
    Cancelled,
    /// The sink's receiver is gone: nobody listens any more.
    SinkClosed,
}

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    pub fn new(api: impl ListerWatcher<K>, resource: impl Into<String>, config: ReflectorConfig<K>) -> Self {
        Reflector {
            api: Box::new(api),
            resource: resource.into(),
            config,
            last_sync_rv: String::new(),
            last_rv_unavailable: false,
            backoff: backoff::Backoff::new(),
        }
    }

    /// The RV the last list or event carried ("" before the first list).
    pub fn last_sync_resource_version(&self) -> &str {
        &self.last_sync_rv
    }

    /// Runs until `cancel` fires or `sink` closes. Errors are logged and retried with backoff; a
    /// cancelled reflector stops quietly, with no error logged.
    pub async fn run(mut self, sink: Sink<K>, cancel: CancellationToken) {
        loop {
            let result = tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                r = self.list_and_watch(&sink, &cancel) => r,
            };
            let err = match result {
                Ok(Ended::Cancelled | Ended::SinkClosed) => return,
                Err(e) => e,
            };
            if err.is_expected() {
                tracing::info!(resource = %self.resource, "{err}");
            } else {
                tracing::warn!(resource = %self.resource, "{err}");
            }
            let delay = self.backoff.next_delay();
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    async fn list_and_watch(
        &mut self,
        sink: &Sink<K>,
        cancel: &CancellationToken,
    ) -> Result<Ended, ReflectorError> {
        let stream = if self.config.watch_list {
            match self.watch_list(sink).await {
                Ok(Some(stream)) => Some(stream),
                Ok(None) => None,
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        if stream.is_none() {
            let (objects, resource_version) = self.list().await?;
            self.last_sync_rv.clone_from(&resource_version);
            if sink
                .send(ReflectorEvent::Replace {
                    objects,
                    resource_version,
                })
                .is_err()
            {
                return Ok(Ended::SinkClosed);
            }
        }
        self.watch_loop(stream, sink, cancel).await
    }

    fn relist_resource_version(&self) -> String {
        if self.last_rv_unavailable {
            String::new()
        } else if self.last_sync_rv.is_empty() {
            "0".to_owned()
        } else {
            self.last_sync_rv.clone()
        }
    }

    fn watch_timeout() -> u32 {
        let min = u32::try_from(MIN_WATCH_TIMEOUT.as_secs()).unwrap_or(300);
        rand::rng().random_range(min..2 * min)
    }

    fn apply_transform(&self, mut obj: K) -> K {
        if let Some(t) = &self.config.transform {
            t(&mut obj);
        }
        obj
    }
}

#[cfg(test)]
mod tests;
