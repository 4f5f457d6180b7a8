use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::*;

/// Counts what the workers reported.
#[derive(Default)]
struct Counts {
    panics: AtomicUsize,
    failures: AtomicUsize,
}

struct Shared(Arc<Counts>);

impl SyncMetrics for Shared {
    fn sync(&self, _: Duration, ok: bool) {
        if !ok {
            self.0.failures.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn panic(&self) {
        self.0.panics.fetch_add(1, Ordering::SeqCst);
    }
}

/// Panics on the first `panics` syncs of `ns/boom`, never returns for `ns/stuck`, and records
/// every other sync that completed.
#[derive(Default)]
struct Script {
    panics: usize,
    boom_attempts: AtomicUsize,
    synced: Mutex<Vec<String>>,
}

impl Reconciler for Script {
    type Error = String;

    async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, String> {
        match key.as_str() {
            "ns/boom" => {
                let attempt = self.boom_attempts.fetch_add(1, Ordering::SeqCst);
                assert!(attempt >= self.panics, "sync of ns/boom panics on purpose");
            }
            "ns/stuck" => futures::future::pending::<()>().await,
            _ => {}
        }
        self.synced.lock().push(key.as_str().to_owned());
        Ok(None)
    }
}

fn start(
    script: &Arc<Script>,
    workers: usize,
) -> (
    WorkQueue<ObjectKey>,
    Arc<Counts>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let queue = WorkQueue::new();
    let counts = Arc::new(Counts::default());
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(run_workers(
        "test",
        script.clone(),
        queue.clone(),
        Arc::new(Shared(counts.clone())),
        WorkerOptions {
            workers,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        },
        cancel.clone(),
    ));
    (queue, counts, cancel, handle)
}

#[tokio::test(start_paused = true)]
async fn a_panicking_sync_is_retried_and_the_worker_keeps_running() {
    let script = Arc::new(Script {
        panics: 3,
        ..Script::default()
    });
    // One worker only: if the panic ended it, nothing after would be synced.
    let (queue, counts, cancel, handle) = start(&script, 1);
    queue.add(ObjectKey::parse("ns/boom"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    queue.add(ObjectKey::parse("ns/after"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(counts.panics.load(Ordering::SeqCst), 3);
    assert_eq!(counts.failures.load(Ordering::SeqCst), 3);
    assert_eq!(
        *script.synced.lock(),
        ["ns/boom", "ns/after"],
        "the key came back with backoff (5, 10, 20 ms) and synced; the worker went on"
    );
    assert_eq!(
        queue.num_requeues(&ObjectKey::parse("ns/boom")),
        0,
        "forgotten after success"
    );
    cancel.cancel();
    handle.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn panics_in_every_worker_leave_every_worker_alive() {
    let script = Arc::new(Script {
        panics: 1000,
        ..Script::default()
    });
    let (queue, counts, cancel, handle) = start(&script, 5);
    queue.add(ObjectKey::parse("ns/boom"));
    for i in 0..20 {
        queue.add(ObjectKey::parse(&format!("ns/ok-{i}")));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(counts.panics.load(Ordering::SeqCst) >= 5);
    assert_eq!(script.synced.lock().len(), 20);
    cancel.cancel();
    handle.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_is_bounded_by_the_drain_timeout() {
    let script = Arc::new(Script::default());
    let (queue, _, cancel, handle) = start(&script, 2);
    queue.add(ObjectKey::parse("ns/stuck"));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let stopped_at = tokio::time::Instant::now();
    cancel.cancel();
    handle.await.unwrap();
    assert_eq!(
        stopped_at.elapsed(),
        DEFAULT_DRAIN_TIMEOUT,
        "a sync that never returns is abandoned at the timeout"
    );
}

#[tokio::test(start_paused = true)]
async fn cancelled_workers_take_no_new_keys_and_wait_for_syncs_in_flight() {
    let script = Arc::new(Script::default());
    let (queue, _, cancel, handle) = start(&script, 1);
    cancel.cancel();
    tokio::task::yield_now().await;
    for i in 0..3 {
        queue.add(ObjectKey::parse(&format!("ns/late-{i}")));
    }
    let stopped_at = tokio::time::Instant::now();
    handle.await.unwrap();
    assert!(script.synced.lock().is_empty(), "no key taken after cancellation");
    assert!(stopped_at.elapsed() < Duration::from_secs(1));
}

/// Fails `ns/flaky` on the syncs `fail_on` lists (0-based); succeeds with nothing to come back for
/// otherwise.
struct Flaky<const DONE: bool, const REQUEUED: bool> {
    fail_on: Vec<usize>,
    attempts: AtomicUsize,
    /// What a sync that succeeds asks for: the key again after this long, or nothing.
    again: Option<Duration>,
}

impl<const DONE: bool, const REQUEUED: bool> Reconciler for Flaky<DONE, REQUEUED> {
    type Error = String;
    const FORGETS_WHEN_DONE: bool = DONE;
    const FORGETS_WHEN_REQUEUED: bool = REQUEUED;

    async fn sync(&self, _: &ObjectKey) -> Result<Option<Duration>, String> {
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst);
        if self.fail_on.contains(&attempt) {
            Err(format!("attempt {attempt}"))
        } else {
            Ok(self.again)
        }
    }
}

/// The failures a key has counted after: a failure (retried), a success, a second sync taken.
async fn requeues_after_fail_then_succeed<const DONE: bool, const REQUEUED: bool>(
    again: Option<Duration>,
) -> u32 {
    let flaky = Arc::new(Flaky::<DONE, REQUEUED> {
        fail_on: vec![0],
        attempts: AtomicUsize::new(0),
        again,
    });
    let queue = WorkQueue::new();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(run_workers(
        "test",
        flaky.clone(),
        queue.clone(),
        Arc::new(Shared(Arc::default())),
        WorkerOptions {
            workers: 1,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        },
        cancel.clone(),
    ));
    let key = ObjectKey::new(Some("ns"), "flaky");
    queue.add(key.clone());
    while flaky.attempts.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    cancel.cancel();
    handle.await.unwrap();
    queue.num_requeues(&key)
}

/// Upstream's CronJob controller keeps a key's failures across a sync that succeeds without asking
/// for it again, its namespace controller across one that asks for the key again after a delay;
/// the others forget them after every success.
#[tokio::test(start_paused = true)]
async fn a_success_forgets_the_keys_failures_unless_the_controller_keeps_them() {
    let later = Some(Duration::from_secs(3600));
    assert_eq!(requeues_after_fail_then_succeed::<true, true>(None).await, 0);
    assert_eq!(requeues_after_fail_then_succeed::<true, true>(later).await, 0);
    // The CronJob controller's way.
    assert_eq!(requeues_after_fail_then_succeed::<false, true>(None).await, 1);
    assert_eq!(requeues_after_fail_then_succeed::<false, true>(later).await, 0);
    // The namespace controller's.
    assert_eq!(requeues_after_fail_then_succeed::<true, false>(None).await, 0);
    assert_eq!(requeues_after_fail_then_succeed::<true, false>(later).await, 1);
}

/// `--concurrent-deployment-syncs=0`: upstream starts no worker; keys wait and shutdown is prompt.
#[tokio::test(start_paused = true)]
async fn zero_workers_sync_nothing() {
    let script = Arc::new(Script::default());
    let (queue, _, cancel, handle) = start(&script, 0);
    queue.add(ObjectKey::new(Some("ns"), "waits"));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(script.synced.lock().is_empty());
    assert_eq!(queue.len(), 1);
    cancel.cancel();
    handle.await.unwrap();
}
