//! Metrics through small traits with no-op defaults, as client-go's `workqueue.MetricsProvider` and the
//! reflector's metrics: library code reports, the binary decides where figures go (Prometheus).

use std::{sync::Arc, time::Duration};

/// Creates the per-queue and per-reflector metric sinks. Every method has a no-op default.
pub trait MetricsProvider: Send + Sync + 'static {
    /// Sink for the workqueue named `name` (upstream's `name` label).
    fn queue_metrics(&self, name: &str) -> Arc<dyn QueueMetrics> {
        let _ = name;
        Arc::new(NoopMetrics)
    }

    /// Sink for the reflector of `resource` (for example `pods`).
    fn reflector_metrics(&self, resource: &str) -> Arc<dyn ReflectorMetrics> {
        let _ = resource;
        Arc::new(NoopMetrics)
    }
}

/// The workqueue metrics kube-controller-manager exports, named as upstream does:
/// `workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`,
/// `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
/// `workqueue_longest_running_processor_seconds` and `workqueue_retries_total`.
pub trait QueueMetrics: Send + Sync + 'static {
    /// An item was added; `depth` is how many items wait to be processed after it (client-go's:
    /// those queued, and those in progress that were added again and will be queued when done).
    fn add(&self, depth: usize) {
        let _ = depth;
    }
    /// A worker took an item that waited `queued_for`; `depth` as for [`QueueMetrics::add`].
    fn get(&self, depth: usize, queued_for: Duration) {
        let _ = (depth, queued_for);
    }
    /// A worker finished an item it held for `worked_for`.
    fn done(&self, worked_for: Duration) {
        let _ = worked_for;
    }
    /// An item was scheduled again with a delay (`add_after`, `add_rate_limited`).
    fn retry(&self) {}
    /// Seconds of work in progress that has not been `done`, summed, and the longest single one.
    fn unfinished_work(&self, total_seconds: f64, longest_seconds: f64) {
        let _ = (total_seconds, longest_seconds);
    }
}

/// Reflector list and watch counts and failures (kcm-rs names: `kcm_rs_reflector_*`).
pub trait ReflectorMetrics: Send + Sync + 'static {
    fn list(&self, items: usize) {
        let _ = items;
    }
    fn list_error(&self) {}
    fn watch(&self) {}
    fn watch_error(&self) {}
    fn watch_events(&self, events: usize) {
        let _ = events;
    }
}

/// The default sink: discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetrics;

impl MetricsProvider for NoopMetrics {}
impl QueueMetrics for NoopMetrics {}
impl ReflectorMetrics for NoopMetrics {}
