//! The informer handlers (upstream `addPod`, `updatePod`, `deletePod`, `addJob`, `updateJob`,
//! `deleteJob`): which keys they queue, when, and what they tell the expectations.

use std::collections::BTreeMap;

use informer::{Store, store::namespace_index};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use parking_lot::Mutex;
use testing::{FakeClock, drain};

use super::*;
use crate::{
    conditions::{FAILED, new_condition},
    delays::{JobDelays, SYNC_JOB_BATCH_PERIOD},
    fixtures::{job, pod, ts},
};

const KEY: &str = "ns/foobar";
const NOW: i64 = 100;

#[derive(Debug, Default)]
struct Recorded(Mutex<Vec<String>>);

impl JobMetrics for Recorded {
    fn job_by_external_controller(&self, name: &str) {
        self.0.lock().push(format!("external {name}"));
    }
    fn terminated_pod_tracking_finalizer(&self, event: &str) {
        self.0.lock().push(format!("finalizer {event}"));
    }
}

fn lister<K: kube::Resource<DynamicType = ()> + Clone>(objs: Vec<K>) -> Lister<K> {
    let store = Store::new();
    store.add_index(informer::store::NAMESPACE_INDEX, namespace_index());
    for o in objs {
        store.upsert(ObjectKey::of(&o), Arc::new(o));
    }
    Lister::new(store)
}

fn handlers(jobs: Vec<Job>) -> (Handlers, Arc<Recorded>) {
    let metrics = Arc::new(Recorded::default());
    let h = Handlers {
        jobs: lister(jobs),
        pods: lister(vec![]),
        expectations: Arc::new(Expectations::new()),
        finalizers: Arc::new(FinalizerExpectations::default()),
        queue: WorkQueue::new(),
        orphan_queue: WorkQueue::new(),
        metrics: metrics.clone(),
        clock: Arc::new(FakeClock::at(ts(NOW))),
        backoff: Arc::default(),
        finished: Arc::default(),
        consistency: Arc::default(),
        delays: JobDelays::UPSTREAM,
    };
    (h, metrics)
}

/// Past the 1 s batching period.
async fn after_batch() {
    tokio::time::sleep(SYNC_JOB_BATCH_PERIOD + Duration::from_millis(1)).await;
}

fn bumped(p: &Arc<Pod>) -> Pod {
    let mut p = (**p).clone();
    p.metadata.resource_version = Some("2".into());
    p
}

#[tokio::test(start_paused = true)]
async fn an_owned_pod_add_observes_the_creation_and_syncs_batched() {
    let (h, m) = handlers(vec![job(1, Some(1))]);
    h.expectations.expect_creations(KEY, 1);
    PodHandler(h.clone()).on_add(&pod("p").build(), false);
    assert!(h.expectations.satisfied(KEY));
    assert!(drain(&h.queue).is_empty(), "batched, not immediate");
    after_batch().await;
    assert_eq!(drain(&h.queue), [KEY]);
    let done = pod("d").succeeded().build();
    PodHandler(h.clone()).on_add(&done, false);
    assert_eq!(
        *m.0.lock(),
        ["finalizer add"],
        "a finished pod with the finalizer is counted"
    );
}

/// A test's batch period (`JobDelays`) is the one pod events wait for.
#[tokio::test(start_paused = true)]
async fn pod_events_wait_for_the_configured_batch_period() {
    let (mut h, _) = handlers(vec![job(1, Some(1))]);
    h.delays = JobDelays::new(
        Duration::from_secs(1),
        Duration::from_secs(2),
        Duration::from_millis(100),
    )
    .unwrap();
    PodHandler(h.clone()).on_add(&pod("p").build(), false);
    tokio::time::sleep(Duration::from_millis(99)).await;
    assert!(drain(&h.queue).is_empty(), "still batching");
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(drain(&h.queue), [KEY], "synced after 100 ms, not upstream's 1 s");
}

#[tokio::test(start_paused = true)]
async fn a_pod_seen_already_deleting_is_a_deletion_not_a_creation() {
    let (h, _) = handlers(vec![job(1, Some(1))]);
    h.expectations.expect_creations(KEY, 1);
    PodHandler(h.clone()).on_add(&pod("p").deleting().build(), false);
    assert_eq!(h.expectations.pending(KEY), Some((1, 0)), "no creation observed");
    h.expectations.expect_deletions(KEY, ["ns/p".to_owned()]);
    PodHandler(h.clone()).on_add(&pod("p").deleting().build(), false);
    assert!(h.expectations.satisfied(KEY), "the deletion was");
}

#[tokio::test(start_paused = true)]
async fn an_orphan_with_the_finalizer_goes_to_the_orphan_queue_and_wakes_matching_jobs() {
    let (h, _) = handlers(vec![job(1, Some(1))]);
    PodHandler(h.clone()).on_add(&pod("p").orphan().build(), false);
    assert_eq!(drain(&h.orphan_queue), ["pod ns/p"]);
    after_batch().await;
    assert_eq!(drain(&h.queue), [KEY], "a matching Job may adopt it");
    let mut unlabelled = (*pod("q").orphan().no_finalizer().build()).clone();
    unlabelled.metadata.labels = None;
    PodHandler(h.clone()).on_add(&Arc::new(unlabelled), false);
    after_batch().await;
    assert!(drain(&h.queue).is_empty(), "a pod without labels matches no Job");
    assert!(drain(&h.orphan_queue).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_finalizer_removal_is_observed_on_update_and_resyncs_are_ignored() {
    let (h, _) = handlers(vec![job(1, Some(1))]);
    h.finalizers.expect_removed(KEY, ["uid-p".to_owned()]);
    let old = pod("p").succeeded().build();
    PodHandler(h.clone()).on_update(&old, &old);
    after_batch().await;
    assert!(drain(&h.queue).is_empty(), "same resourceVersion: a resync");
    let mut cur = bumped(&old);
    cur.metadata.finalizers = None;
    PodHandler(h.clone()).on_update(&old, &Arc::new(cur));
    assert!(h.finalizers.expected(KEY).is_empty());
    after_batch().await;
    assert_eq!(drain(&h.queue), [KEY]);
}

#[tokio::test(start_paused = true)]
async fn a_deletion_timestamp_observes_the_deletion_and_the_final_delete_the_finalizer() {
    let (h, _) = handlers(vec![job(1, Some(1))]);
    h.expectations.expect_deletions(KEY, ["ns/p".to_owned()]);
    h.finalizers.expect_removed(KEY, ["uid-p".to_owned()]);
    let old = pod("p").node("n").running().build();
    let dying = Arc::new(bumped(&pod("p").node("n").running().deleting().build()));
    PodHandler(h.clone()).on_update(&old, &dying);
    assert!(h.expectations.satisfied(KEY));
    assert_eq!(h.finalizers.expected(KEY).len(), 1, "it still has the finalizer");
    PodHandler(h.clone()).on_delete(&DeletedObject::Final(dying));
    assert!(h.finalizers.expected(KEY).is_empty());
    assert_eq!(h.expectations.pending(KEY), Some((0, 0)), "not counted twice");
}

#[tokio::test(start_paused = true)]
async fn a_deleted_pod_of_a_gone_or_finished_job_goes_to_the_orphan_queue() {
    let mut done = job(1, Some(1));
    done.status.get_or_insert_default().conditions = Some(vec![new_condition(FAILED, "True", "", "", ts(1))]);
    let (h, _) = handlers(vec![done]);
    PodHandler(h.clone()).on_delete(&DeletedObject::Final(pod("p").build()));
    PodHandler(h.clone()).on_delete(&DeletedObject::Final(pod("q").orphan().build()));
    PodHandler(h.clone()).on_delete(&DeletedObject::Final(pod("r").no_finalizer().build()));
    assert_eq!(drain(&h.orphan_queue), ["pod ns/p", "pod ns/q"]);
    after_batch().await;
    assert!(drain(&h.queue).is_empty(), "no sync of a finished Job");
}

#[tokio::test(start_paused = true)]
async fn a_released_pod_wakes_its_old_owner_and_observes_the_finalizer_removal() {
    let (h, _) = handlers(vec![job(1, Some(1))]);
    h.finalizers.expect_removed(KEY, ["uid-p".to_owned()]);
    let old = pod("p").build();
    let released = Arc::new(bumped(&pod("p").orphan().no_finalizer().build()));
    PodHandler(h.clone()).on_update(&old, &released);
    assert!(h.finalizers.expected(KEY).is_empty());
    after_batch().await;
    assert_eq!(drain(&h.queue), [KEY]);
}

#[tokio::test(start_paused = true)]
async fn a_job_managed_elsewhere_is_counted_on_add() {
    let mut j = job(1, Some(1));
    j.spec.as_mut().unwrap().managed_by = Some("example.com/queue".into());
    let (h, m) = handlers(vec![]);
    JobHandler(h.clone()).on_add(&Arc::new(j), false);
    assert_eq!(drain(&h.queue), [KEY], "queued at once (the sync skips it)");
    assert_eq!(*m.0.lock(), ["external example.com/queue"]);
}

/// Counts the workqueue's retries.
#[derive(Default)]
struct Retries(std::sync::atomic::AtomicUsize);

impl informer::QueueMetrics for Retries {
    fn retry(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

struct CountRetries(Arc<Retries>);

impl informer::MetricsProvider for CountRetries {
    fn queue_metrics(&self, _: &str) -> Arc<dyn informer::QueueMetrics> {
        self.0.clone()
    }
}

/// Upstream queues a Job's add, spec change and delete with `AddAfter(key, 0)`, which the
/// workqueue counts as a retry: `workqueue_retries_total{name="job"}` reads as upstream's.
#[tokio::test(start_paused = true)]
async fn a_jobs_own_events_sync_it_at_once_counted_as_retries() {
    let retries = Arc::new(Retries::default());
    let (mut h, _) = handlers(vec![]);
    h.queue = WorkQueue::named("job", &CountRetries(retries.clone()));
    let old = job(1, Some(1));
    let mut cur = old.clone();
    cur.metadata.generation = Some(2);
    JobHandler(h.clone()).on_add(&Arc::new(old.clone()), false);
    assert_eq!(drain(&h.queue), [KEY]);
    JobHandler(h.clone()).on_update(&Arc::new(old), &Arc::new(cur.clone()));
    assert_eq!(drain(&h.queue), [KEY]);
    JobHandler(h.clone()).on_delete(&DeletedObject::Final(Arc::new(cur)));
    assert_eq!(drain(&h.queue), [KEY]);
    assert_eq!(retries.0.load(std::sync::atomic::Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn a_changed_active_deadline_requeues_at_once_and_again_when_it_falls() {
    let (h, _) = handlers(vec![]);
    let mut old = job(1, Some(1));
    old.status.get_or_insert_default().start_time = Some(Time(ts(NOW - 4)));
    let mut cur = old.clone();
    cur.metadata.generation = Some(2);
    cur.spec.as_mut().unwrap().active_deadline_seconds = Some(10);
    JobHandler(h.clone()).on_update(&Arc::new(old.clone()), &Arc::new(cur.clone()));
    assert_eq!(drain(&h.queue), [KEY], "a spec change syncs at once");
    tokio::time::sleep(Duration::from_millis(5_999)).await;
    assert!(drain(&h.queue).is_empty());
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(drain(&h.queue), [KEY], "and again at the deadline");
    // A deadline already past: at once, even without a generation change.
    let mut past = cur.clone();
    past.spec.as_mut().unwrap().active_deadline_seconds = Some(3);
    past.metadata.generation = Some(2);
    JobHandler(h.clone()).on_update(&Arc::new(cur), &Arc::new(past));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(drain(&h.queue), [KEY]);
}

#[tokio::test(start_paused = true)]
async fn a_status_only_update_syncs_batched() {
    let (h, _) = handlers(vec![]);
    let old = Arc::new(job(1, Some(1)));
    JobHandler(h.clone()).on_update(&old, &old);
    assert!(drain(&h.queue).is_empty());
    after_batch().await;
    assert_eq!(drain(&h.queue), [KEY]);
}

#[tokio::test(start_paused = true)]
async fn a_finished_or_deleted_job_sweeps_its_selector() {
    let (h, _) = handlers(vec![]);
    let old = job(1, Some(1));
    let mut done = old.clone();
    done.status.get_or_insert_default().conditions = Some(vec![new_condition(FAILED, "True", "", "", ts(1))]);
    JobHandler(h.clone()).on_update(&Arc::new(old.clone()), &Arc::new(done));
    after_batch().await;
    assert!(drain(&h.queue).is_empty(), "a finished Job is not synced again");
    let sweep = drain(&h.orphan_queue);
    assert_eq!(sweep.len(), 1);
    assert!(sweep[0].starts_with("pods of ns selected by"), "{sweep:?}");
    let failed = crate::backoff::BackoffRecord {
        failures_after_last_success: 4,
        last_failure_time: Some(ts(1)),
    };
    h.backoff.update(KEY, failed);
    JobHandler(h.clone()).on_delete(&DeletedObject::Final(Arc::new(old)));
    assert_eq!(drain(&h.queue), [KEY], "deletions sync at once");
    assert_eq!(drain(&h.orphan_queue), sweep);
    assert_eq!(
        h.backoff.get(KEY),
        crate::backoff::BackoffRecord::default(),
        "a Job re-created under the name starts without the old failures"
    );
}

#[tokio::test(start_paused = true)]
async fn pod_to_job_matching_follows_get_pod_jobs() {
    let mut everything = job(1, Some(1));
    everything.metadata.name = Some("all".into());
    everything.spec.as_mut().unwrap().selector = Some(LabelSelector::default());
    let mut invalid = job(1, Some(1));
    invalid.metadata.name = Some("bad".into());
    invalid.spec.as_mut().unwrap().selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("bad key!".to_owned(), "v".to_owned())])),
        ..LabelSelector::default()
    });
    let (h, _) = handlers(vec![job(1, Some(1)), everything, invalid]);
    let names: Vec<String> = h
        .matching(&pod("p").orphan().build())
        .iter()
        .filter_map(|j| j.metadata.name.clone())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"all".to_owned()) && names.contains(&"foobar".to_owned()));
}

#[tokio::test(start_paused = true)]
async fn a_job_resync_syncs_it_batched() {
    // `--min-resync-period` relies on this: upstream's updateJob queues on every update, resyncs
    // (old == new, same generation) included, so a Job left waiting by a missed event syncs again.
    let j = Arc::new(job(1, Some(1)));
    let (h, _) = handlers(vec![(*j).clone()]);
    JobHandler(h.clone()).on_update(&j, &j);
    assert!(drain(&h.queue).is_empty(), "batched, not immediate");
    after_batch().await;
    assert_eq!(drain(&h.queue), [KEY]);
}

#[tokio::test(start_paused = true)]
async fn a_pod_its_deleting_job_no_longer_selects_goes_to_the_orphan_queue() {
    let mut deleting = job(1, Some(1));
    deleting.metadata.deletion_timestamp = Some(Time(ts(5)));
    let (h, _) = handlers(vec![deleting]);
    let old = pod("p").node("n").running().build();
    let mut relabelled = bumped(&old);
    relabelled.metadata.labels = Some(BTreeMap::from([("app".to_owned(), "released".to_owned())]));
    PodHandler(h.clone()).on_update(&old, &Arc::new(relabelled.clone()));
    assert_eq!(drain(&h.orphan_queue), ["pod ns/p"]);
    // The garbage collector's delete of it goes there too; a pod still selected does not.
    relabelled.metadata.deletion_timestamp = Some(Time(ts(6)));
    let mut dying = relabelled.clone();
    dying.metadata.resource_version = Some("3".into());
    let dying = Arc::new(dying);
    PodHandler(h.clone()).on_update(&Arc::new(relabelled), &dying);
    assert_eq!(drain(&h.orphan_queue), ["pod ns/p"]);
    let selected = pod("q").node("n").running().build();
    PodHandler(h.clone()).on_update(&selected, &Arc::new(bumped(&selected)));
    assert!(drain(&h.orphan_queue).is_empty());
}

/// A finished pod deleted with the tracking finalizer counts `event="delete"` from its final state
/// only; a tombstone's last known state (perhaps stale) counts nothing, as upstream.
#[tokio::test(start_paused = true)]
async fn only_a_final_delete_counts_toward_the_finalizer_metric() {
    let (h, metrics) = handlers(vec![job(1, Some(1))]);
    let done = pod("p").succeeded().build();
    PodHandler(h.clone()).on_delete(&DeletedObject::Unknown {
        key: ObjectKey::of(&*done),
        last_known: done.clone(),
    });
    assert!(metrics.0.lock().is_empty());
    PodHandler(h.clone()).on_delete(&DeletedObject::Final(done));
    assert_eq!(*metrics.0.lock(), ["finalizer delete"]);
}
