//! What the views want, applied where the cache's own list and watch come in: objects no view keeps
//! are dropped as they are decoded, so that the cache (and the snapshot its reflector builds) holds
//! what the replica's shards hold, not the whole kind.
//!
//! A view made while the stream runs gets the changes of its objects from then on. "Then" is how far
//! the stream had been read when it was added ([`Interest::add`] returns it), which is why the
//! position is moved before each change is judged: a change judged before the view was added
//! was read before it too, and a list the view makes must be at least that new.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use futures::{StreamExt as _, future::BoxFuture};
use kube::{
    Resource,
    api::{ListParams, ObjectList, WatchEvent, WatchParams},
};
use parking_lot::RwLock;

use super::state::Keep;
use crate::listwatch::{ListerWatcher, WatchStream};

/// The views' filters and the stream's position.
pub struct Interest<K> {
    views: RwLock<Vec<(u64, Keep<K>)>>,
    next: AtomicU64,
    /// The highest resourceVersion read from the API server, kept or not.
    seen: AtomicU64,
}

impl<K> Default for Interest<K> {
    fn default() -> Self {
        Self {
            views: RwLock::new(Vec::new()),
            next: AtomicU64::new(0),
            seen: AtomicU64::new(0),
        }
    }
}

impl<K> Interest<K> {
    /// Adds a view's filter: its id, and how far the stream had been read.
    pub fn add(&self, keep: Keep<K>) -> (u64, u64) {
        let mut views = self.views.write();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        views.push((id, keep));
        (id, self.seen.load(Ordering::SeqCst))
    }

    pub fn remove(&self, id: u64) {
        self.views.write().retain(|(v, _)| *v != id);
    }

    fn wants(&self, obj: &K) -> bool {
        self.views.read().iter().any(|(_, keep)| keep(obj))
    }

    fn saw(&self, rv: Option<&str>) {
        if let Some(rv) = rv.and_then(|rv| rv.parse().ok()) {
            self.seen.fetch_max(rv, Ordering::SeqCst);
        }
    }
}

/// The cache's lister-watcher: the API server's answers, with what no view wants dropped.
pub struct Wanted<K> {
    inner: Arc<dyn ListerWatcher<K>>,
    interest: Arc<Interest<K>>,
}

impl<K> Wanted<K> {
    pub fn new(inner: Arc<dyn ListerWatcher<K>>, interest: Arc<Interest<K>>) -> Self {
        Self { inner, interest }
    }
}

impl<K> ListerWatcher<K> for Wanted<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Box::pin(async move {
            let mut list = self.inner.list(params).await?;
            list.items.retain(|o| self.interest.wants(o));
            self.interest.saw(list.metadata.resource_version.as_deref());
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
            let interest = self.interest.clone();
            Ok(events
                .filter(move |e| {
                    let pass = match e {
                        Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => {
                            interest.saw(o.meta().resource_version.as_deref());
                            interest.wants(o)
                        }
                        Ok(WatchEvent::Bookmark(b)) => {
                            interest.saw(Some(&b.metadata.resource_version));
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
    use k8s_openapi::api::core::v1::Pod;
    use kube::{Api, ResourceExt as _};

    use super::*;
    use crate::testing::fake_api::{FakeApi, event, name_of, pod};

    fn in_ns(ns: &'static str) -> Keep<Pod> {
        Arc::new(move |o: &Pod| o.namespace().as_deref() == Some(ns))
    }

    #[tokio::test]
    async fn only_what_a_view_wants_comes_through_and_the_position_moves_anyway() {
        let api = FakeApi::default();
        api.list_pods("10", &[pod("a", "x", "5"), pod("b", "y", "6")]);
        let w = api.watch();
        let interest = Arc::new(Interest::default());
        let (_, since) = interest.add(in_ns("a"));
        assert_eq!(since, 0);
        let wanted = Wanted::new(Arc::new(Api::<Pod>::all(api.client())), interest.clone());
        let list = wanted.list(&ListParams::default()).await.unwrap();
        let names: Vec<_> = list.items.iter().map(name_of).collect();
        assert_eq!(names, ["x"]);
        let mut events = wanted.watch(&WatchParams::default(), "10").await.unwrap();
        w.send(event("ADDED", pod("b", "z", "11"))).unwrap();
        w.send(event("ADDED", pod("a", "v", "12"))).unwrap();
        let Some(Ok(WatchEvent::Added(first))) = events.next().await else {
            panic!("an event");
        };
        assert_eq!(name_of(&first), "v", "b's pod dropped");
        let (_, since) = interest.add(in_ns("b"));
        assert_eq!(since, 12, "the dropped change moved the position too");
    }
}
