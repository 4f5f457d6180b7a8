//! Wiring: informers and handlers, the work queue, workers (upstream `DeploymentController.Run`,
//! `syncDeployment`'s entry).

use controller::compact_pod::Pod;
use std::{future::Future, sync::Arc, time::Duration};

use controller::Build;
use controller::Context;
use controller::Controller;
use controller::EventRecorder;
use controller::OWNER_INDEX;
use controller::Owner;
use controller::Reconciler;
use controller::SystemClock;
use controller::Wiring;
use controller::candidates;
use controller::controlled_by;
use controller::events::TYPE_WARNING;
use controller::features::FeatureGates;
use controller::object_reference;
use controller::owner_index;
use controller::shadow::ShadowState;
use informer::{InformerOptions, ObjectKey, SharedInformer};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use crate::{
    executor::{Executor, SyncError},
    handlers::{DeploymentHandler, Handlers, PodHandler, ReplicaSetHandler},
    plan::{PlanError, SyncInput, plan_sync_with},
    shadow,
};

/// The work queue's name, the `name` label of the workqueue metrics (upstream: `deployment`).
pub const QUEUE_NAME: &str = "deployment";
/// The events' source component (upstream: `deployment-controller`).
pub const COMPONENT: &str = "deployment-controller";
/// Event reasons for Deployments that cannot be planned for. Upstream retries these errors 15 times
/// and then drops the key with a log line only; an event tells the user why nothing happens.
pub const REASON_INVALID_SELECTOR: &str = "InvalidSelector";
pub const REASON_INVALID_STRATEGY: &str = "InvalidStrategy";

/// What is this controller's alone; the rest comes with its [`Context`]. Of the feature gates it
/// reads DeploymentReplicaSetTerminatingReplicas, for the status's terminatingReplicas.
#[derive(Debug, Clone, Default)]
pub struct DeploymentOptions {
    /// Testing only (shadow mode's self-check): plan as if no Deployment were paused.
    pub ignore_paused: bool,
}

/// The Deployment controller.
pub struct DeploymentController {
    wiring: Wiring,
    handlers: Handlers,
    replica_sets: SharedInformer<ReplicaSet>,
    pods: SharedInformer<Pod>,
    executor: Executor,
    features: FeatureGates,
    options: DeploymentOptions,
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

impl Build for DeploymentController {
    type Options = DeploymentOptions;
    type Shadow = Self;

    /// A controller writing through the context's client, reading the shared informers.
    fn build(cx: Context<'_>, options: DeploymentOptions) -> Self {
        let recorder = cx.recorder(COMPONENT);
        Self::with_recorder(cx, recorder, options)
    }

    /// It plans every sync and records in `state` where the plan disagrees with what upstream's
    /// controller did. Its executor is never called.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: DeploymentOptions) -> Self {
        let mut c = Self::with_recorder(cx, EventRecorder::in_memory(), options);
        c.shadow = Some(state);
        c
    }
}

impl DeploymentController {
    fn with_recorder(cx: Context<'_>, recorder: EventRecorder, options: DeploymentOptions) -> Self {
        let deployments = cx.factory.namespaced::<Deployment>(InformerOptions::default());
        let replica_sets = cx.factory.namespaced::<ReplicaSet>(InformerOptions::default());
        let pods = cx.factory.namespaced::<Pod>(InformerOptions::default());
        replica_sets.store().add_index(OWNER_INDEX, owner_index());
        pods.store().add_index(OWNER_INDEX, owner_index());
        let (queue, wiring) = cx.wiring(QUEUE_NAME);
        let handlers = Handlers {
            deployments: deployments.lister(),
            replica_sets: replica_sets.lister(),
            queue,
        };
        let mut wiring = wiring.with_events(recorder.clone());
        let resync = cx.options.resync_period;
        wiring.register(deployments.add_event_handler(DeploymentHandler(handlers.clone()), resync));
        wiring.register(replica_sets.add_event_handler(ReplicaSetHandler(handlers.clone()), resync));
        wiring.register(pods.add_event_handler(PodHandler(handlers.clone()), resync));
        let executor = Executor {
            client: cx.client,
            recorder,
            replica_sets: replica_sets.lister(),
            clock: Arc::new(SystemClock),
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
        let candidates = candidates(self.replica_sets.store(), &*d);
        let pods_of = |uid: &str| controlled_by(self.pods.store(), uid);
        let input = SyncInput {
            deployment: &d,
            replica_sets: &candidates,
            pods_of: &pods_of,
            now: self.executor.clock.now(),
        };
        let plan = match plan_sync_with(&input, self.features) {
            Ok(plan) => plan,
            Err(e) => {
                self.report(&d, key, &e);
                return Ok(None);
            }
        };
        if let Some(state) = &self.shadow {
            let differences = shadow::differences(&d, &plan);
            let fingerprint = controller::shadow::fingerprint(&*d, &candidates);
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
            match plan_sync_with(&input, self.features) {
                Ok(plan) => plan,
                Err(e) => {
                    self.report(&d, key, &e);
                    return Ok(None);
                }
            }
        };
        if tracing::enabled!(tracing::Level::DEBUG)
            && let crate::plan::Decision::Sync(a) = &plan.decision
        {
            tracing::debug!(
                deployment = %key,
                resource_version = ?d.metadata.resource_version,
                paused = crate::spec::paused(&d),
                replica_sets = candidates.len(),
                create = ?a.create.as_ref().map(|c| crate::replica_sets::name(&c.rs).to_owned()),
                updates = a.updates.len(),
                status = a.status.is_some(),
                "planned"
            );
        }
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
        self.executor.recorder.record(
            &object_reference(&Owner::of(d)),
            TYPE_WARNING,
            reason,
            e.to_string(),
        );
    }
}

impl Controller for DeploymentController {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

impl Reconciler for DeploymentController {
    type Error = SyncError;

    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<Option<Duration>, SyncError>> + Send {
        DeploymentController::sync(self, key)
    }
}
