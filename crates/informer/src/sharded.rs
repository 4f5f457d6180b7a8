//! A lister-watcher that keeps only the objects of its shards, whatever the API server sends.
//!
//! The `shardSelector` itself is added to list and watch requests by the client (kube's `ListParams`
//! has no field for it); an API server without the `ShardedListAndWatch` gate ignores it and answers
//! with everything. So the filter runs here always: when the server did filter it drops nothing, and
//! during an API server rollout it does not matter which server answered. Whether the server filters
//! is only reported ([`ServerSharding`]), and used to choose how a shard taken later reads: a list
//! answer carrying `metadata.shardInfo` says yes, a list answer without it or an object outside the
//! shards arriving says no, and the last such answer stands, so that a gate turned on (or off)
//! during an API server rollout is seen. A streaming list whose initial events hold nothing outside
//! the shards is weaker evidence (with the gate off, a kind with no objects elsewhere looks the
//! same) and says yes only while nothing is known.
//!
//! Taken from kube-state-metrics' client-side filter: bookmarks carry no namespace and always pass
//! (else the initial sync of a streaming list never ends), and a filtered list keeps its
//! `continue` token and resourceVersion.

use std::sync::{
    Arc,
    atomic::{AtomicU8, AtomicU64, Ordering},
};

use futures::{StreamExt as _, future::BoxFuture};
use kube::{
    Resource, ResourceExt as _,
    api::{ListParams, ObjectList, WatchEvent, WatchParams},
};

use crate::{
    listwatch::{ListerWatcher, WatchStream},
    reflector::INITIAL_EVENTS_END_ANNOTATION,
    shard::ShardSet,
};

/// What this process has seen of the API server's sharding, shared by every sharded lister-watcher:
/// the last definite answer, and how many unfiltered answers and objects came.
#[derive(Debug, Default)]
pub struct ServerSharding {
    last: AtomicU8,
    unfiltered: AtomicU64,
}

const UNKNOWN: u8 = 0;
const FILTERS: u8 = 1;
const DOES_NOT_FILTER: u8 = 2;

impl ServerSharding {
    /// What the last definite answer said: `Some(true)` for a list answer with `shardInfo`,
    /// `Some(false)` for one without, or an object outside the shards; each change is logged.
    pub fn filters(&self) -> Option<bool> {
        match self.last.load(Ordering::Relaxed) {
            FILTERS => Some(true),
            DOES_NOT_FILTER => Some(false),
            _ => None,
        }
    }

    /// List answers without `shardInfo` and objects outside the shards seen so far.
    pub fn unfiltered_seen(&self) -> u64 {
        self.unfiltered.load(Ordering::Relaxed)
    }

    fn saw_filtered(&self, resource: &str) {
        if self.last.swap(FILTERS, Ordering::Relaxed) == DOES_NOT_FILTER {
            tracing::info!(%resource, "the API server shards list and watch again");
        }
    }

    /// Weak evidence: counts only while nothing is known.
    fn saw_nothing_outside(&self) {
        let _ = self
            .last
            .compare_exchange(UNKNOWN, FILTERS, Ordering::Relaxed, Ordering::Relaxed);
    }

    fn saw_unfiltered(&self, resource: &str) {
        self.unfiltered.fetch_add(1, Ordering::Relaxed);
        if self.last.swap(DOES_NOT_FILTER, Ordering::Relaxed) != DOES_NOT_FILTER {
            tracing::warn!(
                %resource,
                "the API server does not shard list and watch (gate ShardedListAndWatch off, or older); \
                 filtering on this side"
            );
        }
    }
}

/// Wraps a lister-watcher of a namespaced kind so it yields only objects of `shards`.
#[derive(Debug)]
pub struct ShardFiltered<L> {
    inner: L,
    shards: ShardSet,
    server: Arc<ServerSharding>,
    resource: String,
}

impl<L> ShardFiltered<L> {
    pub fn new(inner: L, shards: ShardSet, server: Arc<ServerSharding>, resource: impl Into<String>) -> Self {
        Self {
            inner,
            shards,
            server,
            resource: resource.into(),
        }
    }
}

pub(crate) fn keep<K: Resource>(shards: &ShardSet, obj: &K) -> bool {
    // A namespaced kind always has a namespace; keep what has none rather than hide it.
    obj.namespace().is_none_or(|ns| shards.contains_namespace(&ns))
}

impl<K, L> ListerWatcher<K> for ShardFiltered<L>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K>,
{
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Box::pin(async move {
            let mut list = self.inner.list(params).await?;
            if list.metadata.shard_info.is_some() {
                self.server.saw_filtered(&self.resource);
            } else {
                self.server.saw_unfiltered(&self.resource);
            }
            list.items.retain(|o| keep(&self.shards, o));
            Ok(list)
        })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>> {
        Box::pin(async move {
            let events = self.inner.watch(params, version).await?;
            let shards = self.shards.clone();
            let server = self.server.clone();
            let resource = self.resource.clone();
            let mut dropped = false;
            Ok(events
                .filter(move |e| {
                    let pass = match e {
                        Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => {
                            let kept = keep(&shards, o);
                            if !kept {
                                dropped = true;
                                server.saw_unfiltered(&resource);
                            }
                            kept
                        }
                        // A streaming list's initial events carried nothing outside the shards:
                        // the server filtered (a LIST would have said so with shardInfo).
                        Ok(WatchEvent::Bookmark(b)) => {
                            if !dropped && b.metadata.annotations.contains_key(INITIAL_EVENTS_END_ANNOTATION)
                            {
                                server.saw_nothing_outside();
                            }
                            true
                        }
                        Ok(WatchEvent::Error(_)) | Err(_) => true,
                    };
                    std::future::ready(pass)
                })
                .boxed())
        })
    }
}

#[cfg(test)]
mod tests {
    use futures::stream;
    use k8s_openapi::{
        api::core::v1::Pod,
        apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, ShardInfo},
    };
    use kube::core::watch::{Bookmark, BookmarkMeta};

    use super::*;
    use crate::shard::Shard;

    struct Canned {
        list: ObjectList<Pod>,
        events: Vec<WatchEvent<Pod>>,
    }

    impl ListerWatcher<Pod> for Canned {
        fn list<'a>(&'a self, _: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<Pod>>> {
            Box::pin(async move { Ok(self.list.clone()) })
        }

        fn watch<'a>(
            &'a self,
            _: &'a WatchParams,
            _: &'a str,
        ) -> BoxFuture<'a, kube::Result<WatchStream<Pod>>> {
            let events: Vec<_> = self.events.iter().cloned().map(Ok).collect();
            Box::pin(async move { Ok(stream::iter(events).boxed()) })
        }
    }

    fn pod(ns: &str, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    /// Two namespaces, one in each half of the hash space.
    fn namespaces() -> (String, String) {
        let first = Shard::new(0, 2).unwrap();
        let mine = (0..)
            .map(|i| format!("ns-{i}"))
            .find(|n| first.contains_namespace(n))
            .unwrap();
        let other = (0..)
            .map(|i| format!("ns-{i}"))
            .find(|n| !first.contains_namespace(n))
            .unwrap();
        (mine, other)
    }

    fn filtered(
        list: ObjectList<Pod>,
        events: Vec<WatchEvent<Pod>>,
    ) -> (ShardFiltered<Canned>, Arc<ServerSharding>) {
        let server = Arc::new(ServerSharding::default());
        let shards = ShardSet::one(Shard::new(0, 2).unwrap());
        (
            ShardFiltered::new(Canned { list, events }, shards, server.clone(), "pods"),
            server,
        )
    }

    fn list_of(items: Vec<Pod>, shard_info: bool) -> ObjectList<Pod> {
        ObjectList {
            types: Default::default(),
            metadata: ListMeta {
                continue_: Some("next-page".into()),
                resource_version: Some("42".into()),
                shard_info: shard_info.then(|| ShardInfo { selector: "x".into() }),
                ..ListMeta::default()
            },
            items,
        }
    }

    #[tokio::test]
    async fn an_unfiltered_list_is_filtered_here_and_keeps_its_continue_token() {
        let (mine, other) = namespaces();
        let (lw, server) = filtered(list_of(vec![pod(&mine, "a"), pod(&other, "b")], false), vec![]);
        let list = lw.list(&ListParams::default()).await.unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(list.items[0].metadata.namespace.as_deref(), Some(mine.as_str()));
        assert_eq!(list.metadata.continue_.as_deref(), Some("next-page"));
        assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(server.filters(), Some(false));
    }

    #[tokio::test]
    async fn a_list_with_shard_info_says_the_server_filters() {
        let (mine, _) = namespaces();
        let (lw, server) = filtered(list_of(vec![pod(&mine, "a")], true), vec![]);
        assert_eq!(lw.list(&ListParams::default()).await.unwrap().items.len(), 1);
        assert_eq!(server.filters(), Some(true));
    }

    #[tokio::test]
    async fn a_streaming_list_with_nothing_outside_the_shards_says_the_server_filters() {
        let (mine, _) = namespaces();
        let end = WatchEvent::Bookmark(Bookmark {
            types: Default::default(),
            metadata: BookmarkMeta {
                resource_version: "7".into(),
                annotations: [(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned())].into(),
            },
        });
        let (lw, server) = filtered(
            list_of(vec![], false),
            vec![WatchEvent::Added(pod(&mine, "a")), end],
        );
        let got: Vec<_> = lw
            .watch(&WatchParams::default(), "")
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(got.len(), 2);
        assert_eq!(server.filters(), Some(true));
    }

    #[tokio::test]
    async fn watch_events_outside_the_shards_are_dropped_and_bookmarks_pass() {
        let (mine, other) = namespaces();
        let bookmark = WatchEvent::Bookmark(Bookmark {
            types: Default::default(),
            metadata: BookmarkMeta {
                resource_version: "7".into(),
                annotations: Default::default(),
            },
        });
        let events = vec![
            WatchEvent::Added(pod(&other, "b")),
            WatchEvent::Added(pod(&mine, "a")),
            bookmark,
            WatchEvent::Deleted(pod(&other, "b")),
        ];
        let (lw, server) = filtered(list_of(vec![], true), events);
        let got: Vec<_> = lw
            .watch(&WatchParams::default(), "1")
            .await
            .unwrap()
            .map(Result::unwrap)
            .collect()
            .await;
        assert!(
            matches!(&got[..], [WatchEvent::Added(p), WatchEvent::Bookmark(_)] if p.metadata.name.as_deref() == Some("a"))
        );
        assert_eq!(server.filters(), Some(false));
    }

    #[tokio::test]
    async fn the_last_list_answer_stands_and_a_streaming_list_only_fills_a_blank() {
        let (mine, _) = namespaces();
        let (unfiltered, server) = filtered(list_of(vec![pod(&mine, "a")], false), vec![]);
        unfiltered.list(&ListParams::default()).await.unwrap();
        assert_eq!((server.filters(), server.unfiltered_seen()), (Some(false), 1));
        server.saw_nothing_outside();
        assert_eq!(
            server.filters(),
            Some(false),
            "weak evidence does not overturn an answer"
        );
        // The gate turned on: the next list answer carries shardInfo.
        let shards = ShardSet::one(Shard::new(0, 2).unwrap());
        let canned = Canned {
            list: list_of(vec![pod(&mine, "a")], true),
            events: vec![],
        };
        let lw = ShardFiltered::new(canned, shards, server.clone(), "pods");
        lw.list(&ListParams::default()).await.unwrap();
        assert_eq!((server.filters(), server.unfiltered_seen()), (Some(true), 1));
    }
}
