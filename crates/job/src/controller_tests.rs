//! A Job sync's own rules over caches filled by hand (no informer runs): an invalid
//! selector is an error retried with backoff, a cache older than this controller's writes skips
//! the sync (`StaleControllerConsistencyJob`), an unknown completion mode gets its event.

use controller::Reconciler as _;
use controller::{ControllerMetrics, SyncMetrics};
use informer::{MetricsProvider, ObjectKey, SharedInformerFactory, Store};
use parking_lot::Mutex;
use testing::{ApiServer, FakeClock, Verb};

use super::*;
use crate::fixtures::{job, spec, ts};
use crate::{
    conditions::EVENT_UNKNOWN_COMPLETION_MODE,
    executor::{GR_JOBS, GR_PODS},
};

const KEY: &str = "ns/foobar";

/// The Job's own metrics and the sync metrics every controller reports, in one list.
#[derive(Debug, Default, Clone)]
struct Recorded(Arc<Mutex<Vec<String>>>);

impl JobMetrics for Recorded {
    fn job_sync(&self, mode: &str, result: &str, action: &str, _: Duration) {
        self.0.lock().push(format!("sync {mode} {result} {action}"));
    }
}

impl SyncMetrics for Recorded {
    fn stale_sync_skip(&self, group: &str, resource: &str) {
        self.0.lock().push(format!("stale {group} {resource}"));
    }
}

impl MetricsProvider for Recorded {}

impl ControllerMetrics for Recorded {
    fn sync_metrics(&self, _: &str) -> Arc<dyn SyncMetrics> {
        Arc::new(self.clone())
    }
}

fn put<K: kube::Resource<DynamicType = ()> + Clone>(store: &Store<K>, obj: K) {
    store.upsert(ObjectKey::of(&obj), Arc::new(obj));
}

type Setup = (JobController<KubePodControl>, ApiServer, Arc<Recorded>);

fn controller(j: Job) -> Setup {
    controller_with(j, FeatureGates::default())
}

/// A controller writing pods through [`KubePodControl`] to a server holding `j` (the pods it
/// creates are created at 1 s), its Job cache holding `j` too.
fn controller_with(j: Job, features: FeatureGates) -> Setup {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(ts(1))));
    server.insert(&j);
    let factory = SharedInformerFactory::new(server.client());
    let metrics = Arc::new(Recorded::default());
    let recorder = EventRecorder::in_memory();
    let mut cx = Context::new(&factory, server.client(), &*metrics, COMPONENT);
    cx.options.features = features;
    let options = JobOptions {
        metrics: metrics.clone(),
        ..JobOptions::default()
    };
    let control = KubePodControl::new(server.client(), recorder.clone());
    let c = JobController::with_control(cx, control, recorder, options);
    put(c.handlers.jobs.store(), j);
    (c, server, metrics)
}

fn stored_job(server: &ApiServer) -> Job {
    server.get("ns", "foobar").expect("the Job is stored")
}

/// How many status PUTs were sent, whatever the answer.
fn status_puts(server: &ApiServer) -> usize {
    let requests = server.requests();
    let puts = requests
        .iter()
        .filter(|r| r.verb == Some(Verb::Update) && r.subresource.as_deref() == Some("status"));
    puts.count()
}

#[tokio::test]
async fn an_invalid_selector_is_an_error_retried_with_backoff_and_no_event() {
    let mut j = job(1, Some(1));
    let sel = spec(&mut j).selector.as_mut().unwrap();
    sel.match_labels = Some([("bad key!".to_owned(), "v".to_owned())].into());
    let (c, cluster, metrics) = controller(j);
    let err = c.sync(&ObjectKey::parse(KEY)).await.unwrap_err();
    assert!(matches!(err, SyncError::InvalidSelector { .. }), "{err}");
    assert!(err.to_string().contains(KEY), "{err}");
    assert_eq!(*metrics.0.lock(), ["sync NonIndexed error reconciling"]);
    assert!(cluster.writes("pods").is_empty());
    assert!(
        c.executor.recorder.recorded().is_empty(),
        "upstream records no event"
    );
}

#[tokio::test]
async fn a_cache_older_than_our_own_writes_skips_the_sync() {
    let (c, cluster, metrics) = controller(job(2, Some(2)));
    c.sync(&ObjectKey::parse(KEY)).await.expect("first sync");
    assert_eq!(cluster.list::<Pod>().len(), 2);
    // Nothing reached the (never started) informers: both caches are older than the writes.
    let err = c.sync(&ObjectKey::parse(KEY)).await.unwrap_err();
    let SyncError::Stale { key, source } = &err else {
        panic!("{err}")
    };
    assert_eq!(key.as_str(), KEY);
    assert!([GR_PODS, GR_JOBS].contains(&source.group_resource));
    assert_eq!(cluster.list::<Pod>().len(), 2, "no second round of creations");
    let recorded = metrics.0.lock().clone();
    assert_eq!(recorded[0], "sync NonIndexed success pods_created");
    assert!(recorded[1].starts_with("stale "), "{recorded:?}");
}

#[tokio::test]
async fn with_the_gate_off_a_stale_cache_does_not_stop_the_sync() {
    let features = FeatureGates::parse("StaleControllerConsistencyJob=false").unwrap();
    let (c, cluster, metrics) = controller_with(job(2, Some(2)), features);
    c.sync(&ObjectKey::parse(KEY)).await.expect("first sync");
    // The cached Job is the one the first sync wrote, whose resourceVersion the server checks on
    // the status PUT; the informers, never run, have still synced nothing: both caches are older
    // than the writes, as the gate measures them.
    put(c.handlers.jobs.store(), stored_job(&cluster));
    c.sync(&ObjectKey::parse(KEY))
        .await
        .expect("second sync, on the same stale caches");
    assert!(metrics.0.lock().iter().all(|m| !m.starts_with("stale")));
}

#[tokio::test]
async fn an_unknown_completion_mode_gets_a_warning_event() {
    let mut j = job(1, Some(1));
    spec(&mut j).completion_mode = Some("Odd".into());
    let (c, cluster, _) = controller(j);
    assert_eq!(c.sync(&ObjectKey::parse(KEY)).await.unwrap(), None);
    let events = c.executor.recorder.recorded();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, EVENT_UNKNOWN_COMPLETION_MODE);
    assert!(cluster.writes("pods").is_empty());
}

/// A sync that plans a timed wake-up (here the active deadline) and then fails keeps the wake-up:
/// the rate-limited retry alone would look at the Job only on the exponential schedule.
#[tokio::test(start_paused = true)]
async fn a_failed_sync_keeps_its_timed_wake_up() {
    let mut j = job(1, Some(1));
    spec(&mut j).active_deadline_seconds = Some(100);
    let started = k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(10);
    crate::fixtures::status(&mut j).start_time =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(started));
    let (c, cluster, _) = controller(j);
    cluster
        .on(Verb::Update, "jobs")
        .subresource("status")
        .fail(500, "InternalError", "an internal error");
    c.sync(&ObjectKey::parse(KEY)).await.unwrap_err();
    assert_eq!(c.handlers.queue.len(), 0);
    tokio::time::advance(Duration::from_secs(95)).await;
    tokio::task::yield_now().await;
    assert_eq!(c.handlers.queue.len(), 1, "woken at the deadline");
}

/// After the write that finishes a Job, a sync on a cache that still shows it unfinished (and its
/// pods with the finalizer) does nothing, also with the resourceVersion gate off: upstream's
/// `finishedJobExpectations`. Once the cache shows it finished, it is forgotten.
#[tokio::test]
async fn a_job_written_finished_is_not_synced_on_a_stale_cache() {
    let features = FeatureGates::parse("StaleControllerConsistencyJob=false").unwrap();
    let (c, cluster, _) = controller_with(job(2, Some(2)), features);
    for name in ["a", "b"] {
        let p = crate::fixtures::pod(name).succeeded().build();
        cluster.insert(&*p);
        c.handlers.pods.store().upsert(ObjectKey::of(&*p), p);
    }
    c.sync(&ObjectKey::parse(KEY)).await.expect("finishing sync");
    let written = status_puts(&cluster);
    assert!(crate::spec::is_finished(&stored_job(&cluster)));
    c.sync(&ObjectKey::parse(KEY)).await.expect("stale sync");
    assert_eq!(status_puts(&cluster), written, "nothing written again");
    let finished = stored_job(&cluster);
    put(c.handlers.jobs.store(), finished.clone());
    c.sync(&ObjectKey::parse(KEY)).await.expect("finished Job");
    assert!(
        !c.handlers
            .finished
            .awaited(finished.metadata.uid.as_deref().unwrap())
    );
}

/// A claim that fails fails the sync as a failed write does: counted as an error, as upstream's
/// deferred metric counts a `getPodsForJob` failure.
#[tokio::test]
async fn a_failed_claim_is_a_failed_sync() {
    let (c, cluster, metrics) = controller(job(1, Some(1)));
    let p = crate::fixtures::pod("orphan").orphan().running().build();
    cluster.insert(&*p);
    c.handlers.pods.store().upsert(ObjectKey::of(&*p), p);
    cluster
        .on(Verb::Patch, "pods")
        .fail(500, "InternalError", "etcdserver: request timed out");
    let err = c.sync(&ObjectKey::parse(KEY)).await.unwrap_err();
    assert!(matches!(err, SyncError::Claim { .. }), "{err}");
    let recorded = metrics.0.lock().clone();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0].starts_with("sync NonIndexed error "), "{recorded:?}");
    assert!(
        cluster.writes("pods").iter().all(|w| !w.starts_with("create")),
        "nothing after the claims"
    );
}

/// An orphan counted as active when the plan was made, deleted before its adoption (the adoption
/// patch answers 404): the sync plans again without it, as upstream's claim leaves it out of the
/// pods it returns, and creates both pods the Job wants rather than one.
#[tokio::test]
async fn an_orphan_deleted_before_its_adoption_is_planned_without() {
    let (c, cluster, _) = controller(job(2, Some(2)));
    let p = crate::fixtures::pod("orphan")
        .orphan()
        .node("n")
        .running()
        .build();
    c.handlers.pods.store().upsert(ObjectKey::of(&*p), p);
    c.sync(&ObjectKey::parse(KEY)).await.unwrap();
    let creates = cluster
        .writes("pods")
        .into_iter()
        .filter(|w| w.starts_with("create"))
        .count();
    assert_eq!(creates, 2, "{:?}", cluster.writes("pods"));
}

/// A test's waits reach the live controller; shadow mode, judged against upstream's controller,
/// plans on upstream's whatever it is given.
#[tokio::test]
async fn a_test_s_delays_reach_the_live_controller_and_never_the_shadow() {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(ts(1))));
    let factory = SharedInformerFactory::new(server.client());
    let metrics = Recorded::default();
    let fast = JobDelays::new(
        Duration::from_secs(1),
        Duration::from_secs(2),
        Duration::from_millis(100),
    )
    .unwrap();
    let options = || JobOptions {
        delays: fast,
        ..JobOptions::default()
    };
    let cx = || Context::new(&factory, server.client(), &metrics, COMPONENT);
    let live = JobController::build(cx(), options());
    assert_eq!(live.handlers.delays, fast);
    let state = Arc::new(ShadowState::new(Duration::from_secs(10), |_| {}));
    let shadow = JobController::<KubePodControl>::shadow(cx(), state, options());
    assert_eq!(shadow.handlers.delays, JobDelays::UPSTREAM);
}
