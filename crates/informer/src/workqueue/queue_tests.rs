use std::{collections::VecDeque, time::Duration};

use proptest::prelude::*;

use super::*;

#[tokio::test]
async fn add_deduplicates_waiting_items() {
    let q = Queue::new();
    q.add("a");
    q.add("a");
    q.add("b");
    assert_eq!(q.len(), 2);
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(q.get().await, Some("b"));
    assert!(q.try_get().is_none());
}

#[tokio::test]
async fn item_added_while_processing_is_requeued_by_done_only() {
    let q = Queue::new();
    q.add("a");
    let a = q.get().await.unwrap();
    q.add("a");
    // Not handed to a second worker while the first holds it.
    assert!(q.try_get().is_none());
    q.done(&a);
    assert_eq!(q.try_get(), Some("a"));
    q.done(&"a");
    assert!(q.try_get().is_none());
}

/// Adds and depth as the metrics see them.
#[derive(Default)]
struct Counted(parking_lot::Mutex<(usize, usize)>);

impl QueueMetrics for Counted {
    fn add(&self, depth: usize) {
        let mut c = self.0.lock();
        *c = (c.0 + 1, depth);
    }
    fn get(&self, depth: usize, _: Duration) {
        self.0.lock().1 = depth;
    }
}

/// client-go counts an item added again while in progress when it is added, and keeps it in the
/// depth until a worker takes it again: `workqueue_depth` shows work waiting behind a busy key.
#[tokio::test]
async fn an_item_added_while_processing_counts_at_once() {
    let counted = Arc::new(Counted::default());
    let q = Queue::with_metrics(counted.clone());
    q.add("a");
    let a = q.get().await.unwrap();
    assert_eq!(*counted.0.lock(), (1, 0));
    q.add("a");
    assert_eq!(*counted.0.lock(), (2, 1), "counted and waiting");
    q.done(&a);
    assert_eq!(*counted.0.lock(), (2, 1), "queued again, not counted twice");
    assert_eq!(q.try_get(), Some("a"));
    assert_eq!(*counted.0.lock(), (2, 0));
}

#[tokio::test]
async fn waiting_getter_is_woken_by_add() {
    let q = Queue::new();
    let q2 = q.clone();
    let worker = tokio::spawn(async move { q2.get().await });
    tokio::task::yield_now().await;
    q.add(7);
    assert_eq!(worker.await.unwrap(), Some(7));
}

#[tokio::test]
async fn shut_down_drains_queued_items_then_ends() {
    let q = Queue::new();
    q.add(1);
    q.add(2);
    q.shut_down();
    q.add(3);
    assert_eq!(q.get().await, Some(1));
    assert_eq!(q.get().await, Some(2));
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shut_down_wakes_every_waiter() {
    let q: Queue<u32> = Queue::new();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            tokio::spawn({
                let q = q.clone();
                async move { q.get().await }
            })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shut_down();
    for w in waiters {
        assert_eq!(w.await.unwrap(), None);
    }
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_done() {
    let q = Queue::new();
    q.add("x");
    let x = q.get().await.unwrap();
    let q2 = q.clone();
    let drain = tokio::spawn(async move { q2.shut_down_with_drain().await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        !drain.is_finished(),
        "drain returned while an item was still being processed"
    );
    q.done(&x);
    drain.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_workers_never_hold_the_same_item() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let q: Queue<u32> = Queue::new();
    let holding: Arc<Vec<AtomicUsize>> = Arc::new((0..10).map(|_| AtomicUsize::new(0)).collect());
    let workers: Vec<_> = (0..5)
        .map(|_| {
            let (q, holding) = (q.clone(), holding.clone());
            tokio::spawn(async move {
                while let Some(i) = q.get().await {
                    assert_eq!(
                        holding[i as usize].fetch_add(1, Ordering::SeqCst),
                        0,
                        "item {i} held twice"
                    );
                    tokio::task::yield_now().await;
                    holding[i as usize].fetch_sub(1, Ordering::SeqCst);
                    q.done(&i);
                }
            })
        })
        .collect();
    for round in 0..2000u32 {
        q.add(round % 10);
        if round % 7 == 0 {
            tokio::task::yield_now().await;
        }
    }
    q.shut_down_with_drain().await;
    for w in workers {
        w.await.unwrap();
    }
}

/// The reference model: what a client-go queue holds, written as plainly as possible.
#[derive(Default, Debug)]
struct Model {
    queue: VecDeque<u8>,
    dirty: std::collections::HashSet<u8>,
    processing: std::collections::HashSet<u8>,
}

impl Model {
    fn add(&mut self, x: u8) {
        if !self.dirty.insert(x) {
            return;
        }
        if !self.processing.contains(&x) {
            self.queue.push_back(x);
        }
    }
    fn get(&mut self) -> Option<u8> {
        let x = self.queue.pop_front()?;
        self.dirty.remove(&x);
        self.processing.insert(x);
        Some(x)
    }
    fn done(&mut self, x: u8) {
        self.processing.remove(&x);
        if self.dirty.contains(&x) {
            self.queue.push_back(x);
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Get,
    Done(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..8).prop_map(Op::Add),
        Just(Op::Get),
        (0usize..8).prop_map(Op::Done)
    ]
}

proptest! {
    #[test]
    fn matches_the_reference_model(ops in proptest::collection::vec(op(), 0..200)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let q = Queue::new();
            let mut model = Model::default();
            let mut held: Vec<u8> = Vec::new();
            for op in ops {
                match op {
                    Op::Add(x) => { q.add(x); model.add(x); }
                    Op::Get => {
                        let got = q.try_get();
                        prop_assert_eq!(got, model.get());
                        held.extend(got);
                    }
                    Op::Done(i) => if !held.is_empty() {
                        let x = held.remove(i % held.len());
                        q.done(&x);
                        model.done(x);
                    },
                }
                q.assert_invariants();
                prop_assert_eq!(q.len(), model.queue.len());
            }
            Ok(())
        })?;
    }
}
