//! The worker loop every controller runs (upstream `processNextWorkItem` under
//! `wait.UntilWithContext`): take a key, sync it, forget or retry it with backoff, mark it done.
//!
//! Two things differ from a plain loop, on purpose:
//! * a panic inside one sync is contained. Upstream's `HandleCrash` would crash the whole process;
//!   an unwinding panic in a tokio task would silently end that worker and leave its key marked as
//!   processing for good, so that key is never synced again and, one panic per worker, the
//!   controller stops while the process looks healthy. Here the panic is logged with the key,
//!   counted ([`SyncMetrics::panic`]), the key is retried with backoff and the worker goes on.
//! * shutdown is bounded. On cancellation the workers stop taking keys; syncs in flight get
//!   [`WorkerOptions::drain_timeout`] to finish and are then abandoned, whatever state they are in.

use std::{any::Any, fmt::Display, future::Future, panic::AssertUnwindSafe, sync::Arc, time::Duration};

use futures::FutureExt as _;
use informer::{ObjectKey, WorkQueue, workqueue::QueueItem};

use crate::metrics::SyncMetrics;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long syncs in flight may take to finish after cancellation: the bound kcm-rs documents for a
/// graceful shutdown (the same 30 s as controller-runtime's default `GracefulShutdownTimeout`).
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// One controller's sync of one key. Keys are `namespace/name` object keys unless a queue holds
/// something else (the Job controller's orphan queue also holds label selectors).
pub trait Reconciler<K = ObjectKey>: Send + Sync + 'static {
    type Error: Display + Send;

    /// Whether a sync that succeeds with nothing to come back for resets the key's backoff, as
    /// upstream's controllers do but the CronJob controller: there a key that failed, then synced
    /// with nothing to come back for, keeps its failures, and its next failure waits longer.
    const FORGETS_WHEN_DONE: bool = true;

    /// Whether a sync that succeeds and asks for the key again after a delay resets its backoff, as
    /// upstream's controllers do but the namespace controller, whose content still to go keeps the
    /// namespace's failures counted.
    const FORGETS_WHEN_REQUEUED: bool = true;

    /// Whether a failure is expected and retried without an error in the log, only at debug (the
    /// garbage collector's owner not seen yet, or its kind not yet in discovery). Default: none.
    fn is_quiet(error: &Self::Error) -> bool {
        let _ = error;
        false
    }

    /// `Ok(Some(d))` asks for the key again after `d`; `Err` retries it with the queue's backoff.
    fn sync(&self, key: &K) -> impl Future<Output = Result<Option<Duration>, Self::Error>> + Send;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerOptions {
    /// Concurrent syncs (`--concurrent-*-syncs`); with none, keys wait in the queue, as upstream's
    /// controllers run with zero workers.
    pub workers: usize,
    pub drain_timeout: Duration,
}

/// Runs `options.workers` workers over `queue` until `cancel` fires, then shuts the queue down and
/// waits at most `options.drain_timeout` for syncs in flight. `controller` names the controller in
/// logs.
pub async fn run_workers<K, R>(
    controller: &'static str,
    reconciler: Arc<R>,
    queue: WorkQueue<K>,
    metrics: Arc<dyn SyncMetrics>,
    options: WorkerOptions,
    cancel: CancellationToken,
) where
    K: QueueItem + Ord + Display,
    R: Reconciler<K>,
{
    let mut workers = JoinSet::new();
    for _ in 0..options.workers {
        let worker = Worker {
            controller,
            reconciler: reconciler.clone(),
            queue: queue.clone(),
            metrics: metrics.clone(),
        };
        let cancel = cancel.clone();
        workers.spawn(async move { worker.run(cancel).await });
    }
    cancel.cancelled().await;
    queue.shut_down();
    let drained = tokio::time::timeout(options.drain_timeout, async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            controller,
            timeout = ?options.drain_timeout,
            unfinished = workers.len(),
            "syncs in flight did not finish in time; abandoning them"
        );
        workers.abort_all();
    }
}

struct Worker<K: QueueItem + Ord, R> {
    controller: &'static str,
    reconciler: Arc<R>,
    queue: WorkQueue<K>,
    metrics: Arc<dyn SyncMetrics>,
}

impl<K: QueueItem + Ord + Display, R: Reconciler<K>> Worker<K, R> {
    async fn run(&self, cancel: CancellationToken) {
        loop {
            // Cancellation wins over queued keys: once told to stop, take no new work.
            let key = tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                key = self.queue.get() => key,
            };
            let Some(key) = key else { return };
            self.process(&key).await;
            self.queue.done(&key);
        }
    }

    async fn process(&self, key: &K) {
        let started = tokio::time::Instant::now();
        let outcome = AssertUnwindSafe(self.reconciler.sync(key)).catch_unwind().await;
        match outcome {
            Ok(result) => {
                self.metrics.sync(started.elapsed(), result.is_ok());
                match result {
                    Ok(requeue) => {
                        let forgets = match requeue {
                            Some(_) => R::FORGETS_WHEN_REQUEUED,
                            None => R::FORGETS_WHEN_DONE,
                        };
                        if forgets {
                            self.queue.forget(key);
                        }
                        if let Some(after) = requeue {
                            self.queue.add_after(key.clone(), after);
                        }
                    }
                    Err(e) if R::is_quiet(&e) => {
                        tracing::debug!(controller = self.controller, key = %key, "sync to be retried: {e}");
                        self.queue.add_rate_limited(key.clone());
                    }
                    Err(e) => {
                        tracing::error!(controller = self.controller, key = %key, "sync failed: {e}");
                        self.queue.add_rate_limited(key.clone());
                    }
                }
            }
            Err(payload) => {
                self.metrics.sync(started.elapsed(), false);
                self.metrics.panic();
                tracing::error!(
                    controller = self.controller,
                    key = %key,
                    panic = panic_message(payload.as_ref()),
                    "sync panicked; retrying the key with backoff"
                );
                self.queue.add_rate_limited(key.clone());
            }
        }
    }
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
