//! Wiring: informers and handlers, the work queue, workers (upstream `ReplicaSetController.Run`).

use controller::compact_pod::Pod;
use std::{collections::HashSet, future::Future, sync::Arc, time::Duration};

use controller::{
    EventRecorder, Expectations, KubePodControl, PodControl, SystemClock,
    consistency::ConsistencyStore,
    events::TYPE_WARNING,
    index::{POD_OWNER_INDEX, orphans_in, owned_by, pod_owner_index},
    pod_control::NoWrites,
    pod_control::object_reference,
    pod_util::controller_of,
    shadow::ShadowState,
    worker::{DEFAULT_DRAIN_TIMEOUT, Reconciler, WorkerOptions, run_workers},
};
use informer::{
    HandlerRegistration, HasSynced, InformerOptions, MetricsProvider, ObjectKey, SharedInformer,
    SharedInformerFactory, SyncMetrics, WorkQueue,
    store::{CONTROLLER_UID_INDEX, controller_uid_index},
    wait_for_cache_sync,
};
use k8s_openapi::api::apps::v1::ReplicaSet;
use kube::Client;
use tokio_util::sync::CancellationToken;

use crate::{
    executor::{Executor, GR_PODS, GR_REPLICASETS, SyncError},
    handlers::{Handlers, PodHandler, ReplicaSetHandler},
    plan::{BURST_REPLICAS, PlanError, SyncInput, owner, plan_sync, selector},
    shadow,
};

/// Workers per controller (kube-controller-manager `--concurrent-replicaset-syncs` default).
pub const DEFAULT_WORKERS: usize = 5;
/// The work queue's name, the `name` label of the workqueue metrics (upstream: `replicaset`).
pub const QUEUE_NAME: &str = "replicaset";
/// The events' source component (upstream: `replicaset-controller`).
pub const COMPONENT: &str = "replicaset-controller";
/// Event reason for a ReplicaSet whose selector cannot be parsed. Upstream only logs this case.
pub const REASON_INVALID_SELECTOR: &str = "InvalidSelector";

#[derive(Debug, Clone)]
pub struct ReplicaSetOptions {
    pub workers: usize,
    pub burst_replicas: usize,
    /// Testing only (shadow mode's self-check): plan as if minReadySeconds were 0.
    pub ignore_min_ready_seconds: bool,
    /// This process's identity, written as the reportingInstance of its events.
    pub instance: String,
    /// The feature gates the controller reads (`--feature-gates`; default: Kubernetes 1.36's).
    pub features: controller::features::FeatureGates,
    /// How often every cached ReplicaSet and pod is redelivered to the handlers, so that a
    /// ReplicaSet waiting on an expectation an event never lowered is synced again (KCM's factory:
    /// `--min-resync-period` × [1, 2), drawn once). `None`: no resync.
    pub resync_period: Option<Duration>,
}

impl Default for ReplicaSetOptions {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            burst_replicas: BURST_REPLICAS,
            ignore_min_ready_seconds: false,
            instance: COMPONENT.to_owned(),
            features: controller::features::FeatureGates::default(),
            resync_period: None,
        }
    }
}

/// The ReplicaSet controller.
pub struct ReplicaSetController<P> {
    handlers: Handlers,
    replica_sets: SharedInformer<ReplicaSet>,
    pods: SharedInformer<Pod>,
    registrations: Vec<HandlerRegistration>,
    executor: Executor<P>,
    recorder: EventRecorder,
    options: ReplicaSetOptions,
    sync_metrics: Arc<dyn SyncMetrics>,
    /// Set in shadow mode: plans are compared with what upstream did instead of executed.
    shadow: Option<Arc<ShadowState>>,
}

impl<P> std::fmt::Debug for ReplicaSetController<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaSetController")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ReplicaSetController<NoWrites> {
    /// A read-only controller for shadow mode: it plans every sync and records in `state` where the
    /// plan disagrees with what upstream's controller did. Nothing here can write.
    pub fn shadow(
        factory: &SharedInformerFactory,
        client: Client,
        state: Arc<ShadowState>,
        options: ReplicaSetOptions,
        metrics: &dyn MetricsProvider,
    ) -> Self {
        let mut c = Self::with_control(
            factory,
            client,
            NoWrites,
            EventRecorder::in_memory(),
            options,
            metrics,
        );
        c.shadow = Some(state);
        c
    }
}

impl ReplicaSetController<KubePodControl> {
    /// A controller writing through `client`, reading through `factory`'s shared informers.
    pub fn new(
        factory: &SharedInformerFactory,
        client: Client,
        options: ReplicaSetOptions,
        metrics: &dyn MetricsProvider,
    ) -> Self {
        let recorder = EventRecorder::new(client.clone(), COMPONENT, &options.instance);
        let control = KubePodControl::new(client.clone(), recorder.clone());
        Self::with_control(factory, client, control, recorder, options, metrics)
    }
}

impl<P: PodControl> ReplicaSetController<P> {
    pub fn with_control(
        factory: &SharedInformerFactory,
        client: Client,
        control: P,
        recorder: EventRecorder,
        options: ReplicaSetOptions,
        metrics: &dyn MetricsProvider,
    ) -> Self {
        let replica_sets = factory.namespaced::<ReplicaSet>(InformerOptions::default());
        let pods = factory.namespaced::<Pod>(InformerOptions::default());
        replica_sets
            .store()
            .add_index(CONTROLLER_UID_INDEX, controller_uid_index());
        pods.store().add_index(POD_OWNER_INDEX, pod_owner_index());
        let expectations = Arc::new(Expectations::new());
        let handlers = Handlers {
            replica_sets: replica_sets.lister(),
            expectations: expectations.clone(),
            queue: WorkQueue::named(QUEUE_NAME, metrics),
        };
        let registrations = vec![
            replica_sets.add_event_handler(ReplicaSetHandler(handlers.clone()), options.resync_period),
            pods.add_event_handler(PodHandler(handlers.clone()), options.resync_period),
        ];
        let consistency = Arc::new(ConsistencyStore::new());
        let executor = Executor {
            control,
            client,
            expectations,
            clock: Arc::new(SystemClock),
            consistency,
        };
        let sync_metrics = metrics.sync_metrics(QUEUE_NAME);
        Self {
            handlers,
            replica_sets,
            pods,
            registrations,
            executor,
            recorder,
            options,
            sync_metrics,
            shadow: None,
        }
    }

    /// Whether every handler has seen its informer's initial contents.
    pub fn has_synced(&self) -> bool {
        self.registrations.iter().all(HandlerRegistration::has_synced)
    }

    /// Runs the workers until `cancel` fires, then lets in-flight syncs finish (bounded by
    /// [`DEFAULT_DRAIN_TIMEOUT`]).
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let synced: Vec<&dyn HasSynced> = self.registrations.iter().map(|r| r as &dyn HasSynced).collect();
        if !wait_for_cache_sync(&cancel, &synced).await {
            return;
        }
        tracing::info!(
            controller = COMPONENT,
            workers = self.options.workers,
            "caches synced; starting workers"
        );
        let options = WorkerOptions {
            workers: self.options.workers,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        };
        let queue = self.handlers.queue.clone();
        let metrics = self.sync_metrics.clone();
        run_workers(COMPONENT, self, queue, metrics, options, cancel).await;
        tracing::info!(controller = COMPONENT, "stopped");
    }

    /// One sync of the ReplicaSet at `key` (upstream `syncReplicaSet`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, SyncError> {
        let started = tokio::time::Instant::now();
        let Some(mut rs) = self.handlers.replica_sets.get(key.namespace(), key.name()) else {
            self.handlers.expectations.delete(key.as_str());
            self.executor.consistency.clear(key.as_str());
            if let Some(state) = &self.shadow {
                state.forget(COMPONENT, key.as_str());
            }
            return Ok(None);
        };
        // Read our own writes: skip (and retry later) while a cache is older than what we wrote
        // (gate `StaleControllerConsistencyReplicaSet`; upstream uses a no-op store without it).
        let fresh = if self.options.features.stale_controller_consistency_replica_set {
            self.executor
                .consistency
                .ensure_ready(key.as_str(), |gr| match gr {
                    GR_PODS => self.pods.last_synced_resource_version(),
                    GR_REPLICASETS => self.replica_sets.last_synced_resource_version(),
                    _ => u64::MAX,
                })
        } else {
            Ok(())
        };
        if let Err(source) = fresh {
            let (resource, group) = source
                .group_resource
                .split_once('.')
                .unwrap_or((source.group_resource, ""));
            self.sync_metrics.stale_sync_skip(group, resource);
            return Err(SyncError::Stale {
                key: key.clone(),
                source,
            });
        }
        if self.options.ignore_min_ready_seconds
            && let Some(spec) = Arc::make_mut(&mut rs).spec.as_mut()
        {
            spec.min_ready_seconds = Some(0);
        }
        let satisfied = self.handlers.expectations.satisfied(key.as_str());
        let candidates = self.candidates(&rs);
        let input_now = self.executor.clock.now();
        let input = SyncInput {
            rs: &rs,
            expectations_satisfied: satisfied,
            candidates: &candidates,
            burst_replicas: self.options.burst_replicas,
            now: input_now,
            features: self.options.features,
        };
        let plan = match plan_sync(&input, || self.related_pods(&rs)) {
            Ok(plan) => plan,
            Err(e @ PlanError::InvalidSelector { .. }) => {
                tracing::error!(replica_set = %key, "{e}");
                self.recorder.record(
                    &object_reference(&owner(&rs)),
                    TYPE_WARNING,
                    REASON_INVALID_SELECTOR,
                    e.to_string(),
                );
                return Ok(None);
            }
        };
        if let Some(state) = &self.shadow {
            let differences = shadow::differences(&rs, &plan);
            let fingerprint = shadow::fingerprint(&rs, &candidates);
            return Ok(state
                .observe_sync(&self.executor.client, COMPONENT, key, fingerprint, differences)
                .await);
        }
        if let crate::plan::ReplicaChange::Delete(chosen) = &plan.replicas.change
            && chosen.len() < plan.replicas.active.len()
        {
            for ratio in crate::plan::deletion_age_ratios(&plan.replicas.active, chosen, input_now) {
                self.sync_metrics.sorting_deletion_age_ratio(ratio);
            }
        }
        let result = self.executor.execute(&rs, plan).await;
        tracing::debug!(replica_set = %key, elapsed = ?started.elapsed(), "finished syncing");
        result
    }

    /// The ReplicaSet's own pods and the orphans of its namespace.
    fn candidates(&self, rs: &ReplicaSet) -> Vec<Arc<Pod>> {
        let store = self.pods.store();
        let uid = rs.metadata.uid.as_deref().unwrap_or_default();
        let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
        let mut pods = store
            .by_index(POD_OWNER_INDEX, &owned_by(uid))
            .unwrap_or_default();
        pods.extend(
            store
                .by_index(POD_OWNER_INDEX, &orphans_in(ns))
                .unwrap_or_default(),
        );
        pods
    }

    /// Pods selected by every ReplicaSet with the same controller as `rs`, each once (upstream
    /// `getIndirectlyRelatedPods`). Empty for a ReplicaSet without a controller.
    fn related_pods(&self, rs: &ReplicaSet) -> Vec<Arc<Pod>> {
        let Some(owner) = controller_of(&rs.metadata) else {
            return Vec::new();
        };
        let siblings = self
            .replica_sets
            .store()
            .by_index(CONTROLLER_UID_INDEX, &owner.uid)
            .unwrap_or_default();
        let mut seen = HashSet::new();
        let mut related = Vec::new();
        for sibling in siblings {
            let Ok(matcher) = selector(&sibling) else { continue };
            let ns = sibling.metadata.namespace.as_deref().unwrap_or_default();
            for pod in self.pods.lister().list_namespace(ns, &matcher) {
                if seen.insert(pod.metadata.uid.clone()) {
                    related.push(pod);
                }
            }
        }
        related
    }

    pub fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.handlers.queue
    }
}

impl<P: PodControl> Reconciler for ReplicaSetController<P> {
    type Error = SyncError;

    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<Option<Duration>, SyncError>> + Send {
        ReplicaSetController::sync(self, key)
    }
}
