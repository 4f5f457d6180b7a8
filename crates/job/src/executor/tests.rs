//! The executor against the fake API server: partial failures of finalizer removal written back,
//! the controller killed between its writes (a fresh controller converges: no pod keeps the
//! finalizer, nothing is counted twice), and a Job deleted in the foreground mid-run.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::Clock;
use controller::ConsistencyStore;
use controller::EventRecorder;
use controller::Expectations;
use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};

use super::*;
use crate::{
    backoff::BackoffStore,
    fake_cluster::FakeCluster,
    fixtures::{JOB_UID, job, pod, ts},
    metrics::{JobMetrics, NoJobMetrics},
    plan::{Decision, SyncInput, plan_pods},
    spec::{conditions, has_tracking_finalizer, is_finished},
};

const KEY: &str = "ns/foobar";
const NOW: i64 = 100;

#[derive(Debug)]
struct FixedClock;

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        ts(NOW)
    }
}

/// One controller process: its in-memory state (expectations, backoff, versions written) is lost
/// when it is dropped, as when kcm-rs restarts.
struct Process {
    cluster: FakeCluster,
    executor: Executor<FakeCluster>,
}

impl Process {
    fn start(cluster: &FakeCluster) -> Self {
        Self::start_with(cluster, Arc::new(NoJobMetrics))
    }

    fn start_with(cluster: &FakeCluster, metrics: Arc<dyn JobMetrics>) -> Self {
        let executor = Executor {
            control: cluster.clone(),
            client: cluster.client(),
            recorder: EventRecorder::in_memory(),
            expectations: Arc::new(Expectations::new()),
            finalizers: Arc::new(FinalizerExpectations::default()),
            backoff: Arc::new(BackoffStore::default()),
            finished: Arc::default(),
            clock: Arc::new(FixedClock),
            metrics,
            consistency: Arc::new(ConsistencyStore::new()),
        };
        Process {
            cluster: cluster.clone(),
            executor,
        }
    }

    /// What the informers would have delivered by now: every pod write observed.
    fn observe(&self) {
        let w = self.cluster.world();
        self.executor.expectations.delete(KEY);
        for uid in self.executor.finalizers.expected(KEY) {
            let still = w.pods.values().any(|p| {
                p.metadata.uid.as_deref() == Some(uid.as_str()) && has_tracking_finalizer(&p.metadata)
            });
            if !still {
                self.executor.finalizers.removal_observed(KEY, &uid);
            }
        }
    }

    /// One sync over caches showing the fake server's current state.
    async fn sync(&self) -> Result<Option<Duration>, SyncError> {
        self.observe();
        let (job, pods): (Job, Vec<Arc<Pod>>) = {
            let w = self.cluster.world();
            let Some(job) = w.jobs.get(KEY).cloned() else {
                return Ok(None);
            };
            (job, w.pods.values().cloned().map(Arc::new).collect())
        };
        let expected = self.executor.finalizers.expected(KEY);
        let input = SyncInput {
            job: &job,
            candidates: &pods,
            expectations_satisfied: self.executor.expectations.satisfied(KEY),
            expected_rm_finalizers: &expected,
            backoff: self.executor.backoff.get(KEY),
            now: ts(NOW),
            suspend_clears_start_time: true,
        };
        match plan_pods(&input).expect("valid selector") {
            Decision::Sync(plan) => self.executor.execute(*plan).await,
            _ => Ok(None),
        }
    }

    /// Syncs until the Job is finished (at most `n` syncs).
    async fn converge(&self, n: usize) {
        for _ in 0..n {
            if is_finished(&self.cluster.world().job(KEY)) {
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

fn cluster(j: Job, pods: Vec<Arc<Pod>>) -> FakeCluster {
    let c = FakeCluster::default();
    {
        let mut w = c.world();
        w.jobs.insert(KEY.into(), j);
        for p in pods {
            w.add_pod((*p).clone());
        }
    }
    c
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
    // Not a version the fake server will answer, so that a second write sent with it shows.
    j.metadata.resource_version = Some("100".into());
    let c = cluster(j, pods);
    c.world().fail_patch.insert("b".into());
    let p = Process::start(&c);
    let err = p.sync().await.unwrap_err();
    assert!(matches!(err, SyncError::Finalizers { .. }), "{err}");
    assert!(err.to_string().contains(KEY), "typed error names the Job: {err}");
    {
        let w = c.world();
        assert_eq!(w.status_puts.len(), 2, "the flush, then the partial progress");
        let first = &w.status_puts[0];
        let mut listed = uncounted(first).0;
        listed.sort();
        assert_eq!(listed, ["uid-a", "uid-b", "uid-c"], "recorded before any removal");
        assert!(has(first, "SuccessCriteriaMet"));
        let second = &w.status_puts[1];
        assert_eq!(second.succeeded, Some(2));
        assert_eq!(uncounted(second).0, ["uid-b"], "the failed removal keeps its UID");
        let (_, first_answer) = &w.status_put_versions[0];
        assert_eq!(
            w.status_put_versions[1].0.as_ref(),
            Some(first_answer),
            "the second write carries the resourceVersion the first one answered"
        );
        assert_eq!(w.with_finalizer(), ["b"]);
        assert!(
            !is_finished(&w.job(KEY)),
            "nothing may finish with a UID uncounted"
        );
    }
    c.world().fail_patch.clear();
    p.sync().await.expect("retry");
    let w = c.world();
    let status = w.job(KEY).status.unwrap();
    assert_eq!(status.succeeded, Some(3), "b counted once");
    assert_eq!(uncounted(&status), (vec![], vec![]));
    assert!(has(&status, "Complete"));
    assert!(w.with_finalizer().is_empty());
    drop(w);
    assert_eq!(p.events(), ["Completed"]);
}

#[tokio::test(start_paused = true)]
async fn killed_between_the_status_write_and_the_finalizer_removal_a_new_process_converges() {
    let pods = vec![
        pod("a").succeeded().build(),
        pod("b").succeeded().build(),
        pod("c").failed().exit("main", 1, 10).build(),
    ];
    let c = cluster(job(2, Some(2)), pods);
    c.world().hang_patches = true;
    let first = Process::start(&c);
    let killed = tokio::time::timeout(Duration::from_secs(5), first.sync()).await;
    assert!(killed.is_err(), "the process died inside its finalizer removals");
    drop(first);
    {
        let w = c.world();
        assert_eq!(w.status_puts.len(), 1);
        let (mut s, f) = uncounted(&w.status_puts[0]);
        s.sort();
        assert_eq!(
            (s, f),
            (vec!["uid-a".into(), "uid-b".into()], vec!["uid-c".into()])
        );
        assert_eq!(w.with_finalizer().len(), 3, "no removal happened");
    }
    c.world().hang_patches = false;
    let second = Process::start(&c);
    second.converge(5).await;
    let w = c.world();
    let status = w.job(KEY).status.unwrap();
    assert_eq!(
        (status.succeeded, status.failed),
        (Some(2), Some(1)),
        "nothing counted twice"
    );
    assert_eq!(uncounted(&status), (vec![], vec![]));
    assert!(has(&status, "Complete"));
    assert!(w.with_finalizer().is_empty(), "no pod keeps the finalizer");
}

#[tokio::test(start_paused = true)]
async fn killed_after_the_finalizer_removal_before_counting_a_new_process_converges() {
    let pods = vec![pod("a").succeeded().build(), pod("b").succeeded().build()];
    let c = cluster(job(2, Some(2)), pods);
    c.world().hang_status_puts_after = Some(1);
    let first = Process::start(&c);
    assert!(
        tokio::time::timeout(Duration::from_secs(5), first.sync())
            .await
            .is_err()
    );
    drop(first);
    {
        let w = c.world();
        assert!(w.with_finalizer().is_empty(), "the finalizers went");
        let status = w.job(KEY).status.unwrap();
        assert_eq!(
            status.succeeded.unwrap_or(0),
            0,
            "but the counters were never written"
        );
        assert_eq!(uncounted(&status).0.len(), 2);
    }
    c.world().hang_status_puts_after = None;
    Process::start(&c).converge(5).await;
    let status = c.world().job(KEY).status.unwrap();
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
    let pods = vec![
        pod("done").succeeded().build(),
        // The garbage collector deletes the dependents first: they are terminating.
        pod("r1").node("n").running().deleting().build(),
        pod("r2").node("n").running().deleting().build(),
    ];
    let c = cluster(j, pods);
    let p = Process::start(&c);
    p.sync().await.expect("sync");
    let w = c.world();
    assert!(w.with_finalizer().is_empty(), "{:?}", w.with_finalizer());
    assert!(
        !w.pod_writes.iter().any(|wr| wr.starts_with("create")),
        "no pods for a Job being deleted"
    );
    let status = w.job(KEY).status.unwrap();
    assert_eq!((status.succeeded, status.failed), (Some(1), Some(2)));
}

#[tokio::test]
async fn pod_writes_follow_the_plan_and_record_consistency_versions() {
    let c = cluster(job(2, Some(4)), vec![]);
    let p = Process::start(&c);
    p.sync().await.expect("sync");
    let w = c.world();
    assert_eq!(w.pods.len(), 2);
    assert!(w.pods.values().all(|p| has_tracking_finalizer(&p.metadata)));
    assert_eq!(w.job(KEY).status.unwrap().active, Some(2));
    let stale = p.executor.consistency.ensure_ready(KEY, |_| 0).unwrap_err();
    assert!(
        [GR_PODS, GR_JOBS].contains(&stale.group_resource),
        "creates and status writes are remembered"
    );
    assert_eq!(p.executor.consistency.ensure_ready(KEY, |_| u64::MAX), Ok(()));
    drop(w);
    assert!(conditions(&c.world().job(KEY)).is_empty());
}

#[tokio::test]
async fn a_run_from_creation_to_complete_counts_each_pod_once() {
    let c = cluster(job(2, Some(4)), vec![]);
    let p = Process::start(&c);
    for _ in 0..8 {
        if is_finished(&c.world().job(KEY)) {
            break;
        }
        p.sync().await.expect("sync");
        // The kubelet's part: every pod runs to success.
        let mut w = c.world();
        let names: Vec<String> = w.pods.values().filter_map(|p| p.metadata.name.clone()).collect();
        for n in names {
            w.set_phase(&n, "Succeeded");
        }
    }
    let w = c.world();
    let status = w.job(KEY).status.unwrap();
    assert_eq!(status.succeeded, Some(4));
    assert!(has(&status, "Complete") && status.completion_time.is_some());
    assert_eq!(w.pods.len(), 4, "exactly completions pods were created");
    assert!(w.with_finalizer().is_empty());
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
    let c = cluster(job(2, Some(2)), pods);
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
    let c = cluster(job(2, Some(2)), pods);
    c.world().fail_patch.insert("a".into());
    let p = Process::start(&c);
    let err = p.sync().await.unwrap_err();
    assert!(matches!(err, SyncError::Claim { .. }), "{err}");
    let w = c.world();
    assert!(w.pod_writes.contains(&"patch b".to_owned()), "{:?}", w.pod_writes);
    let b = &w.pods["ns/b"];
    assert!(
        b.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.uid == JOB_UID)
    );
    drop(w);
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
    let c = cluster(j, pods);
    c.world().fail_delete.insert("r2".into());
    let p = Process::start(&c);
    p.sync().await.unwrap_err();
    let w = c.world();
    let last = w.status_puts.last().expect("a status write");
    assert_eq!(last.ready, Some(0));
    assert!(!has(last, "Failed"), "not finished while a pod may remain");
}

/// `job_pods_creation_total` as upstream counts it: "succeeded" counts every attempt, failed ones
/// too, and "failed" every failure (a quota lets 2 of 4 creates through: batches of 1 and 2, the
/// second's second call refused).
#[tokio::test]
async fn pod_creation_metrics_count_attempts_as_upstream() {
    let c = cluster(job(4, Some(4)), vec![]);
    c.world().pod_quota = Some(2);
    let metrics = Arc::new(Finished::default());
    let p = Process::start_with(&c, metrics.clone());
    p.sync().await.unwrap_err();
    assert_eq!(
        *metrics.0.lock(),
        ["created new succeeded 3", "created new failed 1"]
    );
}
