//! Nodes that pods are bound to but the cache does not hold, each held back for
//! [`QUARANTINE`] before the API server is asked whether it is gone: a node may reach the
//! cache after a pod bound to it. Upstream holds them in a delaying work queue,
//! `orphaned_pods_nodes`, and so does this (`informer::WorkQueue`, with client-go's delaying
//! semantics: a node named again while it waits keeps the earlier time), so that its
//! `workqueue_*{name="orphaned_pods_nodes"}` series are upstream's.

use std::time::Duration;

use informer::{MetricsProvider, WorkQueue};

/// How long a node missing from the cache waits before it is looked up (upstream
/// `quarantineTime`).
pub const QUARANTINE: Duration = Duration::from_secs(40);
/// The queue's name (upstream's `nodeQueue`).
pub const QUARANTINE_QUEUE: &str = "orphaned_pods_nodes";

/// The nodes in quarantine.
#[derive(Debug)]
pub struct Quarantine {
    queue: WorkQueue<String>,
}

impl Quarantine {
    pub fn new(metrics: &dyn MetricsProvider) -> Self {
        Self {
            queue: WorkQueue::named(QUARANTINE_QUEUE, metrics),
        }
    }

    /// Puts each of `names` into quarantine, or leaves it with its earlier time.
    pub fn add<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        for name in names {
            self.queue.add_after(name.clone(), QUARANTINE);
        }
    }

    /// The nodes whose quarantine is over, which leave it: a node still missing after its lookup
    /// comes back on the next pass that finds a pod bound to it (upstream `discoverDeletedNodes`
    /// drains what is ready, never waiting).
    pub fn take_ready(&self) -> Vec<String> {
        let mut ready = Vec::new();
        while let Some(name) = self.queue.try_get() {
            self.queue.done(&name);
            ready.push(name);
        }
        ready
    }
}

#[cfg(test)]
mod tests {
    use informer::NoopMetrics;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_node_is_looked_up_once_its_quarantine_is_over_and_keeps_its_first_time() {
        let q = Quarantine::new(&NoopMetrics);
        let (a, b) = ("a".to_owned(), "b".to_owned());
        q.add([&a]);
        tokio::time::sleep(Duration::from_secs(20)).await;
        q.add([&a, &b]);
        tokio::time::sleep(Duration::from_secs(19)).await;
        assert!(q.take_ready().is_empty(), "39 s");
        // Just past 40 s: the queue's timer task moves a node at its time, a pass may run at the
        // same instant before it (as with upstream's queue).
        tokio::time::sleep(Duration::from_millis(1_001)).await;
        assert_eq!(q.take_ready(), ["a"]);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(q.take_ready(), ["b"], "b waits until 60 s");
        q.add([&a]);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            q.take_ready().is_empty(),
            "named again after its lookup: a new quarantine"
        );
    }
}
