//! The pod garbage collector's metrics (`podgc::PodGcMetrics`) in Prometheus, with upstream's
//! names and labels (`pkg/controller/podgc/metrics`, subsystem `pod_gc_collector`).

use std::sync::Arc;

use podgc::PodGcMetrics;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Labels {
    namespace: String,
    reason: String,
}

/// Upstream's two counters, registered on first use of the controller.
#[derive(Clone, Debug, Default)]
pub struct PromPodGcMetrics {
    deleted: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
}

impl PromPodGcMetrics {
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let m = Self::default();
        registry.register(
            "pod_gc_collector_force_delete_pods",
            "[ALPHA] Number of pods that are being forcefully deleted since the Pod GC Controller started.",
            m.deleted.clone(),
        );
        registry.register(
            "pod_gc_collector_force_delete_pod_errors",
            "[ALPHA] Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
            m.errors.clone(),
        );
        Arc::new(m)
    }
}

fn labels(namespace: &str, reason: &str) -> Labels {
    Labels {
        namespace: namespace.to_owned(),
        reason: reason.to_owned(),
    }
}

impl PodGcMetrics for PromPodGcMetrics {
    fn force_delete(&self, namespace: &str, reason: &str) {
        self.deleted.get_or_create(&labels(namespace, reason)).inc();
    }

    fn force_delete_error(&self, namespace: &str, reason: &str) {
        self.errors.get_or_create(&labels(namespace, reason)).inc();
    }
}
