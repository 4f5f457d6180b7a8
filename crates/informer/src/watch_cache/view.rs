//! A view: the part of a watch cache one informer serves, listed and watched as if from the API
//! server, with its resourceVersions, bookmarks, streaming lists and 410s.

use std::{collections::BTreeMap, sync::Arc};

use futures::{StreamExt as _, future::BoxFuture, stream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::{
    Resource,
    api::{ListParams, ObjectList, TypeMeta, WatchEvent, WatchParams},
    core::{
        Status,
        watch::{Bookmark, BookmarkMeta},
    },
};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::{
    WatchCache,
    server_list::{Initial, initial_events},
    state::{Change, Keep, Out, Refused},
};
use crate::{
    listwatch::{ListerWatcher, WatchStream},
    reflector::INITIAL_EVENTS_END_ANNOTATION,
};

/// Lists and watches the objects of a [`WatchCache`] its filter keeps.
pub struct View<K> {
    cache: Arc<WatchCache<K>>,
    id: u64,
    keep: Keep<K>,
}

impl<K> std::fmt::Debug for View<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View").finish_non_exhaustive()
    }
}

impl<K> View<K> {
    pub(super) fn new(cache: Arc<WatchCache<K>>, id: u64, keep: Keep<K>) -> Self {
        Self { cache, id, keep }
    }
}

impl<K> View<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    /// A streaming list from the API server, filtered here, then the cache's stream from where the
    /// server's initial events ended.
    async fn stream_from_server(&self, params: &WatchParams, version: &str) -> kube::Result<WatchStream<K>> {
        let upstream = &*self.cache.upstream;
        let (events, end) = match initial_events(upstream, params, version, &self.keep).await? {
            Initial::Listed(events, end) => (events, end),
            Initial::Ended(came) => return Ok(stream::iter(came).boxed()),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let first = self
            .cache
            .state
            .lock()
            .subscribe(self.id, &end, false, self.keep.clone(), tx)
            .map_err(refusal)?;
        let initial = events.into_iter().chain([bookmark(end, true)]).map(Ok);
        Ok(stream::iter(initial).chain(live(first, rx)).boxed())
    }
}

/// What a subscription sends, as watch events: the replay, then live changes; it ends after an
/// Expired, as the API server closes a watch after its error.
fn live<K>(first: Vec<Out<K>>, rx: mpsc::UnboundedReceiver<Out<K>>) -> WatchStream<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let outs = stream::iter(first).chain(stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|out| (out, rx))
    }));
    outs.scan(false, |ended, out| {
        if *ended {
            return std::future::ready(None);
        }
        *ended = matches!(out, Out::Expired);
        std::future::ready(Some(Ok(event(out))))
    })
    .boxed()
}

/// The cache stops keeping what only this view wanted.
impl<K> Drop for View<K> {
    fn drop(&mut self) {
        self.cache.forget(self.id);
    }
}

fn expired() -> Status {
    Status::failure("the client-side watch cache relisted; list again", "Expired").with_code(410)
}

/// The object itself when the cache let go of it (a list's), else a copy (a change, which the replay
/// window still holds).
fn owned<K: Clone>(o: Arc<K>) -> K {
    Arc::try_unwrap(o).unwrap_or_else(|shared| (*shared).clone())
}

/// Makes the reflector fall back to a LIST, as an API server that refuses streaming lists does.
fn no_streaming_list() -> Status {
    Status::failure(
        "the client-side watch cache holds no objects after its warm-up; list instead",
        "BadRequest",
    )
    .with_code(400)
}

fn stopped() -> Status {
    Status::failure("the client-side watch cache stopped", "ServiceUnavailable").with_code(503)
}

fn refusal(refused: Refused) -> kube::Error {
    kube::Error::Api(Box::new(match refused {
        Refused::NotCached => no_streaming_list(),
        Refused::Closed => stopped(),
        Refused::Expired | Refused::NotSynced => expired(),
    }))
}

fn types<K: Resource<DynamicType = ()>>() -> TypeMeta {
    TypeMeta {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
    }
}

fn bookmark<K: Resource<DynamicType = ()>>(resource_version: String, end: bool) -> WatchEvent<K> {
    let annotations = if end {
        BTreeMap::from([(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned())])
    } else {
        BTreeMap::new()
    };
    WatchEvent::Bookmark(Bookmark {
        types: types::<K>(),
        metadata: BookmarkMeta {
            resource_version,
            annotations,
        },
    })
}

/// What a subscriber receives, as the watch event the API server would send.
fn event<K: Resource<DynamicType = ()> + Clone>(out: Out<K>) -> WatchEvent<K> {
    match out {
        Out::Change(Change::Added(o)) => WatchEvent::Added(owned(o)),
        Out::Change(Change::Modified(o)) => WatchEvent::Modified((*o).clone()),
        Out::Change(Change::Deleted(o)) => WatchEvent::Deleted((*o).clone()),
        Out::Bookmark(rv) => bookmark(rv, false),
        Out::InitialEventsEnd(rv) => bookmark(rv, true),
        Out::Expired => WatchEvent::Error(Box::new(expired())),
    }
}

impl<K> ListerWatcher<K> for View<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    /// The cache's current contents, whatever resourceVersion was asked for: never older than it,
    /// as the API server's "not older than" reads; waits for the cache's first list. Once the cache
    /// dropped its objects, the API server's answer, filtered here.
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Box::pin(async move {
            self.cache.wait_synced().await;
            let listed = self.cache.state.lock().list(self.id);
            let (items, rv) = match listed {
                Ok(listed) => listed,
                Err(Refused::NotCached) => {
                    let mut list = self.cache.upstream.list(params).await?;
                    list.items.retain(|o| (self.keep)(o));
                    return Ok(list);
                }
                Err(refused) => return Err(refusal(refused)),
            };
            Ok(ObjectList {
                types: types::<K>(),
                metadata: ListMeta {
                    resource_version: Some(rv),
                    ..ListMeta::default()
                },
                items: items.into_iter().map(owned).collect(),
            })
        })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>> {
        Box::pin(async move {
            self.cache.wait_synced().await;
            let initial = params.send_initial_events;
            let (tx, rx) = mpsc::unbounded_channel();
            let first = self
                .cache
                .state
                .lock()
                .subscribe(self.id, version, initial, self.keep.clone(), tx);
            match first {
                Ok(first) => Ok(live(first, rx)),
                Err(Refused::NotCached) if initial => self.stream_from_server(params, version).await,
                Err(refused) => Err(refusal(refused)),
            }
        })
    }
}
