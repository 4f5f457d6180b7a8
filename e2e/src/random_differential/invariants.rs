//! What must hold at every instant of a program, under either controller: checked on each pod watch
//! event, not on snapshots, because a rollout that dips below its availability floor or a controller
//! that creates a pod twice is back in order by the time a step has settled.
//!
//! The watch is a shared informer ([`SharedInformerFactory`]), which re-watches from its
//! resourceVersion when the API server closes a watch; its handler keeps its own copy of the pods,
//! updated event by event, so every state the watch goes through is checked (the informer's store
//! may already be ahead of the event being handled).

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use informer::{HandlerFns, InformerOptions, SharedInformerFactory, wait_for_cache_sync};
use k8s_openapi::api::{apps::v1::ReplicaSet, batch::v1::Job, core::v1::Pod};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::TestNamespace;

/// The bounds of the step being run; one object per program, so every pod in the namespace is its.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bounds {
    /// Nothing checked (a Deployment's ReplicaSet deleted: its pods outlive it until the garbage
    /// collector gets to them while the new ReplicaSet's are created).
    #[default]
    None,
    Deployment {
        /// replicas − maxUnavailable: the fewest Ready pods allowed; `None` unless the step only
        /// changes the template of a rolling Deployment that started fully available.
        floor: Option<i32>,
        /// replicas + maxSurge: the most replicas the ReplicaSets' specs may add up to. Live pods
        /// above it are only noted: upstream exceeds it too for as long as a scaled-down
        /// ReplicaSet's pod waits for its controller's delete while the new ReplicaSet's pod is
        /// created, which is timing, not a difference (and a pod created twice shows in the
        /// projection's count of pods ever created).
        ceiling: i32,
    },
    Job {
        /// The largest parallelism in force during the step.
        max_active: i32,
        indexed: bool,
    },
    CronJob {
        /// The step unsuspends the CronJob: only then may a scheduled Job appear.
        running: bool,
        /// Forbid or Replace: a scheduled Job may not appear beside another unfinished one.
        single: bool,
    },
}

/// What the checks need to know of a Job: whether the schedule started it (not a manual one), and
/// whether it is still running (unfinished, not being deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobView {
    pub scheduled: bool,
    pub running: bool,
}

impl JobView {
    pub fn of(j: &Job) -> JobView {
        let finished = j
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True");
        JobView {
            scheduled: super::cronjob_outcome::scheduled(j),
            running: !finished && j.metadata.deletion_timestamp.is_none(),
        }
    }
}

/// What the checks need to know of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// Neither terminal nor being deleted: it takes a replica's (or a Job's parallelism's) place.
    pub live: bool,
    /// Ready and live. Ready bounds available from above whatever minReadySeconds is, so a count
    /// of Ready pods below the floor is a real violation.
    pub ready: bool,
    /// Has a deletionTimestamp.
    pub deleting: bool,
    pub index: Option<String>,
}

impl PodView {
    pub fn of(p: &Pod) -> PodView {
        let phase = crate::pods::phase(p);
        let deleting = p.metadata.deletion_timestamp.is_some();
        let live = !deleting && !matches!(phase, "Succeeded" | "Failed");
        let ready = live && crate::pods::is_ready(p);
        let index = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(super::projection::INDEX))
            .cloned();
        PodView {
            live,
            ready,
            deleting,
            index,
        }
    }
}

/// Most violations kept per step: one broken bound fires on many events.
const KEPT_PER_STEP: usize = 5;

/// The pods as the watch has shown them so far, the bounds of the current step, and what broke them.
#[derive(Debug, Default)]
pub struct Checker {
    pods: HashMap<String, PodView>,
    /// ReplicaSets not being deleted, by UID: their spec.replicas.
    replica_sets: HashMap<String, i32>,
    /// A CronJob's Jobs, by UID.
    jobs: HashMap<String, JobView>,
    created: BTreeSet<String>,
    step: usize,
    bounds: Bounds,
    kept: usize,
    pub violations: Vec<String>,
    /// Bounds upstream does not keep either (printed, never a failure).
    pub notes: Vec<String>,
    noted: usize,
    /// Completion indexes of the live pods deleted during the current step (a scale-down's
    /// removal, checked by [`super::ranking`]).
    deleted: Vec<String>,
}

impl Checker {
    pub fn begin(&mut self, step: usize, bounds: Bounds) {
        (self.step, self.bounds, self.kept, self.noted) = (step, bounds, 0, 0);
        self.deleted.clear();
    }

    /// Applies one watch event (`None`: the pod is gone) and checks the state it leads to.
    pub fn observe(&mut self, uid: &str, pod: Option<PodView>) {
        let was_live = self.pods.get(uid).filter(|p| p.live).map(|p| p.index.clone());
        // A re-list can drop the update that set the deletionTimestamp: gone counts as deleted.
        if let Some(index) = was_live
            && pod.as_ref().is_none_or(|p| p.deleting)
        {
            self.deleted.push(index.unwrap_or_else(|| "?".into()));
        }
        match pod {
            Some(v) => {
                self.created.insert(uid.to_owned());
                self.pods.insert(uid.to_owned(), v);
            }
            None => {
                self.pods.remove(uid);
            }
        }
        self.check();
    }

    /// Applies one ReplicaSet watch event: its spec.replicas, `None` once gone or being deleted.
    pub fn observe_replica_set(&mut self, uid: &str, replicas: Option<i32>) {
        match replicas {
            Some(n) => self.replica_sets.insert(uid.to_owned(), n),
            None => self.replica_sets.remove(uid),
        };
        self.check();
    }

    /// Applies one Job watch event (`None`: gone); a scheduled Job seen for the first time is
    /// checked against the CronJob's bounds, at the instant it appears.
    pub fn observe_job(&mut self, uid: &str, job: Option<JobView>) {
        let Some(v) = job else {
            self.jobs.remove(uid);
            return;
        };
        let new = self.jobs.insert(uid.to_owned(), v).is_none();
        let Bounds::CronJob { running, single } = self.bounds else {
            return;
        };
        if !(new && v.scheduled) {
            return;
        }
        let mut out = Vec::new();
        if !running {
            out.push("a scheduled Job created while the CronJob was suspended".to_owned());
        }
        let others = self
            .jobs
            .iter()
            .filter(|(u, j)| u.as_str() != uid && j.scheduled && j.running)
            .count();
        if single && others > 0 {
            out.push(format!(
                "a scheduled Job created beside {others} running, under Forbid or Replace"
            ));
        }
        self.keep(out, Vec::new());
    }

    fn check(&mut self) {
        let (broken, noted) = self.broken();
        self.keep(broken, noted);
    }

    fn keep(&mut self, broken: Vec<String>, noted: Vec<String>) {
        for v in broken {
            if self.kept < KEPT_PER_STEP {
                self.violations.push(format!("step {}: {v}", self.step));
                self.kept += 1;
            }
        }
        for v in noted {
            if self.noted < KEPT_PER_STEP {
                self.notes.push(format!("step {}: {v}", self.step));
                self.noted += 1;
            }
        }
    }

    /// Pods that ever existed, including those already gone.
    pub fn created(&self) -> usize {
        self.created.len()
    }

    /// The completion indexes of the live pods deleted during the current step, sorted.
    pub fn deleted(&self) -> Vec<String> {
        let mut d = self.deleted.clone();
        d.sort();
        d
    }

    /// What breaks the bounds now: violations, then what is only noted.
    fn broken(&self) -> (Vec<String>, Vec<String>) {
        let live = self.pods.values().filter(|p| p.live).count();
        let ready = self.pods.values().filter(|p| p.ready).count();
        let mut out = Vec::new();
        let mut notes = Vec::new();
        match self.bounds {
            Bounds::None | Bounds::CronJob { .. } => {}
            Bounds::Deployment { floor, ceiling } => {
                if let Some(f) = floor
                    && i32::try_from(ready).unwrap_or(i32::MAX) < f
                {
                    out.push(format!(
                        "{ready} pods Ready during a rolling update, below replicas − maxUnavailable = {f}"
                    ));
                }
                let specs: i32 = self.replica_sets.values().sum();
                if specs > ceiling {
                    out.push(format!(
                        "the ReplicaSets' replicas add up to {specs}, above replicas + maxSurge = {ceiling}"
                    ));
                }
                if i32::try_from(live).unwrap_or(i32::MAX) > ceiling {
                    notes.push(format!("{live} live pods, above replicas + maxSurge = {ceiling}"));
                }
            }
            Bounds::Job { max_active, indexed } => {
                if i32::try_from(live).unwrap_or(i32::MAX) > max_active {
                    out.push(format!("{live} live pods, above parallelism {max_active}"));
                }
                if indexed {
                    let mut per_index: BTreeMap<&str, usize> = BTreeMap::new();
                    for p in self.pods.values().filter(|p| p.live) {
                        *per_index.entry(p.index.as_deref().unwrap_or("?")).or_default() += 1;
                    }
                    for (i, n) in per_index.into_iter().filter(|(_, n)| *n > 1) {
                        out.push(format!("{n} live pods for completion index {i}"));
                    }
                }
            }
        }
        (out, notes)
    }
}

/// A [`Checker`] fed by pod, ReplicaSet and Job informers on the program's namespace.
#[derive(Debug)]
pub struct Watcher {
    checker: Arc<Mutex<Checker>>,
    cancel: CancellationToken,
}

impl Watcher {
    pub async fn start(ns: &TestNamespace) -> Watcher {
        let factory =
            SharedInformerFactory::new(ns.cluster.client.clone()).with_namespaces(vec![ns.name.clone()]);
        let checker: Arc<Mutex<Checker>> = Arc::default();
        let reg = feed(
            &factory,
            &checker,
            |p: &Pod| Some(PodView::of(p)),
            Checker::observe,
        );
        let rs_reg = feed(
            &factory,
            &checker,
            |rs: &ReplicaSet| {
                let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                rs.metadata.deletion_timestamp.is_none().then_some(replicas)
            },
            Checker::observe_replica_set,
        );
        let job_reg = feed(
            &factory,
            &checker,
            |j: &Job| Some(JobView::of(j)),
            Checker::observe_job,
        );
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        assert!(
            wait_for_cache_sync(&cancel, &[&reg, &rs_reg, &job_reg]).await,
            "the pod, ReplicaSet and Job informers synced"
        );
        Watcher { checker, cancel }
    }

    pub fn begin(&self, step: usize, bounds: Bounds) {
        self.checker.lock().begin(step, bounds);
    }

    pub fn created(&self) -> usize {
        self.checker.lock().created()
    }

    pub fn deleted(&self) -> Vec<String> {
        self.checker.lock().deleted()
    }

    /// The violations seen so far, taken.
    pub fn take_violations(&self) -> Vec<String> {
        std::mem::take(&mut self.checker.lock().violations)
    }

    /// The notes so far, taken.
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.checker.lock().notes)
    }
}

/// An informer on `K` whose every event is handed to the checker: the object's UID and what `view`
/// makes of it (`None` once it is gone).
fn feed<K: informer::Namespaced, V: 'static>(
    factory: &SharedInformerFactory,
    checker: &Arc<Mutex<Checker>>,
    view: fn(&K) -> Option<V>,
    apply: fn(&mut Checker, &str, Option<V>),
) -> informer::HandlerRegistration {
    let uid = |o: &K| o.meta().uid.clone().unwrap_or_default();
    let (on_add, on_update, on_delete) = (checker.clone(), checker.clone(), checker.clone());
    factory
        .namespaced::<K>(InformerOptions::default())
        .add_event_handler(
            HandlerFns::new()
                .on_add(move |o: &Arc<K>, _| apply(&mut on_add.lock(), &uid(o), view(o)))
                .on_update(move |_, o: &Arc<K>| apply(&mut on_update.lock(), &uid(o), view(o)))
                .on_delete(move |o| apply(&mut on_delete.lock(), &uid(o.object()), None)),
            None,
        )
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
#[path = "invariants_tests.rs"]
mod tests;
