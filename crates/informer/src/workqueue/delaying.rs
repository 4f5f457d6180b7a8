//! The delaying queue (client-go `delaying_queue.go`): `add_after` holds an item until its deadline and
//! then adds it to the base queue, where the usual dedup applies.

use std::{
    cmp::Reverse,
    collections::BinaryHeap,
    sync::{Arc, Weak},
    time::Duration,
};

use ahash::AHashMap;
use parking_lot::Mutex;
use tokio::{sync::Notify, time::Instant};

use super::queue::{Queue, QueueItem};

/// The waiting loop wakes at least this often even with nothing due, a guard against a missed timer
/// (client-go `maxWait`).
pub const MAX_WAIT: Duration = Duration::from_secs(10);

/// A [`Queue`] with `add_after`. Cloning shares the queue. Must be created inside a tokio runtime: a
/// task moves items whose deadline passed into the queue; it ends when the queue shuts down or is dropped.
pub struct DelayingQueue<T: QueueItem> {
    queue: Queue<T>,
    waiting: Arc<Waiting<T>>,
}

struct Waiting<T> {
    state: Mutex<WaitingState<T>>,
    /// Wakes the waiting loop when an entry is added or the queue shuts down.
    changed: Notify,
}

struct WaitingState<T> {
    /// Deadline heap. May hold stale entries: an entry counts only if `ready_at` has the same deadline
    /// for its item (a re-add with an earlier deadline leaves the old entry behind).
    heap: BinaryHeap<Reverse<(Instant, u64, T)>>,
    /// The one live deadline of each waiting item: the earliest it was given.
    ready_at: AHashMap<T, Instant>,
    /// Tie-breaker so the heap never compares items and keeps insertion order for equal deadlines.
    seq: u64,
}

impl<T: QueueItem + Ord> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        DelayingQueue {
            queue: self.queue.clone(),
            waiting: self.waiting.clone(),
        }
    }
}

impl<T: QueueItem + Ord> std::fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.waiting.state.lock().ready_at.len())
            .finish()
    }
}

impl<T: QueueItem + Ord> DelayingQueue<T> {
    pub fn new(queue: Queue<T>) -> Self {
        let waiting = Arc::new(Waiting {
            state: Mutex::new(WaitingState {
                heap: BinaryHeap::new(),
                ready_at: AHashMap::new(),
                seq: 0,
            }),
            changed: Notify::new(),
        });
        tokio::spawn(waiting_loop(queue.clone(), Arc::downgrade(&waiting)));
        DelayingQueue { queue, waiting }
    }

    /// Adds `item` once `delay` has passed. A zero delay adds at once. If the item is already waiting,
    /// the earlier of the two deadlines is kept. Ignored after shutdown.
    pub fn add_after(&self, item: T, delay: Duration) {
        if self.queue.is_shutting_down() {
            return;
        }
        self.queue.metrics().retry();
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        let deadline = Instant::now() + delay;
        let mut s = self.waiting.state.lock();
        if s.ready_at
            .get(&item)
            .is_some_and(|existing| *existing <= deadline)
        {
            return;
        }
        s.ready_at.insert(item.clone(), deadline);
        s.seq += 1;
        let seq = s.seq;
        s.heap.push(Reverse((deadline, seq, item)));
        drop(s);
        self.waiting.changed.notify_one();
    }

    /// Items waiting for their deadline (not yet in the queue).
    pub fn waiting_len(&self) -> usize {
        self.waiting.state.lock().ready_at.len()
    }

    pub fn queue(&self) -> &Queue<T> {
        &self.queue
    }

    pub fn shut_down(&self) {
        self.queue.shut_down();
        self.waiting.changed.notify_one();
    }
}

async fn waiting_loop<T: QueueItem + Ord>(queue: Queue<T>, waiting: Weak<Waiting<T>>) {
    loop {
        let Some(w) = waiting.upgrade() else { return };
        if queue.is_shutting_down() {
            return;
        }
        let now = Instant::now();
        let next = {
            let mut s = w.state.lock();
            loop {
                let Some(Reverse((deadline, _, item))) = s.heap.peek() else {
                    break None;
                };
                let (deadline, live) = (*deadline, s.ready_at.get(item) == Some(deadline));
                if live && deadline > now {
                    break Some(deadline);
                }
                let Reverse((_, _, item)) = s.heap.pop().expect("peeked");
                if live {
                    s.ready_at.remove(&item);
                    queue.add(item);
                }
            }
        };
        let wake = next.map_or(now + MAX_WAIT, |d| d.min(now + MAX_WAIT));
        // Holding `w` here keeps the queue's state alive for at most MAX_WAIT after the queue is dropped.
        tokio::select! {
            () = tokio::time::sleep_until(wake) => {}
            () = w.changed.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn item_appears_after_its_delay() {
        let q = DelayingQueue::new(Queue::new());
        q.add_after("a", Duration::from_millis(50));
        tokio::time::sleep(Duration::from_millis(49)).await;
        assert!(q.queue().try_get().is_none());
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(q.queue().try_get(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn earliest_deadline_wins() {
        let q = DelayingQueue::new(Queue::new());
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(1));
        q.add_after("a", Duration::from_secs(5));
        assert_eq!(q.waiting_len(), 1);
        tokio::time::sleep(Duration::from_millis(1001)).await;
        assert_eq!(q.queue().try_get(), Some("a"));
        q.queue().done(&"a");
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(q.queue().try_get().is_none(), "the later deadlines were dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_delay_is_immediate_and_shutdown_ignores_adds() {
        let q = DelayingQueue::new(Queue::new());
        q.add_after(1, Duration::ZERO);
        assert_eq!(q.queue().try_get(), Some(1));
        q.shut_down();
        q.add_after(2, Duration::from_millis(1));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(q.waiting_len(), 0);
        assert!(q.queue().try_get().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn items_come_out_in_deadline_order() {
        let q = DelayingQueue::new(Queue::new());
        q.add_after(3, Duration::from_millis(30));
        q.add_after(1, Duration::from_millis(10));
        q.add_after(2, Duration::from_millis(20));
        tokio::time::sleep(Duration::from_millis(31)).await;
        let got: Vec<_> = std::iter::from_fn(|| q.queue().try_get()).collect();
        assert_eq!(got, [1, 2, 3]);
    }
}
