//! The one figure only the ReplicaSet controller reports (upstream `pkg/controller/replicaset/metrics`),
//! through a trait with a no-op default: this crate reports, the binary decides where it goes.

/// The ReplicaSet controller's own metric, beside the [`controller::SyncMetrics`] every controller
/// reports.
pub trait ReplicaSetMetrics: Send + Sync + 'static {
    /// `replicaset_controller_sorting_deletion_age_ratio`: for each ready pod chosen for deletion, its
    /// age over the youngest ready pod's age.
    fn sorting_deletion_age_ratio(&self, ratio: f64) {
        let _ = ratio;
    }
}

/// Discards the figure (shadow mode, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReplicaSetMetrics;

impl ReplicaSetMetrics for NoReplicaSetMetrics {}
