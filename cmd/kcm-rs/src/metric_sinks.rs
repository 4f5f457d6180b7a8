//! The sinks the informer and controller crates report to (`MetricsProvider`, `ControllerMetrics`),
//! writing into [`Metrics`]' families under upstream's names. On a shard's handle each sink records
//! the label sets it makes, so that they are removed with the shard, and updates nothing after that.

use std::{sync::Arc, time::Duration};

use controller::{ControllerMetrics, SyncMetrics};
use informer::{MetricsProvider, QueueMetrics, ReflectorMetrics};

use super::Metrics;
use crate::metric_labels::{
    ControllerLabel, GroupResourceLabel, NameLabel, QueueLabel, ResourceLabel, Sharded, SyncLabel,
};

struct Queue {
    m: Metrics,
    label: QueueLabel,
}

impl QueueMetrics for Queue {
    fn add(&self, depth: usize) {
        if self.m.shard_gone() {
            return;
        }
        self.m.adds.get_or_create(&self.label).inc();
        self.m
            .depth
            .get_or_create(&self.label)
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }
    fn get(&self, depth: usize, queued_for: Duration) {
        if self.m.shard_gone() {
            return;
        }
        self.m
            .depth
            .get_or_create(&self.label)
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
        self.m
            .queue_duration
            .get_or_create(&self.label)
            .observe(queued_for.as_secs_f64());
    }
    fn done(&self, worked_for: Duration) {
        if self.m.shard_gone() {
            return;
        }
        self.m
            .work_duration
            .get_or_create(&self.label)
            .observe(worked_for.as_secs_f64());
    }
    fn retry(&self) {
        if self.m.shard_gone() {
            return;
        }
        self.m.retries.get_or_create(&self.label).inc();
    }
    fn unfinished_work(&self, total_seconds: f64, longest_seconds: f64) {
        if self.m.shard_gone() {
            return;
        }
        self.m.unfinished.get_or_create(&self.label).set(total_seconds);
        self.m.longest.get_or_create(&self.label).set(longest_seconds);
    }
}

struct Reflector {
    m: Metrics,
    label: Sharded<ResourceLabel>,
}

impl ReflectorMetrics for Reflector {
    fn list(&self, _items: usize) {
        if self.m.shard_gone() {
            return;
        }
        self.m.lists.get_or_create(&self.label).inc();
    }
    fn list_error(&self) {
        if self.m.shard_gone() {
            return;
        }
        self.m.list_errors.get_or_create(&self.label).inc();
    }
    fn watch(&self) {
        if self.m.shard_gone() {
            return;
        }
        self.m.watches.get_or_create(&self.label).inc();
    }
    fn watch_error(&self) {
        if self.m.shard_gone() {
            return;
        }
        self.m.watch_errors.get_or_create(&self.label).inc();
    }
    fn watch_events(&self, events: usize) {
        if self.m.shard_gone() {
            return;
        }
        self.m
            .watch_events
            .get_or_create(&self.label)
            .inc_by(u64::try_from(events).unwrap_or(u64::MAX));
    }
}

struct Sync {
    m: Metrics,
    controller: String,
}

impl SyncMetrics for Sync {
    fn sync(&self, elapsed: Duration, ok: bool) {
        if self.m.shard_gone() {
            return;
        }
        let label = self.m.sharded(SyncLabel {
            controller: self.controller.clone(),
            result: if ok { "success" } else { "error" }.into(),
        });
        self.m
            .sync_duration
            .get_or_create(&label)
            .observe(elapsed.as_secs_f64());
    }
    /// Upstream exports the skips per controller, under each controller's subsystem.
    fn stale_sync_skip(&self, group: &str, resource: &str) {
        if self.m.shard_gone() {
            return;
        }
        let family = match self.controller.as_str() {
            replicaset::QUEUE_NAME => &self.m.stale_skips,
            job::QUEUE_NAME => &self.m.job_stale_skips,
            _ => return,
        };
        let label = self.m.sharded(GroupResourceLabel {
            group: group.into(),
            resource: resource.into(),
        });
        family.get_or_create(&label).inc();
        if let Some(series) = &self.m.series {
            series.track_once(format!("{}/{group}/{resource}", self.controller), family, &label);
        }
    }
    fn panic(&self) {
        if self.m.shard_gone() {
            return;
        }
        let label = self.m.sharded(ControllerLabel {
            controller: self.controller.clone(),
        });
        self.m.sync_panics.get_or_create(&label).inc();
    }
}

impl MetricsProvider for Metrics {
    /// Every series of the queue exists from the moment the queue does, at 0, as client-go's
    /// workqueue metrics provider creates them: dashboards built for KCM show 0, not "no data".
    fn queue_metrics(&self, name: &str) -> Arc<dyn QueueMetrics> {
        let label: QueueLabel = self.sharded(NameLabel { name: name.into() });
        drop(self.depth.get_or_create(&label));
        drop(self.adds.get_or_create(&label));
        drop(self.queue_duration.get_or_create(&label));
        drop(self.work_duration.get_or_create(&label));
        drop(self.unfinished.get_or_create(&label));
        drop(self.longest.get_or_create(&label));
        drop(self.retries.get_or_create(&label));
        if let Some(series) = &self.series {
            series.track(&self.depth, &label);
            series.track(&self.adds, &label);
            series.track(&self.queue_duration, &label);
            series.track(&self.work_duration, &label);
            series.track(&self.unfinished, &label);
            series.track(&self.longest, &label);
            series.track(&self.retries, &label);
        }
        Arc::new(Queue {
            m: self.clone(),
            label,
        })
    }
    fn reflector_metrics(&self, resource: &str) -> Arc<dyn ReflectorMetrics> {
        let label = self.sharded(ResourceLabel {
            resource: resource.into(),
        });
        if let Some(series) = &self.series {
            for family in [
                &self.lists,
                &self.list_errors,
                &self.watches,
                &self.watch_errors,
                &self.watch_events,
            ] {
                series.track(family, &label);
            }
        }
        Arc::new(Reflector {
            m: self.clone(),
            label,
        })
    }
}

impl ControllerMetrics for Metrics {
    fn sync_metrics(&self, controller: &str) -> Arc<dyn SyncMetrics> {
        if let Some(series) = &self.series {
            for result in ["success", "error"] {
                let label = self.sharded(SyncLabel {
                    controller: controller.into(),
                    result: result.into(),
                });
                series.track(&self.sync_duration, &label);
            }
            let label = self.sharded(ControllerLabel {
                controller: controller.into(),
            });
            series.track(&self.sync_panics, &label);
        }
        Arc::new(Sync {
            m: self.clone(),
            controller: controller.into(),
        })
    }
}

impl replicaset::ReplicaSetMetrics for Metrics {
    fn sorting_deletion_age_ratio(&self, ratio: f64) {
        self.deletion_age_ratio.observe(ratio);
    }
}

impl cronjob::CronJobMetrics for Metrics {
    fn job_creation_skew(&self, seconds: f64) {
        self.cronjob_creation_skew.observe(seconds);
    }
}

impl ttlafterfinished::TtlMetrics for Metrics {
    fn job_deletion_duration(&self, seconds: f64) {
        self.ttl_deletion_duration.observe(seconds);
    }
}
