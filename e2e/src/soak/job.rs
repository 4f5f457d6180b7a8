//! A randomized soak of the Job controller, and the end it must reach: Jobs of random shapes
//! (NonIndexed and Indexed, pods that succeed after a while, fail, or toss a coin) are created,
//! rescaled, suspended and resumed, have pods deleted, orphaned and relabelled, and are deleted with
//! every propagation policy. Then every Job left must finish, counted exactly, and no pod anywhere
//! in the namespace may keep the tracking finalizer.
//!
//! Polls with LIST and GET only (no watch to re-establish after a "watcher close").

use std::time::Duration;

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::api::{DeleteParams, ListParams, PostParams, PropagationPolicy};
use rand::{Rng as _, SeedableRng as _, rngs::StdRng, seq::IndexedRandom as _};
use serde_json::json;

use crate::{
    TestNamespace,
    soak::{Tally, Ticks, is_active, merge, pick},
};

/// At most this many unfinished Jobs at once.
pub const MAX_LIVE_JOBS: usize = 6;
const TRACKING: &str = "batch.kubernetes.io/job-tracking";
/// The label the API server selects a Job's pods by (its selector is generated).
const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
/// KWOK's coin toss per pod (hack/README.md, "Simulated pod behaviour").
const COIN: &[&str] = &["sh", "-c", "exit $(( $RANDOM / 16384 ))"];

/// One kind of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A new Job of random shape (while fewer than [`MAX_LIVE_JOBS`] run).
    Create,
    /// `spec.parallelism` to 0..=4.
    Parallelism,
    /// Suspended or not, at random.
    Suspend,
    /// Delete one of its running pods (a failure, as the pod was terminated).
    DeletePod,
    /// Remove a pod's ownerReferences: the Job adopts it again.
    OrphanPod,
    /// Change a pod's controller-uid label: the Job releases it (and its finalizer).
    RelabelPod,
    /// Delete the Job, with a random propagation policy.
    DeleteJob,
}

const WEIGHTS: &[(Op, u32)] = &[
    (Op::Create, 20),
    (Op::Parallelism, 18),
    (Op::Suspend, 12),
    (Op::DeletePod, 18),
    (Op::OrphanPod, 10),
    (Op::RelabelPod, 8),
    (Op::DeleteJob, 6),
];

fn finished(j: &Job) -> bool {
    j.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

/// The soak's state: the namespace, the seeded RNG and what it did so far.
#[derive(Debug)]
pub struct JobSoak {
    ns: TestNamespace,
    rng: StdRng,
    pub seed: u64,
    pub tally: Tally,
    created: usize,
}

impl JobSoak {
    pub fn new(ns: TestNamespace, seed: u64) -> JobSoak {
        JobSoak {
            ns,
            rng: StdRng::seed_from_u64(seed),
            seed,
            tally: Tally::default(),
            created: 0,
        }
    }

    /// Applies a random operation every [`crate::soak::OP_INTERVAL`] for `duration`, then lets every Job run to
    /// its end: resumed, with at least one pod at a time.
    pub async fn run(&mut self, duration: Duration) {
        let mut ticks = Ticks::new(duration);
        while ticks.next().await {
            let op = pick(&mut self.rng, WEIGHTS);
            let (target, result) = self.apply(op).await;
            self.tally.record(op, &target, result);
        }
        let jobs = self.ns.api::<Job>();
        for j in jobs
            .list(&ListParams::default())
            .await
            .expect("listing Jobs")
            .items
        {
            let name = j.metadata.name.clone().unwrap_or_default();
            let parallelism = j.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1).max(1);
            let patch = json!({"spec": {"suspend": false, "parallelism": parallelism}});
            match merge(&jobs, &name, &patch).await {
                Ok(()) | Err(kube::Error::Api(_)) => {}
                Err(e) => panic!("letting {name} finish: {e}"),
            }
        }
    }

    /// Applies `op`; returns what it acted on.
    async fn apply(&mut self, op: Op) -> (String, Result<bool, kube::Error>) {
        let jobs = match self.ns.api::<Job>().list(&ListParams::default()).await {
            Ok(l) => l.items,
            Err(e) => return (String::new(), Err(e)),
        };
        let mut live: Vec<String> = jobs
            .iter()
            .filter(|j| !finished(j) && j.metadata.deletion_timestamp.is_none())
            .filter_map(|j| j.metadata.name.clone())
            .collect();
        live.sort();
        if op == Op::Create {
            if live.len() >= MAX_LIVE_JOBS {
                return (String::new(), Ok(false));
            }
            return self.create().await;
        }
        let Some(name) = live.choose(&mut self.rng).cloned() else {
            return (String::new(), Ok(false));
        };
        let api = self.ns.api::<Job>();
        let result = match op {
            Op::Parallelism => {
                let p = self.rng.random_range(0..=4);
                merge(&api, &name, &json!({"spec": {"parallelism": p}}))
                    .await
                    .map(|()| true)
            }
            Op::Suspend => {
                let s = self.rng.random_bool(0.5);
                merge(&api, &name, &json!({"spec": {"suspend": s}}))
                    .await
                    .map(|()| true)
            }
            Op::DeleteJob => {
                let policy = [
                    PropagationPolicy::Foreground,
                    PropagationPolicy::Background,
                    PropagationPolicy::Orphan,
                ]
                .choose(&mut self.rng)
                .cloned();
                let dp = DeleteParams {
                    propagation_policy: policy,
                    ..DeleteParams::default()
                };
                api.delete(&name, &dp).await.map(|_| true)
            }
            _ => self.pod_op(op, &name).await,
        };
        (name, result)
    }

    async fn create(&mut self) -> (String, Result<bool, kube::Error>) {
        self.created += 1;
        let name = format!("job-{}", self.created);
        let completions = self.rng.random_range(1..=8);
        let mut spec = json!({
            "completions": completions,
            "parallelism": self.rng.random_range(1..=4),
            "backoffLimit": self.rng.random_range(0..=3),
        });
        if self.rng.random_bool(0.5) {
            spec["completionMode"] = json!("Indexed");
        }
        let mut command: &[&str] = &["sh", "-c", "exit 0"];
        let mut labels = json!({});
        let mut annotations = json!({});
        match self.rng.random_range(0..10) {
            0..=5 => {
                labels["kcm-rs.test/outcome"] = json!("succeed");
                annotations["kcm-rs.test/after"] = json!(format!("{}s", self.rng.random_range(1..=6)));
            }
            6..=7 => command = COIN,
            _ => {
                labels["kcm-rs.test/outcome"] = json!("fail");
                annotations["kcm-rs.test/after"] = json!("2s");
            }
        }
        let mut job = crate::job_scenarios::job_manifest(&name, command, spec);
        let meta = job
            .spec
            .as_mut()
            .and_then(|s| s.template.metadata.as_mut())
            .expect("template metadata");
        meta.labels.get_or_insert_default().extend(
            serde_json::from_value::<std::collections::BTreeMap<String, String>>(labels).expect("labels"),
        );
        meta.annotations = Some(serde_json::from_value(annotations).expect("annotations"));
        let result = self.ns.api::<Job>().create(&PostParams::default(), &job).await;
        (name, result.map(|_| true))
    }

    async fn pod_op(&mut self, op: Op, job: &str) -> Result<bool, kube::Error> {
        let pods = self.ns.api::<Pod>();
        let lp = ListParams::default().labels(&format!("app={job}"));
        let mut candidates: Vec<Pod> = pods.list(&lp).await?.items;
        candidates.retain(|p| is_active(p) && crate::pods::controller_uid(&p.metadata).is_some());
        candidates.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let Some(pod) = candidates.choose(&mut self.rng) else {
            return Ok(false);
        };
        let pod = pod.metadata.name.clone().expect("pod name");
        match op {
            Op::DeletePod => drop(pods.delete(&pod, &DeleteParams::default()).await?),
            Op::OrphanPod => merge(&pods, &pod, &json!({"metadata": {"ownerReferences": null}})).await?,
            _ => {
                merge(
                    &pods,
                    &pod,
                    &json!({"metadata": {"labels": {CONTROLLER_UID: "released"}}}),
                )
                .await?
            }
        }
        Ok(true)
    }
}

/// What is wrong now: an unfinished Job, a miscounted one, or a pod holding the finalizer.
async fn problems(ns: &TestNamespace) -> Result<usize, Vec<String>> {
    let err = |e: kube::Error| vec![e.to_string()];
    let jobs = ns
        .api::<Job>()
        .list(&ListParams::default())
        .await
        .map_err(err)?
        .items;
    let pods = ns
        .api::<Pod>()
        .list(&ListParams::default())
        .await
        .map_err(err)?
        .items;
    let mut out = Vec::new();
    for j in &jobs {
        let name = j.metadata.name.clone().unwrap_or_default();
        let s = j.status.clone().unwrap_or_default();
        let uncounted = s.uncounted_terminated_pods.as_ref().map_or(0, |u| {
            u.succeeded.iter().flatten().count() + u.failed.iter().flatten().count()
        });
        if j.metadata.deletion_timestamp.is_some() {
            // Deleted in the foreground: it goes once its pods are gone (the finalizer check below
            // covers pods it would leave holding the finalizer).
            continue;
        }
        if !finished(j) {
            out.push(format!("{name}: not finished: {s:?}"));
            continue;
        }
        if uncounted > 0 || s.active.unwrap_or(0) > 0 || s.terminating.unwrap_or(0) > 0 {
            out.push(format!(
                "{name}: finished with {uncounted} uncounted, active {:?}, terminating {:?}",
                s.active, s.terminating
            ));
        }
        let complete = s
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Complete" && c.status == "True");
        let spec = j.spec.clone().unwrap_or_default();
        let completions = spec.completions.unwrap_or(1);
        if complete && spec.completion_mode.as_deref() == Some("Indexed") {
            let want = match completions {
                1 => "0".to_owned(),
                2 => "0,1".to_owned(),
                n => format!("0-{}", n - 1),
            };
            if s.completed_indexes.as_deref() != Some(want.as_str()) {
                out.push(format!(
                    "{name}: Complete with completedIndexes {:?}, want {want}",
                    s.completed_indexes
                ));
            }
        } else if complete && s.succeeded.unwrap_or(0) != completions {
            out.push(format!(
                "{name}: Complete with {:?} succeeded of {completions}",
                s.succeeded
            ));
        }
    }
    for p in &pods {
        if p.metadata.finalizers.iter().flatten().any(|f| f == TRACKING) {
            let name = p.metadata.name.clone().unwrap_or_default();
            out.push(format!(
                "pod {name} keeps the tracking finalizer ({:?})",
                p.status.as_ref().and_then(|s| s.phase.clone())
            ));
        }
    }
    if out.is_empty() { Ok(jobs.len()) } else { Err(out) }
}

/// Waits until every Job has finished, counted exactly, and no pod keeps the finalizer; returns the
/// number of Jobs and how long it took.
pub async fn wait_converged(ns: &TestNamespace, timeout: Duration) -> Result<(usize, Duration), String> {
    crate::soak::poll(timeout, || async {
        problems(ns).await.map_err(|p| p.join("\n  "))
    })
    .await
}
