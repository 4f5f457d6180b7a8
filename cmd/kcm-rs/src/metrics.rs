//! Prometheus metrics (prometheus-client): the families, under upstream's names, plus kcm-rs's own;
//! `metric_sinks.rs` implements the informer and controller crates' metric traits over them.

use std::sync::{Arc, atomic::AtomicU64};

use parking_lot::Mutex;
use prometheus_client::{
    encoding::text::encode,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use crate::{
    metric_labels::{
        ControllerLabel, GroupResourceLabel, NameLabel, QueueLabel, ResourceLabel, Sharded, SyncLabel,
    },
    shard_series::ShardSeries,
};

type Hist<L> = Family<L, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// Upstream's workqueue latency buckets: 10 ns to 10 s, a decade each (component-base workqueue metrics).
fn queue_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

/// Sync duration buckets: 1 ms to ~16 s.
fn sync_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// Every metric kcm-rs exports. Cloning shares them.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    depth: Family<QueueLabel, Gauge>,
    adds: Family<QueueLabel, Counter>,
    queue_duration: Hist<QueueLabel>,
    work_duration: Hist<QueueLabel>,
    unfinished: Family<QueueLabel, FloatGauge>,
    longest: Family<QueueLabel, FloatGauge>,
    retries: Family<QueueLabel, Counter>,
    lists: Family<Sharded<ResourceLabel>, Counter>,
    list_errors: Family<Sharded<ResourceLabel>, Counter>,
    watches: Family<Sharded<ResourceLabel>, Counter>,
    watch_errors: Family<Sharded<ResourceLabel>, Counter>,
    watch_events: Family<Sharded<ResourceLabel>, Counter>,
    sync_duration: Hist<Sharded<SyncLabel>>,
    deletion_age_ratio: Histogram,
    ttl_deletion_duration: Histogram,
    cronjob_creation_skew: Histogram,
    stale_skips: Family<Sharded<GroupResourceLabel>, Counter>,
    job_stale_skips: Family<Sharded<GroupResourceLabel>, Counter>,
    sync_panics: Family<Sharded<ControllerLabel>, Counter>,
    /// `leader_election_master_status{name}`: 1 while this instance leads.
    pub leader: Family<NameLabel, Gauge>,
    /// `leader_election_slowpath_total{name}`: renewals that had to read the Lease first.
    pub leader_slowpath: Family<NameLabel, Counter>,
    /// `kcm_rs_shadow_divergences_total{controller}`.
    pub shadow_divergences: Family<ControllerLabel, Counter>,
    /// Sharded: `kcm_rs_shards_held`, `kcm_rs_shards_free_observed` and `kcm_rs_shard_layout_mixed`.
    pub shards: ShardGauges,
    /// The shard whose queues, informers and syncs this handle labels (`for_shard`).
    shard: Option<String>,
    /// Invariant: `Some` exactly when `shard` is; the series made under that label.
    series: Option<Arc<ShardSeries>>,
}

/// What a sharded replica says of its shards, set once per manager round.
#[derive(Clone, Default, Debug)]
pub struct ShardGauges {
    pub held: Gauge,
    pub free: Gauge,
    pub mixed: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let m = Metrics {
            registry: Arc::new(Mutex::new(Registry::default())),
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(queue_buckets),
            work_duration: Family::new_with_constructor(queue_buckets),
            unfinished: Family::default(),
            longest: Family::default(),
            retries: Family::default(),
            lists: Family::default(),
            list_errors: Family::default(),
            watches: Family::default(),
            watch_errors: Family::default(),
            watch_events: Family::default(),
            sync_duration: Family::new_with_constructor(sync_buckets),
            // Upstream's buckets for replicaset_controller_sorting_deletion_age_ratio.
            deletion_age_ratio: Histogram::new([0.25, 0.5, 1.0, 2.0, 4.0, 8.0]),
            // Upstream's buckets for ttl_after_finished_controller_job_deletion_duration_seconds:
            // 14 doubling from 100 ms.
            ttl_deletion_duration: Histogram::new(exponential_buckets(0.1, 2.0, 14)),
            // Upstream's buckets for cronjob_controller_job_creation_skew_duration_seconds: 10
            // doubling from 1 s.
            cronjob_creation_skew: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
            stale_skips: Family::default(),
            job_stale_skips: Family::default(),
            sync_panics: Family::default(),
            leader: Family::default(),
            leader_slowpath: Family::default(),
            shadow_divergences: Family::default(),
            shards: ShardGauges::default(),
            shard: None,
            series: None,
        };
        let mut r = m.registry.lock();
        r.register_collector(Box::new(crate::process_metrics::ProcessCollector));
        r.register(
            "workqueue_depth",
            "[BETA] Current depth of workqueue",
            m.depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "[BETA] Total number of adds handled by workqueue",
            m.adds.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "[BETA] How long in seconds an item stays in workqueue before being requested.",
            m.queue_duration.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "[BETA] How long in seconds processing an item from workqueue takes.",
            m.work_duration.clone(),
        );
        r.register(
            "workqueue_unfinished_work_seconds",
            "[BETA] How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
            m.unfinished.clone(),
        );
        r.register(
            "workqueue_longest_running_processor_seconds",
            "[BETA] How many seconds has the longest running processor for workqueue been running.",
            m.longest.clone(),
        );
        r.register(
            "workqueue_retries",
            "[BETA] Total number of retries handled by workqueue",
            m.retries.clone(),
        );
        r.register(
            "kcm_rs_reflector_lists",
            "Full lists (LIST or streaming list) taken by reflectors",
            m.lists.clone(),
        );
        r.register(
            "kcm_rs_reflector_list_errors",
            "Failed lists",
            m.list_errors.clone(),
        );
        r.register(
            "kcm_rs_reflector_watches",
            "Watches started by reflectors",
            m.watches.clone(),
        );
        r.register(
            "kcm_rs_reflector_watch_errors",
            "Failed or refused watches",
            m.watch_errors.clone(),
        );
        r.register(
            "kcm_rs_reflector_watch_events",
            "Events received on watches",
            m.watch_events.clone(),
        );
        r.register(
            "kcm_rs_controller_sync_duration_seconds",
            "How long one sync of an object took, by controller and result",
            m.sync_duration.clone(),
        );
        r.register(
            "replicaset_controller_sorting_deletion_age_ratio",
            "[ALPHA] The ratio of chosen deleted pod's ages to the current youngest pod's age (at the time). Should be <2. The intent of this metric is to measure the rough efficacy of the LogarithmicScaleDown feature gate's effect on the sorting (and deletion) of pods when a replicaset scales down. This only considers Ready pods when calculating and reporting.",
            m.deletion_age_ratio.clone(),
        );
        r.register(
            "ttl_after_finished_controller_job_deletion_duration_seconds",
            "[ALPHA] The time it took to delete the job since it became eligible for deletion",
            m.ttl_deletion_duration.clone(),
        );
        r.register(
            "cronjob_controller_job_creation_skew_duration_seconds",
            "[STABLE] Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
            m.cronjob_creation_skew.clone(),
        );
        r.register(
            "replicaset_controller_stale_sync_skips",
            "[ALPHA] Total number of ReplicaSet syncs skipped due to a stale watch cache.",
            m.stale_skips.clone(),
        );
        r.register(
            "job_controller_stale_sync_skips",
            "[ALPHA] Total number of Job syncs skipped due to a stale watch cache.",
            m.job_stale_skips.clone(),
        );
        r.register(
            "kcm_rs_controller_sync_panics",
            "Panics of a controller: in a sync, caught and the object retried with backoff; or outside its syncs, which stopped the controller",
            m.sync_panics.clone(),
        );
        r.register(
            "leader_election_master_status",
            "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            m.leader.clone(),
        );
        r.register(
            "leader_election_slowpath",
            "[ALPHA] Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
            m.leader_slowpath.clone(),
        );
        r.register(
            "kcm_rs_shadow_divergences",
            "Objects on which shadow mode disagreed with upstream, by controller",
            m.shadow_divergences.clone(),
        );
        r.register(
            "kcm_rs_shards_held",
            "Shards this replica holds",
            m.shards.held.clone(),
        );
        r.register(
            "kcm_rs_shards_free_observed",
            "Shards of this replica's layout that no replica holds, by this replica's clock",
            m.shards.free.clone(),
        );
        r.register(
            "kcm_rs_shard_layout_mixed",
            "1 while a live replica runs with another --shards",
            m.shards.mixed.clone(),
        );
        drop(r);
        m
    }

    /// The pod garbage collector's metrics, registered beside the others.
    pub fn podgc_metrics(&self) -> Arc<crate::podgc_metrics::PromPodGcMetrics> {
        crate::podgc_metrics::PromPodGcMetrics::register(&mut self.registry.lock())
    }

    /// The Job controller's metrics, registered beside the others.
    pub fn job_metrics(&self) -> Arc<crate::job_metrics::PromJobMetrics> {
        crate::job_metrics::PromJobMetrics::register(&mut self.registry.lock())
    }

    /// Adds the clients' `rest_client_*` families to the page.
    pub fn register_rest_client(&self, rest: &crate::rest_metrics::RestClientMetrics) {
        rest.register(&mut self.registry.lock());
    }

    /// The Prometheus text exposition, as KCM writes it (`crate::prom_text`).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry.lock()).expect("writing to a String cannot fail");
        crate::prom_text::prometheus_text(&out)
    }
}

impl Metrics {
    /// The same metrics, with the queues, reflectors and syncs made from here labelled with `shard`
    /// and their series recorded for [`Metrics::remove_shard_series`].
    #[must_use]
    pub fn for_shard(&self, shard: String) -> Metrics {
        Metrics {
            shard: Some(shard),
            series: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// Removes the series this shard handle's queues, reflectors and syncs made, once they stopped;
    /// the sinks made from it update nothing after that.
    pub fn remove_shard_series(&self) {
        if let Some(series) = &self.series {
            series.remove();
        }
    }

    /// Whether this is a shard's handle whose series were removed.
    fn shard_gone(&self) -> bool {
        self.series.as_ref().is_some_and(|s| s.removed())
    }

    /// `labels` with this handle's shard, if any.
    fn sharded<L>(&self, labels: L) -> Sharded<L> {
        Sharded {
            labels,
            shard: self.shard.clone(),
        }
    }
}

#[path = "metric_sinks.rs"]
mod sinks;

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
