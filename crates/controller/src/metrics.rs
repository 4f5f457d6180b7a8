//! What a controller's syncs report, through a trait with no-op defaults as the informer's metrics
//! are: the controller reports, the binary decides where figures go (Prometheus). It lives here and
//! not in the informer crate because a sync is a controller's notion; the informer knows queues and
//! reflectors only.

use std::{sync::Arc, time::Duration};

use informer::{MetricsProvider, NoopMetrics};

/// The figures every controller's syncs give, whatever the kind.
pub trait SyncMetrics: Send + Sync + 'static {
    /// How long one sync took and whether it succeeded.
    fn sync(&self, elapsed: Duration, ok: bool) {
        let _ = (elapsed, ok);
    }
    /// `<controller>_stale_sync_skips_total{group,resource}`: a sync skipped because a cache had not
    /// caught up with this controller's own write (KEP-5647; upstream exports it for the ReplicaSet
    /// and the Job controllers).
    fn stale_sync_skip(&self, group: &str, resource: &str) {
        let _ = (group, resource);
    }
    /// `kcm_rs_controller_sync_panics_total{controller}`: a sync panicked; the worker caught it and
    /// retries the key. Also counts a panic outside the syncs, which stops the controller (see
    /// `Started::synced`). kcm-rs only: upstream's process would crash.
    fn panic(&self) {}
}

impl SyncMetrics for NoopMetrics {}

/// The informer's metric sinks plus the controllers' own. The binary implements both; tests take
/// [`NoopMetrics`].
pub trait ControllerMetrics: MetricsProvider {
    /// Sink for the syncs of the controller whose queue is named `controller` (e.g. `replicaset`).
    fn sync_metrics(&self, controller: &str) -> Arc<dyn SyncMetrics> {
        let _ = controller;
        Arc::new(NoopMetrics)
    }
}

impl ControllerMetrics for NoopMetrics {}
