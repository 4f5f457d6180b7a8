//! A watch cache in the client: one list-and-watch of a kind feeding any number of views, each a
//! [`ListerWatcher`] over part of it, as kube-apiserver's own watch cache serves many watchers from
//! one etcd watch.
//!
//! Why: a sharded replica runs informers per held shard, so that each shard's caches, queues and
//! write fence start and stop on their own. When the API server filters by shard
//! (`ShardedListAndWatch`), each of those watches carries its shard alone. When it does not, each
//! would receive the whole kind, once per held shard (twelve shards held: twelve copies of every
//! pod over the wire and through the decoder). Views over one replica-wide cache keep the per-shard
//! informers as they are and bring the traffic back to one copy per replica.
//!
//! A view's list is a snapshot of the cache at its resourceVersion; its watch replays the changes
//! after a given resourceVersion from a window of recent ones and then goes on live, all under one
//! lock, so nothing falls between list and watch. A view asking for a resourceVersion outside the
//! window gets 410 Expired and relists, as from the API server; when the cache itself relists, every
//! view's watch ends with 410 so that views drop what was deleted meanwhile. ResourceVersions are
//! compared as integers, which etcd's are.
//!
//! The cache keeps only what its views want (`interest`), and the objects themselves only for
//! [`OBJECTS_KEPT_FOR`] after its first list: long enough to fill the views of the shards a replica
//! takes at start-up. It starts listing [`GATHER`] after its first view is made, so that the views of
//! every shard taken in that round are made by then and their objects listed once. A view made after
//! the list began (a shard taken over later) lists from the API server, filters what it sends, and
//! watches the shared stream from that list's resourceVersion. A view's first list moves its objects
//! out of the cache instead of copying them. So a replica holds its shards' objects once, as it would
//! with a watch per shard, and receives the kind once instead of once per shard.

mod interest;
mod registry;
mod server_list;
mod state;
mod view;

#[cfg(test)]
mod tests;

use std::{sync::Arc, time::Duration};

use kube::Resource;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use interest::{Interest, Wanted};
pub use registry::WatchCaches;
pub use state::REPLAY_WINDOW;
use state::{Keep, State};
pub use view::View;

use crate::{
    listwatch::ListerWatcher,
    reflector::{Reflector, ReflectorConfig},
};

/// How long a cache waits after its first view is made before it lists: the views of the other
/// shards taken in the same manager round are made within milliseconds of it.
pub const GATHER: Duration = Duration::from_millis(500);

/// How long a cache keeps the objects after its first list. The shards a replica takes at start-up
/// are acquired within its first few manager rounds (two retry periods of waiting, then one round
/// each, 2 s apart by default).
pub const OBJECTS_KEPT_FOR: Duration = Duration::from_secs(60);

/// One kind in one scope, listed and watched once, served to views.
pub struct WatchCache<K> {
    state: Arc<Mutex<State<K>>>,
    synced: watch::Receiver<bool>,
    /// Where views list once the objects are dropped.
    upstream: Arc<dyn ListerWatcher<K>>,
    interest: Arc<Interest<K>>,
}

impl<K> std::fmt::Debug for WatchCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCache")
            .field("synced", &*self.synced.borrow())
            .finish_non_exhaustive()
    }
}

impl<K> WatchCache<K> {
    fn forget(&self, view: u64) {
        self.interest.remove(view);
        self.state.lock().unregister(view);
    }
}

impl<K> WatchCache<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    /// Starts listing and watching through `api` until `cancel` fires; then every view's watch ends.
    pub fn start(
        api: impl ListerWatcher<K>,
        resource: impl Into<String>,
        config: ReflectorConfig<K>,
        capacity: usize,
        cancel: &CancellationToken,
    ) -> Arc<Self> {
        let state = Arc::new(Mutex::new(State::new(capacity)));
        let (synced_tx, synced) = watch::channel(false);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let upstream: Arc<dyn ListerWatcher<K>> = Arc::new(api);
        let interest = Arc::new(Interest::default());
        let reflector = Reflector::new(Wanted::new(upstream.clone(), interest.clone()), resource, config);
        let applied = state.clone();
        let stop = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(GATHER) => {}
            }
            // Views made from now on were not there when the list began.
            applied.lock().start();
            tokio::spawn(reflector.run(tx, stop.clone()));
            let drop_at = tokio::time::sleep(Duration::MAX);
            tokio::pin!(drop_at);
            let mut kept = true;
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = &mut drop_at, if kept && *synced_tx.borrow() => {
                        applied.lock().drop_objects();
                        kept = false;
                    }
                    event = rx.recv() => match event {
                        Some(event) => {
                            let mut state = applied.lock();
                            state.apply(event);
                            if state.synced() && !*synced_tx.borrow() {
                                synced_tx.send_replace(true);
                                drop_at.as_mut().reset(tokio::time::Instant::now() + OBJECTS_KEPT_FOR);
                            }
                        }
                        None => break,
                    },
                }
            }
            applied.lock().close();
        });
        Arc::new(Self {
            state,
            synced,
            upstream,
            interest,
        })
    }

    /// A lister-watcher over the objects `keep` selects.
    pub fn view(self: &Arc<Self>, keep: impl Fn(&K) -> bool + Send + Sync + 'static) -> View<K> {
        let keep: Keep<K> = Arc::new(keep);
        // Under the state's lock, so that the cache cannot start listing in between.
        let mut state = self.state.lock();
        let (id, since) = self.interest.add(keep.clone());
        state.register(id, since, keep.clone());
        drop(state);
        View::new(self.clone(), id, keep)
    }

    /// Whether the first list has arrived.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Views watching now (for tests and debugging).
    pub fn watchers(&self) -> usize {
        self.state.lock().subscribers()
    }

    async fn wait_synced(&self) {
        let mut synced = self.synced.clone();
        // An error means the cache stopped; the caller then finds it unsynced and waits for ever,
        // as a reflector does against an API server that is gone, until it is itself cancelled.
        if synced.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
