//! Wiring: informers and handlers, the work queue, workers (upstream `DeploymentController.Run`,
//! `syncDeployment`'s entry).

use controller::compact_pod::Pod;
use std::{future::Future, sync::Arc, time::Duration};

use controller::{
    EventRecorder, SystemClock,
    events::TYPE_WARNING,
    features::FeatureGates,
    index::{POD_OWNER_INDEX, owned_by, pod_owner_index},
    pod_control::object_reference,
    shadow::ShadowState,
    worker::{DEFAULT_DRAIN_TIMEOUT, Reconciler, WorkerOptions, run_workers},
};
use informer::{
    HandlerRegistration, HasSynced, InformerOptions, MetricsProvider, ObjectKey, SharedInformer,
    SharedInformerFactory, SyncMetrics, WorkQueue, store::IndexFn, wait_for_cache_sync,
};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::Client;
use tokio_util::sync::CancellationToken;

use crate::{
    executor::{Executor, SyncError},
    handlers::{DeploymentHandler, Handlers, PodHandler, ReplicaSetHandler},
    new_rs::owner,
    plan::{PlanError, SyncInput, plan_sync_with},
    shadow,
};

/// Workers (kube-controller-manager `--concurrent-deployment-syncs` default).
pub const DEFAULT_WORKERS: usize = 5;
/// The work queue's name, the `name` label of the workqueue metrics (upstream: `deployment`).
pub const QUEUE_NAME: &str = "deployment";
/// The events' source component (upstream: `deployment-controller`).
pub const COMPONENT: &str = "deployment-controller";
/// Event reasons for Deployments that cannot be planned for. Upstream retries these errors 15 times
/// and then drops the key with a log line only; an event tells the user why nothing happens.
pub const REASON_INVALID_SELECTOR: &str = "InvalidSelector";
pub const REASON_INVALID_STRATEGY: &str = "InvalidStrategy";
/// The ReplicaSet index this controller lists its candidates from: ReplicaSets by controller UID,
/// orphans under `orphan/<namespace>`.
pub const RS_OWNER_INDEX: &str = "deployment-rs-owner";

/// Files a ReplicaSet under its controller's UID, or under `orphan/<namespace>`: a Deployment's
/// candidates are then its own ReplicaSets plus the orphans it may adopt (others' it would ignore).
pub fn rs_owner_index() -> IndexFn<ReplicaSet> {
    Arc::new(
        |rs: &ReplicaSet| match controller::pod_util::controller_of(&rs.metadata) {
            Some(r) => vec![owned_by(&r.uid)],
            None => vec![controller::index::orphans_in(
                rs.metadata.namespace.as_deref().unwrap_or(""),
            )],
        },
    )
}

#[derive(Debug, Clone)]
pub struct DeploymentOptions {
    pub workers: usize,
    /// This process's identity, written as the reportingInstance of its events.
    pub instance: String,
    /// How often the informers replay every cached object to the handlers (KCM:
    /// `--min-resync-period` × [1, 2), drawn once). `None`: no resync.
    pub resync_period: Option<Duration>,
    /// Testing only (shadow mode's self-check): plan as if no Deployment were paused.
    pub ignore_paused: bool,
    /// The feature gates the controller reads (`--feature-gates`; default: Kubernetes 1.36's):
    /// DeploymentReplicaSetTerminatingReplicas, for the status's terminatingReplicas.
    pub features: FeatureGates,
}

impl Default for DeploymentOptions {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            instance: COMPONENT.to_owned(),
            resync_period: None,
            ignore_paused: false,
            features: FeatureGates::default(),
        }
    }
}

/// The Deployment controller.
pub struct DeploymentController {
    handlers: Handlers,
    replica_sets: SharedInformer<ReplicaSet>,
    pods: SharedInformer<Pod>,
    registrations: Vec<HandlerRegistration>,
    executor: Executor,
    options: DeploymentOptions,
    sync_metrics: Arc<dyn SyncMetrics>,
    /// Set in shadow mode: plans are compared with what upstream did instead of executed.
    shadow: Option<Arc<ShadowState>>,
}

impl std::fmt::Debug for DeploymentController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeploymentController")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl DeploymentController {
    /// A controller writing through `client`, reading through `factory`'s shared informers.
    pub fn new(
        factory: &SharedInformerFactory,
        client: Client,
        options: DeploymentOptions,
        metrics: &dyn MetricsProvider,
    ) -> Self {
        let recorder = EventRecorder::new(client.clone(), COMPONENT, &options.instance);
        Self::with_recorder(factory, client, recorder, options, metrics)
    }

    /// A read-only controller for shadow mode: it plans every sync and records in `state` where the
    /// plan disagrees with what upstream's controller did. Its executor is never called.
    pub fn shadow(
        factory: &SharedInformerFactory,
        client: Client,
        state: Arc<ShadowState>,
        options: DeploymentOptions,
        metrics: &dyn MetricsProvider,
    ) -> Self {
        let mut c = Self::with_recorder(factory, client, EventRecorder::in_memory(), options, metrics);
        c.shadow = Some(state);
        c
    }

    fn with_recorder(
        factory: &SharedInformerFactory,
        client: Client,
        recorder: EventRecorder,
        options: DeploymentOptions,
        metrics: &dyn MetricsProvider,
    ) -> Self {
        let deployments = factory.namespaced::<Deployment>(InformerOptions::default());
        let replica_sets = factory.namespaced::<ReplicaSet>(InformerOptions::default());
        let pods = factory.namespaced::<Pod>(InformerOptions::default());
        replica_sets.store().add_index(RS_OWNER_INDEX, rs_owner_index());
        pods.store().add_index(POD_OWNER_INDEX, pod_owner_index());
        let handlers = Handlers {
            deployments: deployments.lister(),
            replica_sets: replica_sets.lister(),
            queue: WorkQueue::named(QUEUE_NAME, metrics),
        };
        let registrations = vec![
            deployments.add_event_handler(DeploymentHandler(handlers.clone()), options.resync_period),
            replica_sets.add_event_handler(ReplicaSetHandler(handlers.clone()), options.resync_period),
            pods.add_event_handler(PodHandler(handlers.clone()), options.resync_period),
        ];
        let executor = Executor {
            client,
            recorder,
            replica_sets: replica_sets.lister(),
            clock: Arc::new(SystemClock),
        };
        Self {
            handlers,
            replica_sets,
            pods,
            registrations,
            executor,
            options,
            sync_metrics: metrics.sync_metrics(QUEUE_NAME),
            shadow: None,
        }
    }

    /// Whether every handler has seen its informer's initial contents.
    pub fn has_synced(&self) -> bool {
        self.registrations.iter().all(HandlerRegistration::has_synced)
    }

    pub fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.handlers.queue
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

    /// One sync of the Deployment at `key` (upstream `syncDeployment`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, SyncError> {
        let started = tokio::time::Instant::now();
        let Some(mut d) = self.handlers.deployments.get(key.namespace(), key.name()) else {
            if let Some(state) = &self.shadow {
                state.forget(COMPONENT, key.as_str());
            }
            return Ok(None);
        };
        if self.options.ignore_paused
            && let Some(spec) = Arc::make_mut(&mut d).spec.as_mut()
        {
            spec.paused = Some(false);
        }
        let candidates = self.candidates(&d);
        let pods_of = |uid: &str| {
            self.pods
                .store()
                .by_index(POD_OWNER_INDEX, &owned_by(uid))
                .unwrap_or_default()
        };
        let input = SyncInput {
            deployment: &d,
            replica_sets: &candidates,
            pods_of: &pods_of,
            now: self.executor.clock.now(),
        };
        let plan = match plan_sync_with(&input, self.options.features) {
            Ok(plan) => plan,
            Err(e) => {
                self.report(&d, key, &e);
                return Ok(None);
            }
        };
        if let Some(state) = &self.shadow {
            let differences = shadow::differences(&d, &plan);
            let fingerprint = shadow::fingerprint(&d, &candidates);
            return Ok(state
                .observe_sync(&self.executor.client, COMPONENT, key, fingerprint, differences)
                .await);
        }
        let gone = self.executor.claim(&plan.key, &plan.owner, &plan.claims).await?;
        let plan = if gone.is_empty() {
            plan
        } else {
            // The plan counted these orphans as adopted; they were deleted before they could be.
            let kept: Vec<Arc<ReplicaSet>> = candidates
                .iter()
                .filter(|rs| {
                    !gone
                        .iter()
                        .any(|uid| rs.metadata.uid.as_deref() == Some(uid.as_str()))
                })
                .cloned()
                .collect();
            let input = SyncInput {
                replica_sets: &kept,
                ..input
            };
            match plan_sync_with(&input, self.options.features) {
                Ok(plan) => plan,
                Err(e) => {
                    self.report(&d, key, &e);
                    return Ok(None);
                }
            }
        };
        let result = self.executor.execute(&d, plan).await;
        tracing::debug!(deployment = %key, elapsed = ?started.elapsed(), "finished syncing");
        result
    }

    /// A Deployment that cannot be planned for: logged and told in an event, not retried.
    fn report(&self, d: &Deployment, key: &ObjectKey, e: &PlanError) {
        tracing::error!(deployment = %key, "{e}");
        let reason = match e {
            PlanError::InvalidSelector { .. } => REASON_INVALID_SELECTOR,
            PlanError::Strategy { .. } => REASON_INVALID_STRATEGY,
        };
        self.executor
            .recorder
            .record(&object_reference(&owner(d)), TYPE_WARNING, reason, e.to_string());
    }

    /// The Deployment's own ReplicaSets and the orphans of its namespace.
    fn candidates(&self, d: &Deployment) -> Vec<Arc<ReplicaSet>> {
        let store = self.replica_sets.store();
        let uid = d.metadata.uid.as_deref().unwrap_or_default();
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        let mut rss = store.by_index(RS_OWNER_INDEX, &owned_by(uid)).unwrap_or_default();
        rss.extend(
            store
                .by_index(RS_OWNER_INDEX, &controller::index::orphans_in(ns))
                .unwrap_or_default(),
        );
        rss
    }
}

impl Reconciler for DeploymentController {
    type Error = SyncError;

    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<Option<Duration>, SyncError>> + Send {
        DeploymentController::sync(self, key)
    }
}
