//! The shared informer factory (client-go `SharedInformerFactory`): one informer, hence one watch, per
//! (kind, selectors) however many controllers ask for it.

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    sync::Arc,
};

use kube::{Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::{
    kind::Namespaced,
    shared::{Scope, SharedInformer},
};
use crate::{
    json::JsonListWatch,
    listwatch::ListerWatcher,
    metrics::{MetricsProvider, NoopMetrics},
    protobuf::{ProtobufListWatch, ProtobufObject},
    reflector::ReflectorConfig,
    shard::ShardSet,
    sharded::{ServerSharding, ShardFiltered, keep},
    transform::{Transform, strip_managed_fields},
    watch_cache::WatchCaches,
};

/// Selectors that make an informer distinct from the plain one for its kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InformerOptions {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

/// Hands out shared informers. Informers requested after `start` must be started by calling `start`
/// again (it starts only those not yet running), as in client-go.
pub struct SharedInformerFactory {
    client: Client,
    /// Namespaces every namespaced informer is limited to; empty means all namespaces.
    namespaces: Vec<String>,
    /// Set when this factory serves some shards only: every namespaced informer keeps their objects.
    shards: Option<(ShardSet, Arc<ServerSharding>)>,
    /// Set when the shards' informers read views of replica-wide caches instead of the API server.
    caches: Option<Arc<WatchCaches>>,
    watch_list: bool,
    metrics: Arc<dyn MetricsProvider>,
    /// Kinds listed and watched as protobuf: a [`MakeListWatch`] for each, by type.
    protobuf: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    informers: Mutex<HashMap<(TypeId, InformerOptions), Entry>>,
}

/// Builds a protobuf lister-watcher for one scope (`None`: all namespaces).
type MakeListWatch<K> = Box<dyn Fn(Client, Option<&str>) -> Arc<dyn ListerWatcher<K>> + Send + Sync>;

struct Entry {
    informer: Box<dyn Any + Send + Sync>,
    start: Box<dyn Fn(CancellationToken) + Send + Sync>,
}

impl std::fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("namespaces", &self.namespaces)
            .field("informers", &self.informers.lock().len())
            .finish()
    }
}

impl SharedInformerFactory {
    pub fn new(client: Client) -> Self {
        SharedInformerFactory {
            client,
            namespaces: Vec::new(),
            shards: None,
            caches: None,
            watch_list: true,
            metrics: Arc::new(NoopMetrics),
            protobuf: HashMap::new(),
            informers: Mutex::new(HashMap::new()),
        }
    }

    /// The client its informers list and watch with: an informer made elsewhere (the garbage
    /// collector's, one per kind discovery finds) shares its rate limits, as KCM's do.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The reflector settings its informers get (watch-list, metrics), for informers made
    /// elsewhere after it is gone: each of `resource` with `transform` on every object.
    pub fn reflector_configs<K>(
        &self,
    ) -> impl Fn(&str, Transform<K>) -> ReflectorConfig<K> + Send + Sync + 'static {
        let (watch_list, metrics) = (self.watch_list, self.metrics.clone());
        move |resource, transform| ReflectorConfig {
            watch_list,
            label_selector: None,
            field_selector: None,
            transform: Some(transform),
            metrics: metrics.reflector_metrics(resource),
        }
    }

    /// Limits every namespaced informer to these namespaces (one watch per namespace).
    #[must_use]
    pub fn with_namespaces(mut self, namespaces: Vec<String>) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Keeps, in every namespaced informer, only the objects of `shards`. The client given to [`new`]
    /// is expected to send the matching `shardSelector`; the filter here makes the outcome the same
    /// when the API server ignores it. `server` collects what the answers say of the server.
    ///
    /// [`new`]: SharedInformerFactory::new
    #[must_use]
    pub fn with_shards(mut self, shards: ShardSet, server: Arc<ServerSharding>) -> Self {
        self.shards = Some((shards, server));
        self
    }

    /// Serves the shards' namespaced informers (see [`with_shards`]) from views of `caches`, one
    /// list-and-watch of each kind for the whole process, rather than one request per shard: for
    /// an API server that does not filter by shard, where each request would carry the whole kind.
    /// The client given to [`new`] then sends no `shardSelector`.
    ///
    /// [`with_shards`]: SharedInformerFactory::with_shards
    /// [`new`]: SharedInformerFactory::new
    #[must_use]
    pub fn with_watch_caches(mut self, caches: Arc<WatchCaches>) -> Self {
        self.caches = Some(caches);
        self
    }

    /// Turns streaming lists off (they are on by default, as in client-go since 1.35).
    #[must_use]
    pub fn with_watch_list(mut self, enabled: bool) -> Self {
        self.watch_list = enabled;
        self
    }

    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Lists and watches `K` in protobuf rather than JSON (KCM's `--kube-api-content-type` default):
    /// fewer bytes, and a decoder that skips what `K` does not hold. Other kinds stay on JSON.
    #[must_use]
    pub fn with_protobuf<K>(mut self) -> Self
    where
        K: ProtobufObject + Resource<DynamicType = ()> + Clone + DeserializeOwned + Send + Sync + 'static,
    {
        let make: MakeListWatch<K> = Box::new(|client, namespace| {
            Arc::new(ProtobufListWatch::<K>::new(client, K::url_path(&(), namespace)))
        });
        self.protobuf.insert(TypeId::of::<K>(), Box::new(make));
        self
    }

    /// The shared informer for a namespaced kind.
    pub fn namespaced<K: Namespaced>(&self, options: InformerOptions) -> SharedInformer<K> {
        self.get_or_create(options, true, |client, namespaces| {
            if namespaces.is_empty() {
                vec![json_scope(client, None)]
            } else {
                namespaces
                    .iter()
                    .map(|ns| json_scope(client.clone(), Some(ns)))
                    .collect()
            }
        })
    }

    /// The shared informer for a cluster-scoped kind (namespaces do not apply).
    pub fn cluster<K>(&self, options: InformerOptions) -> SharedInformer<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        self.get_or_create(options, false, |client, _| vec![json_scope(client, None)])
    }

    fn get_or_create<K>(
        &self,
        options: InformerOptions,
        namespaced: bool,
        scopes: impl FnOnce(Client, &[String]) -> Vec<Scope<K>>,
    ) -> SharedInformer<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        let mut informers = self.informers.lock();
        let key = (TypeId::of::<K>(), options.clone());
        if let Some(entry) = informers.get(&key) {
            return entry
                .informer
                .downcast_ref::<SharedInformer<K>>()
                .expect("keyed by type")
                .clone();
        }
        let resource = K::plural(&()).into_owned();
        let config = ReflectorConfig {
            label_selector: options.label_selector.clone(),
            field_selector: options.field_selector.clone(),
            ..self.reflector_configs()(&resource, strip_managed_fields())
        };
        let mut scopes = scopes(self.client.clone(), &self.namespaces);
        if let Some(make) = self
            .protobuf
            .get(&TypeId::of::<K>())
            .and_then(|m| m.downcast_ref::<MakeListWatch<K>>())
        {
            for scope in &mut scopes {
                scope.api = make(self.client.clone(), scope.namespace.as_deref());
            }
        }
        if let Some((shards, server)) = self.shards.as_ref().filter(|_| namespaced) {
            for scope in &mut scopes {
                scope.api = match &self.caches {
                    Some(caches) => {
                        let key = (options.clone(), scope.namespace.clone());
                        let cache = caches.get_or_start(key, scope.api.clone(), &resource, &config);
                        let shards = shards.clone();
                        Arc::new(cache.view(move |o: &K| keep(&shards, o)))
                    }
                    None => Arc::new(ShardFiltered::new(
                        scope.api.clone(),
                        shards.clone(),
                        server.clone(),
                        &resource,
                    )),
                };
            }
        }
        let informer = SharedInformer::new(resource, scopes, config);
        let started = informer.clone();
        informers.insert(
            key,
            Entry {
                informer: Box::new(informer.clone()),
                start: Box::new(move |cancel| started.run(cancel)),
            },
        );
        informer
    }

    /// Starts every informer handed out so far that is not running yet.
    pub fn start(&self, cancel: &CancellationToken) {
        for entry in self.informers.lock().values() {
            (entry.start)(cancel.clone());
        }
    }
}

/// A scope listed and watched in JSON (`None`: all namespaces); [`SharedInformerFactory::with_protobuf`]
/// replaces it for the kinds read as protobuf.
fn json_scope<K>(client: Client, namespace: Option<&str>) -> Scope<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Send + Sync + 'static,
{
    let path = K::url_path(&(), namespace);
    Scope::new(JsonListWatch::new(client, path), namespace.map(str::to_owned))
}
