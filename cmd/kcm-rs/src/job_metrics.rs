//! The Job controller's metrics (`job::JobMetrics`) in Prometheus, with upstream's names, labels
//! and buckets (`pkg/controller/job/metrics`, subsystem `job_controller`).

use std::{sync::Arc, time::Duration};

use job::JobMetrics;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SyncLabels {
    completion_mode: String,
    result: String,
    action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FinishedLabels {
    completion_mode: String,
    result: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PodsFinishedLabels {
    completion_mode: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabel {
    action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabel {
    event: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
#[allow(non_snake_case)] // upstream's label name
struct IndexesLabels {
    status: String,
    backoffLimit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CreationLabels {
    reason: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerNameLabel {
    controller_name: String,
}

/// Upstream's `job_sync_duration_seconds` buckets: 4 ms doubling, 15 buckets.
fn sync_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.004, 2.0, 15))
}

#[derive(Debug)]
pub struct PromJobMetrics {
    sync_duration: Family<SyncLabels, Histogram, fn() -> Histogram>,
    syncs: Family<SyncLabels, Counter>,
    finished: Family<FinishedLabels, Counter>,
    pods_finished: Family<PodsFinishedLabels, Counter>,
    by_policy: Family<ActionLabel, Counter>,
    tracking_finalizer: Family<EventLabel, Counter>,
    finished_indexes: Family<IndexesLabels, Counter>,
    pods_created: Family<CreationLabels, Counter>,
    external: Family<ControllerNameLabel, Counter>,
}

impl PromJobMetrics {
    /// Registers every series under `job_controller_` in `registry`.
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let m = PromJobMetrics {
            sync_duration: Family::new_with_constructor(sync_buckets),
            syncs: Family::default(),
            finished: Family::default(),
            pods_finished: Family::default(),
            by_policy: Family::default(),
            tracking_finalizer: Family::default(),
            finished_indexes: Family::default(),
            pods_created: Family::default(),
            external: Family::default(),
        };
        let r = registry.sub_registry_with_prefix("job_controller");
        r.register(
            "job_sync_duration_seconds",
            "[STABLE] The time it took to sync a job",
            m.sync_duration.clone(),
        );
        r.register("job_syncs", "[STABLE] The number of job syncs", m.syncs.clone());
        r.register(
            "jobs_finished",
            "[STABLE] The number of finished jobs",
            m.finished.clone(),
        );
        r.register(
            "job_pods_finished",
            "[STABLE] The number of finished Pods that are fully tracked",
            m.pods_finished.clone(),
        );
        r.register(
            "pod_failures_handled_by_failure_policy",
            "[BETA] The number of failed Pods handled by failure policy with\\n\t\t\trespect to the failure policy action applied based on the matched\\n\t\t\trule. Possible values of the action label correspond to the\\n\t\t\tpossible values for the failure policy rule action, which are:\\n\t\t\t\"FailJob\", \"Ignore\" and \"Count\".",
            m.by_policy.clone(),
        );
        r.register(
            "terminated_pods_tracking_finalizer",
            "[BETA] The number of terminated pods (phase=Failed|Succeeded)\\nthat have the finalizer batch.kubernetes.io/job-tracking\\nThe event label can be \"add\" or \"delete\".",
            m.tracking_finalizer.clone(),
        );
        r.register(
            "job_finished_indexes",
            "[ALPHA] The number of finished indexes. Possible values for the\\n\t\t\tstatus label are: \"succeeded\", \"failed\". Possible values for the\\n\t\t\tbackoffLimit label are: \"perIndex\" and \"global\"",
            m.finished_indexes.clone(),
        );
        r.register(
            "job_pods_creation",
            "[ALPHA] The number of Pods created by the Job controller labelled with a reason for the Pod creation.\\nThis metric also distinguishes between Pods created using different PodReplacementPolicy settings.\\nPossible values of the \"reason\" label are:\\n\"new\", \"recreate_terminating_or_failed\", \"recreate_failed\".\\nPossible values of the \"status\" label are:\\n\"succeeded\", \"failed\".",
            m.pods_created.clone(),
        );
        r.register(
            "jobs_by_external_controller",
            "[ALPHA] The number of Jobs managed by an external controller",
            m.external.clone(),
        );
        Arc::new(m)
    }
}

impl JobMetrics for PromJobMetrics {
    fn job_sync(&self, completion_mode: &str, result: &str, action: &str, elapsed: Duration) {
        let labels = SyncLabels {
            completion_mode: completion_mode.into(),
            result: result.into(),
            action: action.into(),
        };
        self.sync_duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.syncs.get_or_create(&labels).inc();
    }
    fn job_finished(&self, completion_mode: &str, result: &str, reason: &str) {
        let labels = FinishedLabels {
            completion_mode: completion_mode.into(),
            result: result.into(),
            reason: reason.into(),
        };
        self.finished.get_or_create(&labels).inc();
    }
    fn pods_finished(&self, completion_mode: &str, result: &str, n: u64) {
        let labels = PodsFinishedLabels {
            completion_mode: completion_mode.into(),
            result: result.into(),
        };
        self.pods_finished.get_or_create(&labels).inc_by(n);
    }
    fn pod_failures_handled_by_policy(&self, action: &str, n: u64) {
        let labels = ActionLabel {
            action: action.into(),
        };
        self.by_policy.get_or_create(&labels).inc_by(n);
    }
    fn terminated_pod_tracking_finalizer(&self, event: &str) {
        let labels = EventLabel { event: event.into() };
        self.tracking_finalizer.get_or_create(&labels).inc();
    }
    fn finished_indexes(&self, status: &str, backoff_limit: &str, n: u64) {
        let labels = IndexesLabels {
            status: status.into(),
            backoffLimit: backoff_limit.into(),
        };
        self.finished_indexes.get_or_create(&labels).inc_by(n);
    }
    fn pods_created(&self, reason: &str, status: &str, n: u64) {
        let labels = CreationLabels {
            reason: reason.into(),
            status: status.into(),
        };
        self.pods_created.get_or_create(&labels).inc_by(n);
    }
    fn job_by_external_controller(&self, controller_name: &str) {
        let labels = ControllerNameLabel {
            controller_name: controller_name.into(),
        };
        self.external.get_or_create(&labels).inc();
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;

    use super::*;

    #[test]
    fn upstreams_names_and_labels() {
        let mut registry = Registry::default();
        let m = PromJobMetrics::register(&mut registry);
        m.job_sync("NonIndexed", "success", "reconciling", Duration::from_millis(5));
        m.finished_indexes("succeeded", "global", 2);
        m.job_by_external_controller("example.com/x");
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for needle in [
            "job_controller_job_sync_duration_seconds_bucket{",
            "job_controller_job_syncs_total{completion_mode=\"NonIndexed\",result=\"success\",action=\"reconciling\"} 1",
            "job_controller_job_finished_indexes_total{status=\"succeeded\",backoffLimit=\"global\"} 2",
            "job_controller_jobs_by_external_controller_total{controller_name=\"example.com/x\"} 1",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
    }
}
