//! The metric series a held shard's informers, queues and syncs created, so that they go with the
//! shard. prometheus-client's `Family` cannot list its label sets, so each shard-labelled handle
//! records what it creates. Without this a replica that gave a shard up would go on exporting its
//! last queue depth and unfinished-work seconds: a sum across replicas counts the shard twice, and a
//! "stuck queue" alert fires on a replica that no longer holds it.

use std::{
    collections::HashSet,
    hash::Hash,
    sync::atomic::{AtomicBool, Ordering},
};

use parking_lot::Mutex;
use prometheus_client::metrics::family::{Family, MetricConstructor};

type Remover = Box<dyn Fn() + Send + Sync>;

/// The series of one shard's handle (`Metrics::for_shard`), removed together by [`Self::remove`].
#[derive(Default)]
pub struct ShardSeries {
    removers: Mutex<Vec<Remover>>,
    /// The keys of series recorded with [`Self::track_once`].
    keys: Mutex<HashSet<String>>,
    /// Set by [`Self::remove`]: the sinks of the shard make no series after it (a task still
    /// stopping would make them again).
    removed: AtomicBool,
}

impl std::fmt::Debug for ShardSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardSeries")
            .field("series", &self.removers.lock().len())
            .finish()
    }
}

impl ShardSeries {
    /// Records `label` of `family`, created once by the caller (a queue's, a reflector's or a sync
    /// sink's own label sets, made when the handle is).
    pub fn track<S, M, C>(&self, family: &Family<S, M, C>, label: &S)
    where
        S: Clone + Hash + Eq + Send + Sync + 'static,
        C: MetricConstructor<M>,
        Family<S, M, C>: Clone + Send + Sync + 'static,
    {
        let (family, label) = (family.clone(), label.clone());
        self.removers.lock().push(Box::new(move || {
            family.remove(&label);
        }));
    }

    /// [`Self::track`] for label sets made as they come (the stale-skip counters' group and
    /// resource): recorded the first time `key` is seen.
    pub fn track_once<S, M, C>(&self, key: String, family: &Family<S, M, C>, label: &S)
    where
        S: Clone + Hash + Eq + Send + Sync + 'static,
        C: MetricConstructor<M>,
        Family<S, M, C>: Clone + Send + Sync + 'static,
    {
        if self.keys.lock().insert(key) {
            self.track(family, label);
        }
    }

    /// Removes every series recorded, and keeps the sinks from making them again.
    pub fn remove(&self) {
        self.removed.store(true, Ordering::Release);
        let removers = std::mem::take(&mut *self.removers.lock());
        for remove in removers {
            remove();
        }
        self.keys.lock().clear();
    }

    pub fn removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }
}
