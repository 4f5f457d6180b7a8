//! Whole syncs against an in-memory API server ([`testing::ApiServer`]), after upstream's
//! `TestControllerV2SyncCronJob` rows that reach the API (create, AlreadyExists, Replace, a slow
//! cache of either kind, a namespace being deleted) and `TestControllerV2CleanupFinishedJobs`.

use std::sync::Arc;

use controller::{EventRecorder, events::EventRecord};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use parking_lot::Mutex;
use serde_json::{Value, json};
use testing::{ApiServer, FakeClock, Verb};

use super::*;
use crate::{NEXT_SCHEDULE_DELTA, SCHEDULED_TIMESTAMP_ANNOTATION, metrics::CronJobMetrics};

const NS: &str = "snazzycats";

fn top() -> Timestamp {
    "2016-05-19T10:00:00Z".parse().unwrap()
}

fn at(minutes: i64) -> Timestamp {
    top() + SignedDuration::from_mins(minutes)
}

/// `mycronjob`, hourly, created 08:59 and last scheduled 09:00, with `active` and `policy`.
fn cron_job(policy: &str, active: &[(&str, &str)]) -> CronJob {
    let active: Vec<_> = active
        .iter()
        .map(|(name, uid)| json!({"kind": "Job", "apiVersion": "batch/v1", "namespace": NS, "name": name, "uid": uid}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": "mycronjob", "namespace": NS, "uid": "1a2b3c", "resourceVersion": "5",
                     "creationTimestamp": at(-61).to_string()},
        "spec": {"schedule": "0 * * * ?", "concurrencyPolicy": policy,
                 "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1,
                 "jobTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": {"spec": {"containers": []}}}}},
        "status": {"lastScheduleTime": at(-60).to_string(), "active": active},
    }))
    .unwrap()
}

/// A Job `mycronjob` controls, running or finished (`condition`), started `started` minutes from 10:00.
fn job(name: &str, uid: &str, started: i64, condition: Option<&str>) -> Job {
    let conditions: Vec<Value> = condition
        .map(|c| json!({"type": c, "status": "True"}))
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": NS, "uid": uid, "resourceVersion": "3",
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "mycronjob",
                                          "uid": "1a2b3c", "controller": true}]},
        "spec": {"template": {}},
        "status": {"startTime": at(started).to_string(), "conditions": conditions,
                   "completionTime": condition.map(|_| at(started + 1).to_string())},
    }))
    .unwrap()
}

#[derive(Default)]
struct Skews(Mutex<Vec<f64>>);

impl CronJobMetrics for Arc<Skews> {
    fn job_creation_skew(&self, seconds: f64) {
        self.0.lock().push(seconds);
    }
}

struct Fixture {
    server: ApiServer,
    executor: Executor,
    skews: Arc<Skews>,
}

/// A server holding `cron_job` and `jobs`, its clock at `now`.
fn fixture(cron_job: &CronJob, jobs: &[Job], now: Timestamp) -> Fixture {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(now)));
    server.insert(cron_job);
    for j in jobs {
        server.insert(j);
    }
    let skews = Arc::new(Skews::default());
    let executor = Executor {
        client: server.client(),
        recorder: EventRecorder::in_memory(),
        metrics: Arc::new(skews.clone()),
        consistency: controller::ConsistencyStore::new(),
    };
    Fixture {
        server,
        executor,
        skews,
    }
}

impl Fixture {
    /// One sync of `cached` at `now`, the cache holding `cached_jobs`.
    async fn sync(
        &self,
        cached: &CronJob,
        cached_jobs: &[Job],
        now: Timestamp,
    ) -> Result<Option<Duration>, SyncError> {
        let jobs: Vec<Arc<Job>> = cached_jobs.iter().cloned().map(Arc::new).collect();
        let key = ObjectKey::new(Some(NS), "mycronjob");
        let run = Run {
            executor: &self.executor,
            key: &key,
            jobs: &jobs,
            now,
            local: &TimeZone::UTC,
        };
        run.sync(cached).await
    }

    fn reasons(&self) -> Vec<String> {
        self.executor
            .recorder
            .recorded()
            .iter()
            .map(|e: &EventRecord| e.reason.to_string())
            .collect()
    }

    fn stored(&self) -> CronJob {
        self.server.get(NS, "mycronjob").unwrap()
    }

    fn active(&self) -> Vec<String> {
        let status = self.stored().status.unwrap_or_default();
        status
            .active
            .into_iter()
            .flatten()
            .filter_map(|r| r.name)
            .collect()
    }

    fn status_writes(&self) -> usize {
        self.server.writes("cronjobs").len()
    }
}

fn hour() -> Duration {
    positive(SignedDuration::from_mins(60) + NEXT_SCHEDULE_DELTA)
}

/// The Job name for 10:00: minutes since 1970.
const TEN: &str = "mycronjob-24394200";

#[tokio::test]
async fn at_its_slot_a_job_is_created_listed_and_timed() {
    let cj = cron_job("Allow", &[]);
    let f = fixture(&cj, &[], at(0) + SignedDuration::from_secs(2));
    let requeue = f
        .sync(&cj, &[], at(0) + SignedDuration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(requeue, Some(hour() - Duration::from_secs(2)));
    let created: Job = f.server.get(NS, TEN).expect("the slot's job");
    let annotations = created.metadata.annotations.unwrap();
    assert_eq!(
        annotations[SCHEDULED_TIMESTAMP_ANNOTATION],
        "2016-05-19T10:00:00Z"
    );
    let owner = &created.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("CronJob", "1a2b3c", Some(true))
    );
    assert_eq!(f.active(), [TEN]);
    assert_eq!(f.stored().status.unwrap().last_schedule_time.unwrap().0, at(0));
    assert_eq!(f.reasons(), ["SuccessfulCreate"]);
    assert_eq!(*f.skews.0.lock(), [2.0]);
}

#[tokio::test]
async fn replace_deletes_the_running_job_in_the_background_first() {
    let running = job("mycronjob-old", "old", -60, None);
    let cj = cron_job("Replace", &[("mycronjob-old", "old")]);
    let f = fixture(&cj, std::slice::from_ref(&running), at(1));
    f.sync(&cj, &[running], at(1)).await.unwrap();
    let delete = f
        .server
        .requests()
        .into_iter()
        .find(|r| r.verb == Some(Verb::Delete))
        .expect("a delete");
    assert_eq!(delete.body["propagationPolicy"], "Background");
    assert_eq!(f.active(), [TEN]);
    assert_eq!(f.reasons(), ["SuccessfulDelete", "SuccessfulCreate"]);
}

#[tokio::test]
async fn replace_stops_at_a_job_it_cannot_read() {
    let running = job("mycronjob-old", "old", -60, None);
    let cj = cron_job("Replace", &[("mycronjob-old", "old")]);
    let f = fixture(&cj, std::slice::from_ref(&running), at(1));
    f.server.on(Verb::Get, "jobs").fail(400, "BadRequest", "no");
    let err = f.sync(&cj, &[running], at(1)).await.unwrap_err();
    assert!(err.to_string().contains("snazzycats/mycronjob"), "{err}");
    assert_eq!(f.reasons(), ["FailedGet"]);
    assert!(f.server.get::<Job>(NS, TEN).is_none());
}

#[tokio::test]
async fn an_existing_job_of_ours_is_listed_and_anyone_elses_left_alone() {
    let cj = cron_job("Forbid", &[]);
    let mut ours = job(TEN, "ten", 0, None);
    let f = fixture(&cj, std::slice::from_ref(&ours), at(1));
    f.sync(&cj, &[], at(1)).await.unwrap();
    assert_eq!(f.active(), [TEN]);
    assert_eq!(
        f.reasons(),
        Vec::<String>::new(),
        "no SuccessfulCreate for a Job found"
    );
    assert!(f.skews.0.lock().is_empty());

    ours.metadata.owner_references = None;
    let f = fixture(&cj, &[ours], at(1));
    assert_eq!(f.sync(&cj, &[], at(1)).await.unwrap(), None);
    assert_eq!(f.status_writes(), 0, "someone else's Job: no status write");
}

#[tokio::test]
async fn a_terminating_namespace_is_an_error_without_an_event() {
    let cj = cron_job("Allow", &[]);
    let f = fixture(&cj, &[], at(1));
    f.server.insert(
        &serde_json::from_value::<k8s_openapi::api::core::v1::Namespace>(json!({
            "metadata": {"name": NS, "deletionTimestamp": at(0).to_string()}
        }))
        .unwrap(),
    );
    assert!(f.sync(&cj, &[], at(1)).await.is_err());
    assert_eq!(f.reasons(), Vec::<String>::new());
    assert_eq!(f.status_writes(), 0);
}

/// Upstream's `TestControllerV2CleanupFinishedJobs`: the older finished Job goes even though the
/// create then fails, and the status is written for it.
#[tokio::test]
async fn history_is_cleaned_up_even_when_the_create_fails() {
    let old = job("mycronjob-1", "j1", -120, Some("Complete"));
    let newer = job("mycronjob-2", "j2", -60, Some("Complete"));
    let cj = cron_job("Allow", &[]);
    let f = fixture(&cj, &[old.clone(), newer.clone()], at(1));
    f.server
        .on(Verb::Create, "jobs")
        .fail(403, "Forbidden", "exceeded quota");
    assert!(f.sync(&cj, &[old, newer], at(1)).await.is_err());
    assert!(f.server.get::<Job>(NS, "mycronjob-1").is_none());
    assert!(f.server.get::<Job>(NS, "mycronjob-2").is_some());
    assert_eq!(f.reasons(), ["SuccessfulDelete", "FailedCreate"]);
    let failed = &f.executor.recorder.recorded()[1];
    assert_eq!(failed.message, "Error creating job: exceeded quota");
    assert_eq!(f.status_writes(), 1);
}

#[tokio::test]
async fn an_active_job_the_cache_lacks_is_read_before_it_is_called_missing() {
    let cj = cron_job("Forbid", &[(TEN, "ten")]);
    let running = job(TEN, "ten", 0, None);
    let f = fixture(&cj, std::slice::from_ref(&running), at(1));
    let requeue = f.sync(&cj, &[], at(1)).await.unwrap();
    assert_eq!(requeue, Some(hour() - Duration::from_secs(60)));
    assert_eq!((f.reasons(), f.status_writes()), (Vec::<String>::new(), 0));

    // Gone from the server too: off the list, and the slot is started again.
    f.server.remove::<Job>(NS, TEN);
    f.sync(&cj, &[], at(1)).await.unwrap();
    assert_eq!(f.reasons(), ["MissingJob", "SuccessfulCreate"]);
    assert_eq!(f.active(), [TEN]);
}

/// Upstream's `syncCronJob` returns at a read that fails with the status it changed so far, and
/// `sync` writes that: here the finished Job's removal from the list, with its event.
#[tokio::test]
async fn a_failed_read_keeps_what_the_review_settled_before_it() {
    let done = job("mycronjob-1", "j1", -60, Some("Complete"));
    let cj = cron_job("Allow", &[("mycronjob-1", "j1"), (TEN, "ten")]);
    let f = fixture(&cj, std::slice::from_ref(&done), at(1));
    f.server
        .on(Verb::Get, "jobs")
        .fail(500, "InternalError", "etcd is slow");
    assert!(f.sync(&cj, std::slice::from_ref(&done), at(1)).await.is_err());
    assert_eq!(f.reasons(), ["SawCompletedJob"]);
    assert_eq!(
        f.active(),
        [TEN],
        "the finished Job is off the list, the unread one stays"
    );
    assert_eq!(f.status_writes(), 1);
    assert!(
        f.server.get::<Job>(NS, TEN).is_none(),
        "no slot started on a half review"
    );
}

#[tokio::test]
async fn an_unlisted_job_is_settled_by_the_fresh_cron_job() {
    let running = job(TEN, "ten", 0, None);
    let cached = cron_job("Forbid", &[]);
    let fresh = cron_job("Forbid", &[(TEN, "ten")]);
    let f = fixture(&fresh, std::slice::from_ref(&running), at(1));
    f.sync(&cached, std::slice::from_ref(&running), at(1))
        .await
        .unwrap();
    assert!(
        !f.reasons().contains(&"UnexpectedJob".to_owned()),
        "{:?}",
        f.reasons()
    );
    assert!(f.server.get::<Job>(NS, TEN).is_some());

    let stranger = job("mycronjob-x", "x", 0, None);
    let f = fixture(&cached, std::slice::from_ref(&stranger), at(1));
    f.sync(&cached, &[stranger], at(1)).await.unwrap();
    assert_eq!(f.reasons()[0], "UnexpectedJob");
}
