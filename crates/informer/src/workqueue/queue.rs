//! The base work queue (client-go `util/workqueue/queue.go`): a FIFO of distinct items in which an item
//! is never held by two workers at once.

use std::{collections::VecDeque, hash::Hash, sync::Arc, time::Duration};

use ahash::{AHashMap, AHashSet};
use parking_lot::Mutex;
use tokio::{sync::Notify, time::Instant};

use crate::metrics::{NoopMetrics, QueueMetrics};

/// How often a named queue reports its unfinished work (client-go `defaultUnfinishedWorkUpdatePeriod`).
pub const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// What a queue item must be: cheap to clone (keys are usually `String`s or `Arc`s).
pub trait QueueItem: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueItem for T {}

/// A work queue. Cloning shares the queue.
///
/// Semantics, as client-go's:
/// * `add` of an item that is already waiting does nothing (dedup);
/// * an item handed out by `get` is not handed out again until `done`; an `add` in between marks it
///   dirty and `done` puts it back, so the change is processed once more;
/// * after `shut_down`, `add` is ignored and `get` drains what is queued, then returns `None`.
pub struct Queue<T: QueueItem> {
    shared: Arc<Shared<T>>,
}

struct Shared<T: QueueItem> {
    state: Mutex<State<T>>,
    /// Wakes `get` callers when an item is queued or on shutdown.
    item_ready: Notify,
    /// Wakes `shut_down_with_drain` when `processing` empties.
    drained: Notify,
    metrics: Arc<dyn QueueMetrics>,
}

struct State<T> {
    /// The order in which items are handed out. Invariant: every item here is in `dirty` and not in
    /// `processing`, and appears once.
    queue: VecDeque<T>,
    /// Items that need processing: those in `queue`, plus those re-added while in `processing`.
    dirty: AHashSet<T>,
    /// Items handed to a worker by `get` and not yet `done`, with when that happened (for metrics).
    processing: AHashMap<T, Instant>,
    /// When each item in `dirty` was first added (for the queue-latency metric).
    added_at: AHashMap<T, Instant>,
    shutting_down: bool,
}

impl<T: QueueItem> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Queue {
            shared: self.shared.clone(),
        }
    }
}

impl<T: QueueItem> std::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.shared.state.lock();
        f.debug_struct("Queue")
            .field("len", &s.queue.len())
            .field("processing", &s.processing.len())
            .field("shutting_down", &s.shutting_down)
            .finish()
    }
}

impl<T: QueueItem> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> Queue<T> {
    /// An unnamed queue: no metrics.
    pub fn new() -> Self {
        Self::with_metrics(Arc::new(NoopMetrics))
    }

    /// A queue reporting to `metrics`. When called inside a tokio runtime it also starts the task that
    /// reports unfinished work every [`UNFINISHED_WORK_UPDATE_PERIOD`]; the task ends with the queue.
    pub fn with_metrics(metrics: Arc<dyn QueueMetrics>) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: AHashSet::new(),
                processing: AHashMap::new(),
                added_at: AHashMap::new(),
                shutting_down: false,
            }),
            item_ready: Notify::new(),
            drained: Notify::new(),
            metrics,
        });
        if tokio::runtime::Handle::try_current().is_ok() {
            let weak = Arc::downgrade(&shared);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
                loop {
                    tick.tick().await;
                    let Some(shared) = weak.upgrade() else { return };
                    let (total, longest) = shared.unfinished_work();
                    shared.metrics.unfinished_work(total, longest);
                    if shared.state.lock().shutting_down {
                        return;
                    }
                }
            });
        }
        Queue { shared }
    }

    /// Marks `item` as needing processing.
    pub fn add(&self, item: T) {
        let mut s = self.shared.state.lock();
        if s.shutting_down || s.dirty.contains(&item) {
            return;
        }
        s.dirty.insert(item.clone());
        s.added_at.insert(item.clone(), Instant::now());
        // Counted now, re-queued by `done` or not: client-go's depth is every item waiting to be
        // processed, the ones in progress and added again included.
        self.shared.metrics.add(s.dirty.len());
        if s.processing.contains_key(&item) {
            // `done` will queue it again.
            return;
        }
        s.queue.push_back(item);
        drop(s);
        self.shared.item_ready.notify_one();
    }

    /// Waits for the next item. `None` once the queue is shut down and empty. The caller must call
    /// [`Queue::done`] when it has finished with the item.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.shared.item_ready.notified();
            tokio::pin!(notified);
            // Registered before looking at the state, so a wake-up between the check and the await is
            // not lost.
            notified.as_mut().enable();
            if let Some(item) = self.try_get() {
                return Some(item);
            }
            if self.shared.state.lock().shutting_down {
                return None;
            }
            notified.await;
        }
    }

    /// The next item if one is queued now.
    pub fn try_get(&self) -> Option<T> {
        let mut s = self.shared.state.lock();
        let item = s.queue.pop_front()?;
        let now = Instant::now();
        s.dirty.remove(&item);
        let queued_for = s.added_at.remove(&item).map_or(Duration::ZERO, |t| now - t);
        s.processing.insert(item.clone(), now);
        self.shared.metrics.get(s.dirty.len(), queued_for);
        let more = !s.queue.is_empty();
        drop(s);
        if more {
            // Pass the baton: another waiter may take the next item.
            self.shared.item_ready.notify_one();
        }
        Some(item)
    }

    /// Marks `item` as finished; if it was added again meanwhile, it is queued again.
    pub fn done(&self, item: &T) {
        let mut s = self.shared.state.lock();
        if let Some(started) = s.processing.remove(item) {
            self.shared.metrics.done(Instant::now() - started);
        }
        if s.dirty.contains(item) {
            s.queue.push_back(item.clone());
            drop(s);
            self.shared.item_ready.notify_one();
        } else if s.processing.is_empty() {
            drop(s);
            self.shared.drained.notify_waiters();
        }
    }

    /// Items waiting to be handed out. Informational only: never decide to add or get on it.
    pub fn len(&self) -> usize {
        self.shared.state.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items; workers drain what is queued and then get `None`.
    pub fn shut_down(&self) {
        self.shared.state.lock().shutting_down = true;
        self.shared.item_ready.notify_waiters();
        self.shared.drained.notify_waiters();
    }

    /// Like [`Queue::shut_down`], then waits until every item handed out has been `done`.
    pub async fn shut_down_with_drain(&self) {
        self.shut_down();
        loop {
            let drained = self.shared.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.shared.state.lock().processing.is_empty() {
                return;
            }
            drained.await;
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    pub(crate) fn metrics(&self) -> &Arc<dyn QueueMetrics> {
        &self.shared.metrics
    }

    #[cfg(test)]
    pub(crate) fn assert_invariants(&self) {
        let s = self.shared.state.lock();
        let mut seen = AHashSet::new();
        for item in &s.queue {
            assert!(seen.insert(item), "an item is queued twice");
            assert!(s.dirty.contains(item), "a queued item is not dirty");
            assert!(
                !s.processing.contains_key(item),
                "a queued item is being processed"
            );
        }
    }
}

impl<T: QueueItem> Shared<T> {
    fn unfinished_work(&self) -> (f64, f64) {
        let now = Instant::now();
        let s = self.state.lock();
        s.processing
            .values()
            .fold((0.0, 0.0), |(total, longest), started| {
                let secs = (now - *started).as_secs_f64();
                (total + secs, f64::max(longest, secs))
            })
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
