//! The executor against an in-memory API server ([`testing::ApiServer`]): partial failures of
//! finalizer removal written back, the controller killed between its writes (a fresh controller
//! converges: no pod keeps the finalizer, nothing is counted twice), and a Job deleted in the
//! foreground mid-run.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::ConsistencyStore;
use controller::EventRecorder;
use controller::Expectations;
use controller::KubePodControl;
use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::Time};
use testing::{ApiServer, FakeClock, Verb};

use super::*;
use crate::{
    backoff::BackoffStore,
    fixtures::{JOB_UID, job, pod, ts},
    metrics::{JobMetrics, NoJobMetrics},
    plan::{Decision, SyncInput, plan_pods},
    spec::{conditions, has_tracking_finalizer, is_finished},
};

const KEY: &str = "ns/foobar";
const NOW: i64 = 100;

/// One controller process: its in-memory state (expectations, backoff, versions written) is lost
/// when it is dropped, as when kcm-rs restarts.
struct Process {
    server: ApiServer,
    executor: Executor<KubePodControl>,
}

impl Process {
    fn start(server: &ApiServer) -> Self {
        Self::start_with(server, Arc::new(NoJobMetrics))
    }

    fn start_with(server: &ApiServer, metrics: Arc<dyn JobMetrics>) -> Self {
        let recorder = EventRecorder::in_memory();
        let executor = Executor {
            control: KubePodControl::new(server.client(), recorder.clone()),
            client: server.client(),
            recorder,
            expectations: Arc::new(Expectations::new()),
            finalizers: Arc::new(FinalizerExpectations::default()),
            backoff: Arc::new(BackoffStore::default()),
            finished: Arc::default(),
            clock: Arc::new(FakeClock::at(ts(NOW))),
            metrics,
            consistency: Arc::new(ConsistencyStore::new()),
        };
        Process {
            server: server.clone(),
            executor,
        }
    }

    /// What the informers would have delivered by now: every pod write observed.
    fn observe(&self) {
        let pods = self.server.list::<Pod>();
        self.executor.expectations.delete(KEY);
        for uid in self.executor.finalizers.expected(KEY) {
            let still = pods.iter().any(|p| {
                p.metadata.uid.as_deref() == Some(uid.as_str()) && has_tracking_finalizer(&p.metadata)
            });
            if !still {
                self.executor.finalizers.removal_observed(KEY, &uid);
            }
        }
    }

    /// One sync over caches showing the server's current state.
    async fn sync(&self) -> Result<Option<Duration>, SyncError> {
        self.observe();
        let Some(job) = self.server.get::<Job>("ns", "foobar") else {
            return Ok(None);
        };
        let pods: Vec<Arc<Pod>> = self.server.list::<Pod>().into_iter().map(Arc::new).collect();
        let expected = self.executor.finalizers.expected(KEY);
        let input = SyncInput {
            job: &job,
            candidates: &pods,
            expectations_satisfied: self.executor.expectations.satisfied(KEY),
            expected_rm_finalizers: &expected,
            backoff: self.executor.backoff.get(KEY),
            now: ts(NOW),
            suspend_clears_start_time: true,
            delays: crate::JobDelays::UPSTREAM,
        };
        match plan_pods(&input).expect("valid selector") {
            Decision::Sync(plan) => {
                let key = ObjectKey::parse(KEY);
                let gone = self.executor.claim(&key, &plan).await?;
                assert!(
                    gone.is_empty(),
                    "no test here deletes an orphan before its adoption"
                );
                self.executor.execute(&key, *plan).await
            }
            _ => Ok(None),
        }
    }

    /// Syncs until the Job is finished (at most `n` syncs).
    async fn converge(&self, n: usize) {
        for _ in 0..n {
            if is_finished(&stored_job(&self.server)) {
                return;
            }
            self.sync().await.expect("sync");
        }
    }

    fn events(&self) -> Vec<String> {
        self.executor
            .recorder
            .recorded()
            .into_iter()
            .map(|e| e.reason.to_string())
            .collect()
    }
}

/// A server holding `j` and `pods`; the pods it creates are created at 1 s.
fn server(j: Job, pods: Vec<Arc<Pod>>) -> ApiServer {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(ts(1))));
    server.insert(&j);
    for p in pods {
        server.insert(&*p);
    }
    server
}

fn stored_job(server: &ApiServer) -> Job {
    server.get("ns", "foobar").expect("the Job is stored")
}

/// Pods still carrying the tracking finalizer.
fn with_finalizer(server: &ApiServer) -> Vec<String> {
    server
        .list::<Pod>()
        .into_iter()
        .filter(|p| has_tracking_finalizer(&p.metadata))
        .map(|p| p.metadata.name.unwrap_or_default())
        .collect()
}

/// The status PUTs the server answered, in order: what each sent, the resourceVersion it was sent
/// with, and the one it answered (none for a refused one).
fn status_writes(server: &ApiServer) -> Vec<(JobStatus, Option<String>, Option<String>)> {
    server
        .requests()
        .into_iter()
        .filter(|r| {
            r.verb == Some(Verb::Update)
                && r.resource == "jobs"
                && r.subresource.as_deref() == Some("status")
                && r.code.is_some()
        })
        .map(|r| {
            let sent = r.body_as::<Job>();
            let status = sent.status.unwrap_or_default();
            (status, sent.metadata.resource_version, r.answered_version)
        })
        .collect()
}

/// Every status sent and answered, in order.
fn status_puts(server: &ApiServer) -> Vec<JobStatus> {
    status_writes(server).into_iter().map(|(s, _, _)| s).collect()
}

fn fail(server: &ApiServer, verb: Verb, pod: &str) {
    server
        .on(verb, "pods")
        .named(pod)
        .fail(500, "InternalError", "an internal error");
}

fn uncounted(s: &JobStatus) -> (Vec<String>, Vec<String>) {
    let u = s.uncounted_terminated_pods.clone().unwrap_or_default();
    (u.succeeded.unwrap_or_default(), u.failed.unwrap_or_default())
}

fn has(s: &JobStatus, type_: &str) -> bool {
    s.conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == type_ && c.status == "True")
}

#[tokio::test]
async fn failed_finalizer_removals_are_written_back_and_stay_uncounted() {
    let pods = ["a", "b", "c"].map(|n| pod(n).succeeded().build()).to_vec();
    let mut j = job(3, Some(3));
    // Not a version the server will answer, so that a second write sent with it shows.
    j.metadata.resource_version = Some("100".into());
    let c = server(j, pods);
    fail(&c, Verb::Patch, "b");
    let p = Process::start(&c);
    let err = p.sync().await.unwrap_err();
    assert!(matches!(err, SyncError::Finalizers { .. }), "{err}");
    assert!(err.to_string().contains(KEY), "typed error names the Job: {err}");
    let writes = status_writes(&c);
    assert_eq!(writes.len(), 2, "the flush, then the partial progress");
    let first = &writes[0].0;
    let mut listed = uncounted(first).0;
    listed.sort();
    assert_eq!(listed, ["uid-a", "uid-b", "uid-c"], "recorded before any removal");
    assert!(has(first, "SuccessCriteriaMet"));
    let second = &writes[1].0;
    assert_eq!(second.succeeded, Some(2));
    assert_eq!(uncounted(second).0, ["uid-b"], "the failed removal keeps its UID");
    let first_answer = writes[0]
        .2
        .as_deref()
        .expect("the first write answered a version");
    assert_eq!(
        writes[1].1.as_deref(),
        Some(first_answer),
        "the second write carries the resourceVersion the first one answered"
    );
    assert_eq!(with_finalizer(&c), ["b"]);
    assert!(
        !is_finished(&stored_job(&c)),
        "nothing may finish with a UID uncounted"
    );
    c.clear_rules();
    p.sync().await.expect("retry");
    let status = stored_job(&c).status.unwrap();
    assert_eq!(status.succeeded, Some(3), "b counted once");
    assert_eq!(uncounted(&status), (vec![], vec![]));
    assert!(has(&status, "Complete"));
    assert!(with_finalizer(&c).is_empty());
    assert_eq!(p.events(), ["Completed"]);
}

#[tokio::test(start_paused = true)]
async fn killed_between_the_status_write_and_the_finalizer_removal_a_new_process_converges() {
    let pods = vec![
        pod("a").succeeded().build(),
        pod("b").succeeded().build(),
        pod("c").failed().exit("main", 1, 10).build(),
    ];
    let c = server(job(2, Some(2)), pods);
    c.on(Verb::Patch, "pods").hang();
    let first = Process::start(&c);
    let killed = tokio::time::timeout(Duration::from_secs(5), first.sync()).await;
    assert!(killed.is_err(), "the process died inside its finalizer removals");
    drop(first);
    let puts = status_puts(&c);
    assert_eq!(puts.len(), 1);
    let (mut s, f) = uncounted(&puts[0]);
    s.sort();
    assert_eq!(
        (s, f),
        (vec!["uid-a".into(), "uid-b".into()], vec!["uid-c".into()])
    );
    assert_eq!(with_finalizer(&c).len(), 3, "no removal happened");
    c.clear_rules();
    let second = Process::start(&c);
    second.converge(5).await;
    let status = stored_job(&c).status.unwrap();
    assert_eq!(
        (status.succeeded, status.failed),
        (Some(2), Some(1)),
        "nothing counted twice"
    );
    assert_eq!(uncounted(&status), (vec![], vec![]));
    assert!(has(&status, "Complete"));
    assert!(with_finalizer(&c).is_empty(), "no pod keeps the finalizer");
}

#[tokio::test(start_paused = true)]
async fn killed_after_the_finalizer_removal_before_counting_a_new_process_converges() {
    let pods = vec![pod("a").succeeded().build(), pod("b").succeeded().build()];
    let c = server(job(2, Some(2)), pods);
    c.on(Verb::Update, "jobs").subresource("status").after(1).hang();
    let first = Process::start(&c);
    assert!(
        tokio::time::timeout(Duration::from_secs(5), first.sync())
            .await
            .is_err()
    );
    drop(first);
    assert!(with_finalizer(&c).is_empty(), "the finalizers went");
    let status = stored_job(&c).status.unwrap();
    assert_eq!(
        status.succeeded.unwrap_or(0),
        0,
        "but the counters were never written"
    );
    assert_eq!(uncounted(&status).0.len(), 2);
    c.clear_rules();
    Process::start(&c).converge(5).await;
    let status = stored_job(&c).status.unwrap();
    assert_eq!(
        status.succeeded,
        Some(2),
        "the uncounted UIDs move to the counter once"
    );
    assert_eq!(uncounted(&status), (vec![], vec![]));
    assert!(has(&status, "Complete"));
}

#[tokio::test]
async fn a_job_deleted_in_the_foreground_mid_run_leaves_no_finalizer() {
    let mut j = job(3, Some(6));
    j.metadata.deletion_timestamp = Some(Time(ts(90)));
    // What holds a Job deleted in the foreground on the server until its dependents are gone.
    j.metadata.finalizers = Some(vec!["foregroundDeletion".into()]);
    let pods = vec![
        pod("done").succeeded().build(),
        // The garbage collector deletes the dependents first: they are terminating.
        pod("r1").node("n").running().deleting().build(),
        pod("r2").node("n").running().deleting().build(),
    ];
    let c = server(j, pods);
    let p = Process::start(&c);
    p.sync().await.expect("sync");
    assert!(with_finalizer(&c).is_empty(), "{:?}", with_finalizer(&c));
    assert!(
        !c.writes("pods").iter().any(|wr| wr.starts_with("create")),
        "no pods for a Job being deleted"
    );
    let status = stored_job(&c).status.unwrap();
    assert_eq!((status.succeeded, status.failed), (Some(1), Some(2)));
}

#[tokio::test]
async fn pod_writes_follow_the_plan_and_record_consistency_versions() {
    let c = server(job(2, Some(4)), vec![]);
    let p = Process::start(&c);
    p.sync().await.expect("sync");
    let pods = c.list::<Pod>();
    assert_eq!(pods.len(), 2);
    assert!(pods.iter().all(|p| has_tracking_finalizer(&p.metadata)));
    assert_eq!(stored_job(&c).status.unwrap().active, Some(2));
    let stale = p.executor.consistency.ensure_ready(KEY, |_| 0).unwrap_err();
    assert!(
        [GR_PODS, GR_JOBS].contains(&stale.group_resource),
        "creates and status writes are remembered"
    );
    assert_eq!(p.executor.consistency.ensure_ready(KEY, |_| u64::MAX), Ok(()));
    assert!(conditions(&stored_job(&c)).is_empty());
}

#[tokio::test]
async fn a_run_from_creation_to_complete_counts_each_pod_once() {
    let c = server(job(2, Some(4)), vec![]);
    let p = Process::start(&c);
    for _ in 0..8 {
        if is_finished(&stored_job(&c)) {
            break;
        }
        p.sync().await.expect("sync");
        // The kubelet's part: every pod runs to success.
        for n in c.list::<Pod>().into_iter().filter_map(|p| p.metadata.name) {
            c.modify::<k8s_openapi::api::core::v1::Pod>("ns", &n, |p| {
                p.status.get_or_insert_default().phase = Some("Succeeded".into());
            });
        }
    }
    let status = stored_job(&c).status.unwrap();
    assert_eq!(status.succeeded, Some(4));
    assert!(has(&status, "Complete") && status.completion_time.is_some());
    assert_eq!(c.list::<Pod>().len(), 4, "exactly completions pods were created");
    assert!(with_finalizer(&c).is_empty());
}

#[derive(Debug, Default)]
struct Finished(parking_lot::Mutex<Vec<String>>);

impl JobMetrics for Finished {
    fn job_finished(&self, completion_mode: &str, result: &str, reason: &str) {
        self.0.lock().push(format!("{completion_mode} {result} {reason}"));
    }
    fn pods_created(&self, reason: &str, status: &str, n: u64) {
        self.0.lock().push(format!("created {reason} {status} {n}"));
    }
}

/// `jobs_finished_total` carries the terminal condition's reason for a succeeded Job too.
#[tokio::test]
async fn the_finished_metric_names_the_completion_reason() {
    let pods = ["a", "b"].map(|n| pod(n).succeeded().build()).to_vec();
    let c = server(job(2, Some(2)), pods);
    let metrics = Arc::new(Finished::default());
    let p = Process::start_with(&c, metrics.clone());
    p.converge(5).await;
    assert_eq!(*metrics.0.lock(), ["NonIndexed succeeded CompletionsReached"]);
}

/// Every claim is tried, as upstream's `ClaimPods`: a refused adoption does not hold back the next
/// one, and the sync fails afterwards. The adoption's resourceVersion is remembered, so the next
/// sync waits for a pod cache that shows it.
#[tokio::test]
async fn a_refused_adoption_does_not_hold_back_the_others() {
    let pods = vec![
        pod("a").node("n").running().orphan().build(),
        pod("b").node("n").running().orphan().build(),
    ];
    let c = server(job(2, Some(2)), pods);
    fail(&c, Verb::Patch, "a");
    let p = Process::start(&c);
    let err = p.sync().await.unwrap_err();
    assert!(matches!(err, SyncError::Claim { .. }), "{err}");
    let writes = c.writes("pods");
    assert!(writes.contains(&"patch b".to_owned()), "{writes:?}");
    let b: Pod = c.get("ns", "b").expect("b is stored");
    assert!(
        b.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.uid == JOB_UID)
    );
    let pods_cache_behind = p
        .executor
        .consistency
        .ensure_ready(KEY, |gr| if gr == GR_PODS { 0 } else { u64::MAX });
    assert!(
        pods_cache_behind.is_err(),
        "the adoption's resourceVersion is recorded"
    );
}

/// A finishing Job deletes its active pods; a ready pod whose DELETE was sent leaves `ready` even
/// when the answer is an error, as upstream counts it (the next sync agrees either way).
#[tokio::test]
async fn a_failed_delete_of_a_ready_pod_still_leaves_the_ready_count() {
    let pods = vec![
        pod("f").failed().exit("main", 1, 10).build(),
        pod("r1").node("n").running().ready().build(),
        pod("r2").node("n").running().ready().build(),
    ];
    let mut j = job(2, Some(4));
    j.spec.as_mut().unwrap().backoff_limit = Some(0);
    let c = server(j, pods);
    // The pods deleted now get their deletionTimestamp at 50 s.
    c.clock().set(ts(50));
    fail(&c, Verb::Delete, "r2");
    let p = Process::start(&c);
    p.sync().await.unwrap_err();
    let puts = status_puts(&c);
    let last = puts.last().expect("a status write");
    assert_eq!(last.ready, Some(0));
    assert!(!has(last, "Failed"), "not finished while a pod may remain");
}

/// `job_pods_creation_total` as upstream counts it: "succeeded" counts every attempt, failed ones
/// too, and "failed" every failure (a quota lets 2 of 4 creates through: batches of 1 and 2, the
/// second's second call refused).
#[tokio::test]
async fn pod_creation_metrics_count_attempts_as_upstream() {
    let c = server(job(4, Some(4)), vec![]);
    c.on(Verb::Create, "pods")
        .after(2)
        .fail(403, "Forbidden", "exceeded quota: compute");
    let metrics = Arc::new(Finished::default());
    let p = Process::start_with(&c, metrics.clone());
    p.sync().await.unwrap_err();
    assert_eq!(
        *metrics.0.lock(),
        ["created new succeeded 3", "created new failed 1"]
    );
}

/// A resumed Job's startTime and Suspended=False condition carry the time the pod writes were done
/// (upstream reads its clock after `manageJob`): at the client's QPS the creates of a large Job take
/// seconds, and its activeDeadlineSeconds counts from their end.
#[tokio::test]
async fn a_resumed_job_starts_when_its_pods_were_made() {
    use k8s_openapi::api::batch::v1::JobCondition;
    let mut j = job(2, Some(2));
    j.spec.as_mut().unwrap().suspend = Some(false);
    j.status.get_or_insert_default().conditions = Some(vec![JobCondition {
        type_: "Suspended".into(),
        status: "True".into(),
        reason: Some("JobSuspended".into()),
        last_transition_time: Some(Time(ts(10))),
        ..JobCondition::default()
    }]);
    let c = server(j, vec![]);
    let mut p = Process::start(&c);
    // The plan is made at NOW; the writes end 14 s later.
    p.executor.clock = Arc::new(FakeClock::at(ts(NOW + 14)));
    p.sync().await.expect("sync");
    let status = stored_job(&c).status.unwrap();
    assert_eq!(c.list::<Pod>().len(), 2);
    assert_eq!(status.start_time, Some(Time(ts(NOW + 14))));
    let suspended = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Suspended")
        .unwrap();
    assert_eq!(
        (suspended.status.as_str(), suspended.last_transition_time.clone()),
        ("False", Some(Time(ts(NOW + 14))))
    );
    assert_eq!(p.events(), ["SuccessfulCreate", "SuccessfulCreate", "Resumed"]);
}

/// The Completed event names the Job as the sync's first status write returned it (upstream's
/// recordJobFinished gets that object), not the cached one nor the final write's.
#[tokio::test]
async fn the_finished_event_names_the_job_of_the_first_status_write() {
    let pods = ["a", "b"].map(|n| pod(n).succeeded().build()).to_vec();
    let c = server(job(2, Some(2)), pods);
    let p = Process::start(&c);
    p.converge(5).await;
    let writes = status_writes(&c);
    let first_answer = writes.first().and_then(|(_, _, answered)| answered.clone());
    let completed: Vec<_> = p
        .executor
        .recorder
        .recorded()
        .into_iter()
        .filter(|e| e.reason == "Completed")
        .map(|e| e.object.resource_version)
        .collect();
    assert!(writes.len() >= 2, "{writes:?}");
    assert_eq!(completed, [first_answer]);
}
