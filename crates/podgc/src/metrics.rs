//! What the pod garbage collector counts (upstream `pkg/controller/podgc/metrics`), through a trait
//! with no-op defaults as the other controllers' figures: the binary decides where they go.

/// The pod garbage collector's figures, by namespace and [`crate::Reason`] label.
pub trait PodGcMetrics: Send + Sync + 'static {
    /// `pod_gc_collector_force_delete_pods_total{namespace,reason}`.
    fn force_delete(&self, namespace: &str, reason: &str) {
        let _ = (namespace, reason);
    }
    /// `pod_gc_collector_force_delete_pod_errors_total{namespace,reason}`.
    fn force_delete_error(&self, namespace: &str, reason: &str) {
        let _ = (namespace, reason);
    }
}

impl PodGcMetrics for () {}
