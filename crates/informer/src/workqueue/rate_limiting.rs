//! The rate-limited queue (client-go `rate_limiting_queue.go`): what controllers use.

use std::{sync::Arc, time::Duration};

use super::{
    delaying::DelayingQueue,
    queue::{Queue, QueueItem},
    rate_limiter::{RateLimiter, default_controller_rate_limiter},
};
use crate::metrics::{MetricsProvider, NoopMetrics};

/// A work queue with delays and per-item retry backoff. Cloning shares the queue.
///
/// The canonical worker loop: `get`, sync the key, then `forget` on success or `add_rate_limited` on
/// failure, and `done` in every case. A failing key that is re-added by events before its backoff
/// elapses is processed again and counts as another failure, so its backoff grows faster than
/// doubling; upstream behaves the same (kubernetes/kubernetes#132805).
pub struct WorkQueue<T: QueueItem + Ord> {
    delaying: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T: QueueItem + Ord> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            delaying: self.delaying.clone(),
            limiter: self.limiter.clone(),
        }
    }
}

impl<T: QueueItem + Ord> std::fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("delaying", &self.delaying)
            .finish()
    }
}

impl<T: QueueItem + Ord> WorkQueue<T> {
    /// A queue with client-go's default controller rate limiter and no metrics.
    pub fn new() -> Self {
        Self::with_limiter(default_controller_rate_limiter(), "", &NoopMetrics)
    }

    /// A queue named `name` (the metrics' `name` label; upstream uses the controller's name, e.g.
    /// `replicaset`) with the default controller rate limiter.
    pub fn named(name: &str, metrics: &dyn MetricsProvider) -> Self {
        Self::with_limiter(default_controller_rate_limiter(), name, metrics)
    }

    pub fn with_limiter(limiter: impl RateLimiter<T>, name: &str, metrics: &dyn MetricsProvider) -> Self {
        let queue = if name.is_empty() {
            Queue::new()
        } else {
            Queue::with_metrics(metrics.queue_metrics(name))
        };
        WorkQueue {
            delaying: DelayingQueue::new(queue),
            limiter: Arc::new(limiter),
        }
    }

    pub fn add(&self, item: T) {
        self.delaying.queue().add(item);
    }

    pub fn add_after(&self, item: T, delay: Duration) {
        self.delaying.add_after(item, delay);
    }

    /// Adds `item` after the delay the rate limiter gives it.
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.delaying.add_after(item, delay);
    }

    /// Clears `item`'s retry history; it must still be `done`.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    pub async fn get(&self) -> Option<T> {
        self.delaying.queue().get().await
    }

    /// The next item if one is queued now (does not wait).
    pub fn try_get(&self) -> Option<T> {
        self.delaying.queue().try_get()
    }

    pub fn done(&self, item: &T) {
        self.delaying.queue().done(item);
    }

    pub fn len(&self) -> usize {
        self.delaying.queue().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn shut_down(&self) {
        self.delaying.shut_down();
    }

    /// Stops taking items and waits until the items handed out are `done`.
    pub async fn shut_down_with_drain(&self) {
        self.delaying.shut_down();
        self.delaying.queue().shut_down_with_drain().await;
    }

    pub fn is_shutting_down(&self) -> bool {
        self.delaying.queue().is_shutting_down()
    }
}

impl<T: QueueItem + Ord> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failed_items_come_back_with_backoff_and_forget_resets() {
        let q: WorkQueue<String> = WorkQueue::new();
        let key = "ns/a".to_owned();
        q.add(key.clone());
        for expected_ms in [5u64, 10, 20] {
            let k = q.get().await.unwrap();
            q.add_rate_limited(k.clone());
            q.done(&k);
            tokio::time::sleep(Duration::from_millis(expected_ms - 1)).await;
            assert!(q.is_empty(), "not back before {expected_ms} ms");
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert_eq!(q.len(), 1, "back after {expected_ms} ms");
        }
        assert_eq!(q.num_requeues(&key), 3);
        let k = q.get().await.unwrap();
        q.forget(&k);
        q.done(&k);
        assert_eq!(q.num_requeues(&key), 0);
    }
}
