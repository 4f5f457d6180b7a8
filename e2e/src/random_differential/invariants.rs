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
use k8s_openapi::api::core::v1::Pod;
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
        /// replicas + maxSurge: the most live pods allowed.
        ceiling: i32,
    },
    Job {
        /// The largest parallelism in force during the step.
        max_active: i32,
        indexed: bool,
    },
}

/// What the checks need to know of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// Neither terminal nor being deleted: it takes a replica's (or a Job's parallelism's) place.
    pub live: bool,
    /// Ready and live. Ready bounds available from above whatever minReadySeconds is, so a count
    /// of Ready pods below the floor is a real violation.
    pub ready: bool,
    pub index: Option<String>,
}

impl PodView {
    pub fn of(p: &Pod) -> PodView {
        let phase = crate::pods::phase(p);
        let live = p.metadata.deletion_timestamp.is_none() && !matches!(phase, "Succeeded" | "Failed");
        let ready = live && crate::pods::is_ready(p);
        let index = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(super::projection::INDEX))
            .cloned();
        PodView { live, ready, index }
    }
}

/// Most violations kept per step: one broken bound fires on many events.
const KEPT_PER_STEP: usize = 5;

/// The pods as the watch has shown them so far, the bounds of the current step, and what broke them.
#[derive(Debug, Default)]
pub struct Checker {
    pods: HashMap<String, PodView>,
    created: BTreeSet<String>,
    step: usize,
    bounds: Bounds,
    kept: usize,
    pub violations: Vec<String>,
}

impl Checker {
    pub fn begin(&mut self, step: usize, bounds: Bounds) {
        (self.step, self.bounds, self.kept) = (step, bounds, 0);
    }

    /// Applies one watch event (`None`: the pod is gone) and checks the state it leads to.
    pub fn observe(&mut self, uid: &str, pod: Option<PodView>) {
        match pod {
            Some(v) => {
                self.created.insert(uid.to_owned());
                self.pods.insert(uid.to_owned(), v);
            }
            None => {
                self.pods.remove(uid);
            }
        }
        for v in self.broken() {
            if self.kept < KEPT_PER_STEP {
                self.violations.push(format!("step {}: {v}", self.step));
                self.kept += 1;
            }
        }
    }

    /// Pods that ever existed, including those already gone.
    pub fn created(&self) -> usize {
        self.created.len()
    }

    fn broken(&self) -> Vec<String> {
        let live = self.pods.values().filter(|p| p.live).count();
        let ready = self.pods.values().filter(|p| p.ready).count();
        let mut out = Vec::new();
        match self.bounds {
            Bounds::None => {}
            Bounds::Deployment { floor, ceiling } => {
                if let Some(f) = floor
                    && i32::try_from(ready).unwrap_or(i32::MAX) < f
                {
                    out.push(format!(
                        "{ready} pods Ready during a rolling update, below replicas − maxUnavailable = {f}"
                    ));
                }
                if i32::try_from(live).unwrap_or(i32::MAX) > ceiling {
                    out.push(format!("{live} live pods, above replicas + maxSurge = {ceiling}"));
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
        out
    }
}

/// A [`Checker`] fed by a pod informer on the program's namespace.
#[derive(Debug)]
pub struct Watcher {
    checker: Arc<Mutex<Checker>>,
    cancel: CancellationToken,
}

impl Watcher {
    pub async fn start(ns: &TestNamespace) -> Watcher {
        let factory =
            SharedInformerFactory::new(ns.cluster.client.clone()).with_namespaces(vec![ns.name.clone()]);
        let pods = factory.namespaced::<Pod>(InformerOptions::default());
        let checker: Arc<Mutex<Checker>> = Arc::default();
        let (on_add, on_update, on_delete) = (checker.clone(), checker.clone(), checker.clone());
        let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
        let reg = pods.add_event_handler(
            HandlerFns::new()
                .on_add(move |p: &Arc<Pod>, _| on_add.lock().observe(&uid(p), Some(PodView::of(p))))
                .on_update(move |_, p: &Arc<Pod>| {
                    on_update.lock().observe(&uid(p), Some(PodView::of(p)));
                })
                .on_delete(move |p| on_delete.lock().observe(&uid(p.object()), None)),
            None,
        );
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        assert!(
            wait_for_cache_sync(&cancel, &[&reg]).await,
            "the pod informer synced"
        );
        Watcher { checker, cancel }
    }

    pub fn begin(&self, step: usize, bounds: Bounds) {
        self.checker.lock().begin(step, bounds);
    }

    pub fn created(&self) -> usize {
        self.checker.lock().created()
    }

    /// The violations seen so far, taken.
    pub fn take_violations(&self) -> Vec<String> {
        std::mem::take(&mut self.checker.lock().violations)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(live: bool, ready: bool, index: Option<&str>) -> Option<PodView> {
        Some(PodView {
            live,
            ready,
            index: index.map(str::to_owned),
        })
    }

    /// replicas 4, maxSurge 1, maxUnavailable 1: a rollout that deletes two old pods before the
    /// first new one is Ready dips to 2 Ready pods, below the floor of 3; the check sees the event
    /// that did it although the end state is fine.
    #[test]
    fn a_rollout_below_its_availability_floor_is_caught_on_the_event() {
        let mut c = Checker::default();
        for i in 0..4 {
            c.observe(&format!("old-{i}"), pod(true, true, None));
        }
        c.begin(
            3,
            Bounds::Deployment {
                floor: Some(3),
                ceiling: 5,
            },
        );
        c.observe("new-0", pod(true, false, None));
        c.observe("old-0", pod(false, false, None));
        assert!(c.violations.is_empty(), "3 Ready, 4 live: within bounds");
        c.observe("old-1", pod(false, false, None));
        assert_eq!(c.violations.len(), 1);
        assert!(
            c.violations[0].starts_with("step 3: 2 pods Ready"),
            "{:?}",
            c.violations
        );
        c.observe("new-0", pod(true, true, None));
        c.observe("old-0", None);
        c.observe("old-1", None);
        c.observe("new-1", pod(true, true, None));
        assert_eq!(c.violations.len(), 1, "back above the floor");
        assert_eq!(c.created(), 6);
    }

    #[test]
    fn a_surge_beyond_max_surge_is_caught() {
        let mut c = Checker::default();
        c.begin(
            1,
            Bounds::Deployment {
                floor: None,
                ceiling: 3,
            },
        );
        for i in 0..3 {
            c.observe(&format!("p{i}"), pod(true, true, None));
        }
        assert!(c.violations.is_empty());
        c.observe("p3", pod(true, false, None));
        assert!(c.violations[0].contains("4 live pods, above replicas + maxSurge = 3"));
    }

    #[test]
    fn a_second_live_pod_for_an_index_is_caught_a_terminating_one_is_not() {
        let mut c = Checker::default();
        c.begin(
            2,
            Bounds::Job {
                max_active: 2,
                indexed: true,
            },
        );
        c.observe("a", pod(true, true, Some("0")));
        c.observe("b", pod(true, true, Some("1")));
        c.observe("a", pod(false, false, Some("0")));
        c.observe("c", pod(true, false, Some("0")));
        assert!(c.violations.is_empty(), "{:?}", c.violations);
        c.observe("d", pod(true, false, Some("1")));
        assert_eq!(c.violations.len(), 2, "{:?}", c.violations);
        assert!(
            c.violations
                .iter()
                .any(|v| v.contains("3 live pods, above parallelism 2"))
        );
        assert!(c.violations.iter().any(|v| v.contains("for completion index 1")));
    }

    #[test]
    fn violations_are_capped_per_step() {
        let mut c = Checker::default();
        c.begin(
            0,
            Bounds::Job {
                max_active: 0,
                indexed: false,
            },
        );
        for i in 0..20 {
            c.observe(&format!("p{i}"), pod(true, true, None));
        }
        assert_eq!(c.violations.len(), KEPT_PER_STEP);
        c.begin(1, Bounds::None);
        c.observe("p0", pod(true, true, None));
        assert_eq!(c.violations.len(), KEPT_PER_STEP);
    }
}
