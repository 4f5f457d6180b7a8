//! Upstream's `TestControllerV2UpdateCronJob`: when a changed CronJob is synced next.

use std::time::Duration;

use controller::EventRecorder;
use informer::{Store, WorkQueue};
use jiff::Timestamp;
use serde_json::json;
use testing::{ApiServer, FakeClock};

use super::*;
use crate::metrics::NoCronJobMetrics;

fn cron_job(schedule: &str, time_zone: Option<&str>, parallelism: i32) -> Arc<CronJob> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "mycronjob", "namespace": "snazzycats", "uid": "1a2b3c",
                         "creationTimestamp": "2016-05-19T09:00:00Z"},
            "spec": {"schedule": schedule, "timeZone": time_zone,
                     "jobTemplate": {"spec": {"parallelism": parallelism, "template": {}}}},
            "status": {"lastScheduleTime": "2016-05-19T09:59:00Z"},
        }))
        .unwrap(),
    )
}

fn handler() -> (CronJobHandler, WorkQueue<ObjectKey>, EventRecorder) {
    let now: Timestamp = "2016-05-19T09:59:59Z".parse().unwrap();
    let queue = WorkQueue::new();
    let recorder = EventRecorder::in_memory();
    let executor = Arc::new(Executor {
        client: ApiServer::new().client(),
        recorder: recorder.clone(),
        metrics: Arc::new(NoCronJobMetrics),
        consistency: controller::ConsistencyStore::new(),
    });
    let handler = CronJobHandler {
        queue: queue.clone(),
        clock: Arc::new(FakeClock::at(now)),
        local: TimeZone::UTC,
        executor,
    };
    (handler, queue, recorder)
}

/// Where `old` → `new` puts the key: at once (`Some(ZERO)`), after a delay, or nowhere.
async fn queued_after(old: Arc<CronJob>, new: Arc<CronJob>) -> (Option<Duration>, Vec<String>) {
    let (handler, queue, recorder) = handler();
    let start = tokio::time::Instant::now();
    handler.on_update(&old, &new);
    let got = tokio::time::timeout(Duration::from_secs(3600), queue.get()).await;
    let reasons = recorder.recorded().iter().map(|e| e.reason.to_string()).collect();
    // The paused clock's timer wheel fires within a millisecond of the deadline: to 10 ms.
    let waited = u64::try_from((start.elapsed().as_millis() + 5) / 10 * 10).unwrap();
    (got.ok().flatten().map(|_| Duration::from_millis(waited)), reasons)
}

fn delta() -> Duration {
    Duration::from_millis(100)
}

#[tokio::test(start_paused = true)]
async fn a_template_change_syncs_at_once() {
    let got = queued_after(cron_job("30 * * * *", None, 1), cron_job("30 * * * *", None, 2)).await;
    assert_eq!(got, (Some(Duration::ZERO), vec![]));
}

#[tokio::test(start_paused = true)]
async fn a_schedule_change_syncs_at_the_new_schedules_next_slot() {
    let got = queued_after(cron_job("30 * * * *", None, 1), cron_job("*/1 * * * *", None, 1)).await;
    assert_eq!(got.0, Some(Duration::from_secs(1) + delta()));
    let got = queued_after(cron_job("@every 1m", None, 1), cron_job("@every 3m", None, 1)).await;
    assert_eq!(got.0, Some(Duration::from_secs(121) + delta()));
    let got = queued_after(cron_job("@every 3m", None, 1), cron_job("@every 1m", None, 1)).await;
    assert_eq!(got.0, Some(Duration::from_secs(1) + delta()));
}

#[tokio::test(start_paused = true)]
async fn an_unparseable_new_schedule_warns_and_queues_nothing() {
    let old = cron_job("30 * * * *", Some("America/New_York"), 1);
    let got = queued_after(old.clone(), cron_job("", Some("America/Chicago"), 1)).await;
    assert_eq!(got, (None, vec![REASON_UNPARSEABLE_CRON_JOB_SCHEDULE.to_owned()]));
    let same_zone = queued_after(old.clone(), cron_job("30 * * * *", Some("America/New_York"), 2)).await;
    assert_eq!(same_zone.0, Some(Duration::ZERO));
}

#[tokio::test]
async fn a_job_wakes_its_controller_only_on_a_new_version() {
    let store: Store<CronJob> = Store::new();
    let cj = cron_job("30 * * * *", None, 1);
    store.upsert(ObjectKey::of(&*cj), cj);
    let queue = WorkQueue::new();
    let handler = JobHandler {
        cron_jobs: Lister::new(store),
        queue: queue.clone(),
    };
    let job = |rv: &str, owner_uid: &str| -> Arc<Job> {
        Arc::new(
            serde_json::from_value(
                json!({"metadata": {"name": "j", "namespace": "snazzycats", "resourceVersion": rv,
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "mycronjob",
                                     "uid": owner_uid, "controller": true}]}}),
            )
            .unwrap(),
        )
    };
    handler.on_update(&job("1", "1a2b3c"), &job("1", "1a2b3c"));
    assert_eq!(queue.len(), 0, "a resync");
    handler.on_update(&job("1", "1a2b3c"), &job("2", "1a2b3c"));
    assert_eq!(queue.len(), 1);
    let stranger = job("3", "another-uid");
    handler.on_add(&stranger, false);
    assert_eq!(
        queue.len(),
        1,
        "a reference to another CronJob of that name wakes nothing"
    );
}
