//! A CronJob sync's own gate over caches filled by hand (no informer runs, so the caches' applied
//! version stays 0): a CronJob cache older than this controller's status write skips the sync, so
//! that a slot's Job is not started twice.

use controller::Reconciler as _;
use informer::{NoopMetrics, SharedInformerFactory, Store};
use k8s_openapi::api::batch::v1::Job;
use serde_json::json;
use testing::{ApiServer, FakeClock};

use super::*;

const NS: &str = "ns";
const KEY: &str = "ns/hourly";

fn now() -> jiff::Timestamp {
    "2016-05-19T10:00:02Z".parse().unwrap()
}

/// An hourly CronJob last scheduled at 09:00, whose 10:00 slot is due.
fn cron_job() -> CronJob {
    serde_json::from_value(json!({
        "metadata": {"name": "hourly", "namespace": NS, "uid": "c1", "resourceVersion": "5",
                     "creationTimestamp": "2016-05-19T08:59:00Z"},
        "spec": {"schedule": "0 * * * *",
                 "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}},
        "status": {"lastScheduleTime": "2016-05-19T09:00:00Z"},
    }))
    .unwrap()
}

fn put<K: kube::Resource<DynamicType = ()> + Clone>(store: &Store<K>, obj: K) {
    store.upsert(ObjectKey::of(&obj), Arc::new(obj));
}

/// A controller on a server holding the CronJob, its cache holding it too.
fn controller(server: &ApiServer) -> CronJobController {
    let cj = cron_job();
    server.insert(&cj);
    let factory = SharedInformerFactory::new(server.client());
    let cx = Context::new(&factory, server.client(), &NoopMetrics, COMPONENT);
    let options = CronJobOptions {
        local: TimeZone::UTC,
        clock: Arc::new(FakeClock::at(now())),
        ..CronJobOptions::default()
    };
    let c = CronJobController::build(cx, options);
    put(c.cron_jobs.store(), cj);
    c
}

/// The server, the controller and the key once the 10:00 slot's sync has created its Job and
/// written the status that lists it (the cache still holding the CronJob from before).
async fn after_the_slot() -> (ApiServer, CronJobController, ObjectKey) {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(now())));
    let c = controller(&server);
    let key = ObjectKey::parse(KEY);
    c.sync(&key).await.expect("the slot's sync");
    (server, c, key)
}

/// After the write that lists the slot's Job, the cache still shows the CronJob before it and the
/// Job is gone (deleted by someone else): a sync on that cache would start the slot again.
#[tokio::test]
async fn a_cache_older_than_our_status_write_skips_the_sync() {
    let (server, c, key) = after_the_slot().await;
    assert_eq!(server.list::<Job>().len(), 1);
    let written: CronJob = server.get(NS, "hourly").unwrap();
    assert_eq!(written.status.unwrap().active.unwrap().len(), 1);
    let job: Job = server.list::<Job>().remove(0);
    server.remove::<Job>(NS, job.metadata.name.as_deref().unwrap());

    let skipped = c.sync(&key).await.expect("a stale cache is not an error");
    assert_eq!(skipped, Some(STALE_RECHECK));
    assert!(server.list::<Job>().is_empty(), "the slot is not started again");
}

/// Forgetting a CronJob, which the skeleton does once its cache shows it gone, drops its written
/// version: the next sync of the key is not held back by it.
#[tokio::test]
async fn a_forgotten_cron_job_is_synced_at_once() {
    let (server, c, key) = after_the_slot().await;
    Steps::forget(&c, &key);
    put(c.cron_jobs.store(), server.get(NS, "hourly").unwrap());
    let next = c.sync(&key).await.expect("a sync");
    assert_ne!(next, Some(STALE_RECHECK), "not held back by the forgotten write");
}

/// Upstream's CronJob worker forgets a key's failures only when it asks for the key again: checked
/// when the tests compile.
const _: () = assert!(
    !<CronJobController as controller::Reconciler>::FORGETS_WHEN_DONE
        && <CronJobController as controller::Reconciler>::FORGETS_WHEN_REQUEUED
);
