//! Wiring: informers and handlers, the work queue, workers (upstream `ReplicaSetController.Run`),
//! for either kind ([`crate::ReplicaKind`]).

use controller::compact_pod::Pod;
use std::{collections::HashSet, sync::Arc, time::Duration};

use controller::Build;
use controller::Comparison;
use controller::ConsistencyStore;
use controller::Context;
use controller::Controller;
use controller::Decided;
use controller::EventRecorder;
use controller::Expectations;
use controller::Freshness;
use controller::KubePodControl;
use controller::NoWrites;
use controller::Owner;
use controller::PodControl;
use controller::Steps;
use controller::SystemClock;
use controller::Wiring;
use controller::controlled_by;
use controller::pod_candidates;
use controller::pod_util::controller_of;
use controller::shadow::ShadowState;
use informer::{ObjectKey, SharedInformer};
use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::ReplicationController};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use crate::{
    executor::{Executor, GR_PODS, SyncError},
    handlers::{Handlers, PodHandler, ReplicaSetHandler},
    kind::ReplicaKind,
    metrics::{NoReplicaSetMetrics, ReplicaSetMetrics},
    plan::{BURST_REPLICAS, PlanError, SyncInput, SyncPlan, plan_sync_for},
    shadow,
};

/// The work queue's name, the `name` label of the workqueue metrics (upstream: `replicaset`).
pub const QUEUE_NAME: &str = <ReplicaSet as ReplicaKind>::QUEUE_NAME;
/// The events' source component (upstream: `replicaset-controller`).
pub const COMPONENT: &str = <ReplicaSet as ReplicaKind>::COMPONENT;

/// What is this controller's alone; the rest comes with its [`Context`]. Of the feature gates it
/// reads `StaleControllerConsistencyReplicaSet` and those its plan takes ([`ReplicaKind::plan_gates`]).
#[derive(Clone)]
pub struct ReplicaSetOptions {
    /// Pod creations or deletions one sync makes at most (upstream `BurstReplicas`).
    pub burst_replicas: usize,
    /// Where the scale-down's age ratio goes.
    pub metrics: Arc<dyn ReplicaSetMetrics>,
    /// Testing only (shadow mode's self-check): plan as if minReadySeconds were 0.
    pub ignore_min_ready_seconds: bool,
}

impl Default for ReplicaSetOptions {
    fn default() -> Self {
        Self {
            burst_replicas: BURST_REPLICAS,
            metrics: Arc::new(NoReplicaSetMetrics),
            ignore_min_ready_seconds: false,
        }
    }
}

impl std::fmt::Debug for ReplicaSetOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaSetOptions")
            .field("burst_replicas", &self.burst_replicas)
            .field("ignore_min_ready_seconds", &self.ignore_min_ready_seconds)
            .finish_non_exhaustive()
    }
}

/// The ReplicaSet controller; over ReplicationControllers, upstream's replication manager
/// ([`ReplicationManager`]).
pub struct ReplicaSetController<P, K: ReplicaKind = ReplicaSet> {
    wiring: Wiring,
    handlers: Handlers<K>,
    replica_sets: SharedInformer<K>,
    pods: SharedInformer<Pod>,
    executor: Executor<P, K>,
    features: controller::features::FeatureGates,
    options: ReplicaSetOptions,
    /// Set in shadow mode: plans are compared with what upstream did instead of executed.
    shadow: Option<Arc<ShadowState>>,
}

/// The ReplicationController controller: the ReplicaSet controller over ReplicationControllers, as
/// upstream's `ReplicationManager` is its base controller behind conversion adapters.
pub type ReplicationManager<P> = ReplicaSetController<P, ReplicationController>;

impl<P, K: ReplicaKind> std::fmt::Debug for ReplicaSetController<P, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(K::COMPONENT)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<K: ReplicaKind> Build for ReplicaSetController<KubePodControl, K> {
    type Options = ReplicaSetOptions;
    type Shadow = ReplicaSetController<NoWrites, K>;

    /// A controller writing through the context's client, reading the shared informers.
    fn build(cx: Context<'_>, options: ReplicaSetOptions) -> Self {
        let recorder = cx.recorder(K::COMPONENT);
        let control = KubePodControl::new(cx.client.clone(), recorder.clone());
        Self::with_control(cx, control, recorder, options)
    }

    /// It plans every sync and records in `state` where the plan disagrees with what upstream's
    /// controller did. Nothing here can write.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: ReplicaSetOptions) -> Self::Shadow {
        let options = ReplicaSetOptions {
            metrics: Arc::new(NoReplicaSetMetrics),
            ..options
        };
        let mut c = ReplicaSetController::with_control(cx, NoWrites, EventRecorder::in_memory(), options);
        c.shadow = Some(state);
        c
    }
}

impl<P: PodControl, K: ReplicaKind> ReplicaSetController<P, K> {
    /// A controller writing pods through `control` and events to `recorder`.
    pub fn with_control(
        cx: Context<'_>,
        control: P,
        recorder: EventRecorder,
        options: ReplicaSetOptions,
    ) -> Self {
        let replica_sets = cx.owned_informer::<K>();
        let pods = cx.owned_informer::<Pod>();
        let expectations = Arc::new(Expectations::new());
        let consistency = Arc::new(ConsistencyStore::gated(
            K::CONSISTENCY_RESOURCE.is_some() && cx.options.features.stale_controller_consistency_replica_set,
        ));
        let (queue, wiring) = cx.wiring(K::QUEUE_NAME);
        let handlers = Handlers {
            replica_sets: replica_sets.lister(),
            expectations: expectations.clone(),
            consistency: consistency.clone(),
            queue,
        };
        let mut wiring = wiring.with_events(recorder.clone());
        wiring.watch(&replica_sets, ReplicaSetHandler(handlers.clone()));
        wiring.watch(&pods, PodHandler(handlers.clone()));
        let executor = Executor {
            control,
            client: cx.client,
            expectations,
            clock: Arc::new(SystemClock),
            consistency,
            kind: std::marker::PhantomData,
        };
        Self {
            wiring,
            handlers,
            replica_sets,
            pods,
            executor,
            features: cx.options.features,
            options,
            shadow: None,
        }
    }

    /// The object as the plan sees it: a ReplicaSet (a ReplicationController converted), with shadow
    /// mode's perturbation applied. Made once a sync and carried in its [`Planned`].
    fn view(&self, obj: &Arc<K>) -> Arc<ReplicaSet> {
        let view = obj.shared_view();
        if !self.options.ignore_min_ready_seconds {
            return view;
        }
        let mut rs = Arc::unwrap_or_clone(view);
        if let Some(spec) = rs.spec.as_mut() {
            spec.min_ready_seconds = Some(0);
        }
        Arc::new(rs)
    }

    /// Pods selected by every object with the same controller as `obj`, each once (upstream
    /// `getIndirectlyRelatedPods`). Empty for one without a controller, and for a kind that does
    /// not rank by them ([`ReplicaKind::RANKS_BY_RELATED_PODS`]).
    fn related_pods(&self, obj: &K) -> Vec<Arc<Pod>> {
        if !K::RANKS_BY_RELATED_PODS {
            return Vec::new();
        }
        let Some(owner) = controller_of(obj.meta()) else {
            return Vec::new();
        };
        let siblings = controlled_by(self.replica_sets.store(), &owner.uid);
        let mut seen = HashSet::new();
        let mut related = Vec::new();
        for sibling in siblings {
            let Ok(matcher) = sibling.selector() else { continue };
            let ns = sibling.meta().namespace.as_deref().unwrap_or_default();
            for pod in self.pods.lister().list_namespace(ns, &matcher) {
                if seen.insert(pod.metadata.uid.clone()) {
                    related.push(pod);
                }
            }
        }
        related
    }
}

impl<P: PodControl, K: ReplicaKind> Controller for ReplicaSetController<P, K> {
    const NAME: &'static str = K::COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

/// A plan, with what it was made from.
#[derive(Debug)]
pub struct Planned<K> {
    obj: Arc<K>,
    /// `obj` as the plan saw it (`view`).
    view: Arc<ReplicaSet>,
    candidates: Vec<Arc<Pod>>,
    plan: SyncPlan,
    now: Timestamp,
    started: Instant,
}

impl<P: PodControl, K: ReplicaKind> Steps for ReplicaSetController<P, K> {
    const NAME: &'static str = K::COMPONENT;
    type Object = K;
    type Plan = Planned<K>;
    type Error = SyncError;

    /// Read our own writes: skip (and retry later) while a cache is older than what we wrote
    /// (gate `StaleControllerConsistencyReplicaSet`; upstream uses a no-op store without it).
    fn ensure_fresh(&self, key: &ObjectKey) -> Result<Freshness, SyncError> {
        let Some(own) = K::CONSISTENCY_RESOURCE else {
            return Ok(Freshness::Fresh);
        };
        if !self.features.stale_controller_consistency_replica_set {
            return Ok(Freshness::Fresh);
        }
        self.wiring
            .ensure_fresh(&self.executor.consistency, key, |gr| match gr {
                GR_PODS => self.pods.last_synced_resource_version_in(key.namespace()),
                gr if gr == own => self.replica_sets.last_synced_resource_version_in(key.namespace()),
                _ => u64::MAX,
            })
            .map(|()| Freshness::Fresh)
            .map_err(|source| SyncError::Stale {
                key: key.clone(),
                source,
            })
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.handlers.replica_sets.get(key.namespace(), key.name())
    }

    fn forget(&self, key: &ObjectKey) {
        self.handlers.expectations.delete(key.as_str());
        self.executor.consistency.clear(key.as_str());
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_deref()
    }

    fn client(&self) -> &kube::Client {
        &self.executor.client
    }

    /// Upstream `syncReplicaSet` up to `manageReplicas`: a selector that does not parse is told in
    /// an event and not retried.
    fn decide(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Decided<Planned<K>>, SyncError> {
        let started = Instant::now();
        let view = self.view(&obj);
        let satisfied = self.handlers.expectations.satisfied(key.as_str());
        let candidates = pod_candidates(self.pods.store(), &*obj);
        let now = self.executor.clock.now();
        let input = SyncInput {
            rs: &view,
            expectations_satisfied: satisfied,
            candidates: &candidates,
            burst_replicas: self.options.burst_replicas,
            now,
            features: K::plan_gates(self.features),
        };
        let owner = Owner::of(&*obj);
        let plan = match plan_sync_for(&input, owner.clone(), || self.related_pods(&obj)) {
            Ok(plan) => plan,
            Err(e @ PlanError::InvalidSelector { .. }) => {
                // As upstream: logged, not retried, and told in no event; only a change to the
                // object fixes it.
                tracing::error!(replica_set = %key, "{e}");
                return Ok(Decided::Nothing(None));
            }
        };
        Ok(Decided::Plan(Planned {
            obj,
            view,
            candidates,
            plan,
            now,
            started,
        }))
    }

    fn compare(&self, _: &ObjectKey, p: Planned<K>) -> Comparison {
        Comparison {
            differences: shadow::differences(&p.view, &p.plan),
            fingerprint: controller::shadow::fingerprint(&*p.obj, &p.candidates),
            again: None,
        }
    }

    async fn claim(&self, key: &ObjectKey, p: &Planned<K>) -> Result<Vec<String>, SyncError> {
        self.executor.claim(key, &p.plan).await
    }

    fn without(
        &self,
        _: &ObjectKey,
        p: Planned<K>,
        gone: &[String],
    ) -> Result<Decided<Planned<K>>, SyncError> {
        let plan = p.plan.without(&p.view, gone);
        Ok(Decided::Plan(Planned { plan, ..p }))
    }

    async fn execute(&self, key: &ObjectKey, p: Planned<K>) -> Result<Option<Duration>, SyncError> {
        if let crate::plan::ReplicaChange::Delete(chosen) = &p.plan.replicas.change
            && chosen.len() < p.plan.replicas.active.len()
        {
            for ratio in crate::plan::deletion_age_ratios(&p.plan.replicas.active, chosen, p.now) {
                self.options.metrics.sorting_deletion_age_ratio(ratio);
            }
        }
        let result = self.executor.execute(key, &*p.obj, &p.view, p.plan).await;
        tracing::debug!(replica_set = %key, elapsed = ?p.started.elapsed(), "finished syncing");
        result
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
