//! The watch caches of one process, one per (kind, selectors, scope), started on first use and
//! shared by every informer factory given the registry.

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    sync::Arc,
};

use kube::Resource;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::{REPLAY_WINDOW, WatchCache};
use crate::{
    informer::InformerOptions, listwatch::ListerWatcher, metrics::MetricsProvider, reflector::ReflectorConfig,
};

/// What one cache is of: a kind, the informer's selectors, and its namespace (`None`: all).
type Key = (TypeId, InformerOptions, Option<String>);

/// Starts each cache once and keeps it until [`WatchCaches::stop`].
pub struct WatchCaches {
    cancel: CancellationToken,
    metrics: Arc<dyn MetricsProvider>,
    caches: Mutex<HashMap<Key, Box<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for WatchCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCaches")
            .field("caches", &self.caches.lock().len())
            .finish_non_exhaustive()
    }
}

impl WatchCaches {
    /// The caches' own reflectors report to `metrics` (the process's, not a shard's).
    pub fn new(metrics: Arc<dyn MetricsProvider>) -> Self {
        Self {
            cancel: CancellationToken::new(),
            metrics,
            caches: Mutex::new(HashMap::new()),
        }
    }

    /// Stops every cache; their views' watches end.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// The cache of `K` for these selectors in this scope, started through `api` if it is not
    /// running yet (`config` is the informer's; only the metrics are replaced).
    pub(crate) fn get_or_start<K>(
        &self,
        key: (InformerOptions, Option<String>),
        api: Arc<dyn ListerWatcher<K>>,
        resource: &str,
        config: &ReflectorConfig<K>,
    ) -> Arc<WatchCache<K>>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        let mut caches = self.caches.lock();
        let key = (TypeId::of::<K>(), key.0, key.1);
        if let Some(cache) = caches.get(&key) {
            return cache
                .downcast_ref::<Arc<WatchCache<K>>>()
                .expect("keyed by type")
                .clone();
        }
        let config = ReflectorConfig {
            metrics: self.metrics.reflector_metrics(resource),
            ..config.clone()
        };
        let scope = key
            .2
            .as_deref()
            .map_or_else(String::new, |ns| format!(" in {ns}"));
        let cache = WatchCache::start(
            api,
            format!("{resource}{scope} (replica-wide cache)"),
            config,
            REPLAY_WINDOW,
            &self.cancel,
        );
        caches.insert(key, Box::new(cache.clone()));
        cache
    }
}
