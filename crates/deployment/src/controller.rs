//! Wiring: informers and handlers, the work queue, workers (upstream `DeploymentController.Run`,
//! `syncDeployment`'s entry).

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::Build;
use controller::Comparison;
use controller::Context;
use controller::Controller;
use controller::Decided;
use controller::EventRecorder;
use controller::Steps;
use controller::SystemClock;
use controller::Wiring;
use controller::candidates;
use controller::controlled_pods;
use controller::features::FeatureGates;
use controller::shadow::ShadowState;
use informer::{ObjectKey, SharedInformer};
use k8s_openapi::{
    api::apps::v1::{Deployment, ReplicaSet},
    jiff::Timestamp,
};
use tokio::time::Instant;

use crate::{
    executor::{Executor, SyncError},
    handlers::{DeploymentHandler, Handlers, PodHandler, ReplicaSetHandler},
    plan::{PlanError, SyncInput, SyncPlan, plan_sync_with},
    shadow,
};

/// The work queue's name, the `name` label of the workqueue metrics (upstream: `deployment`).
pub const QUEUE_NAME: &str = "deployment";
/// The events' source component (upstream: `deployment-controller`).
pub const COMPONENT: &str = "deployment-controller";

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
        let deployments = cx.informer::<Deployment>();
        let replica_sets = cx.owned_informer::<ReplicaSet>();
        let pods = cx.owned_informer::<Pod>();
        let (queue, wiring) = cx.wiring(QUEUE_NAME);
        let handlers = Handlers {
            deployments: deployments.lister(),
            replica_sets: replica_sets.lister(),
            queue,
        };
        let mut wiring = wiring.with_events(recorder.clone());
        wiring.watch(&deployments, DeploymentHandler(handlers.clone()));
        wiring.watch(&replica_sets, ReplicaSetHandler(handlers.clone()));
        wiring.watch(&pods, PodHandler(handlers.clone()));
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

    /// The plan for `d` over `replica_sets`, its candidates.
    fn plan(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        replica_sets: &[Arc<ReplicaSet>],
        now: Timestamp,
    ) -> Result<SyncPlan, PlanError> {
        // A ReplicaSet's pods as upstream's `getPodMapForDeployment` finds them: by the
        // ReplicaSet's namespace, kind, name and UID.
        let pods_of = |uid: &str| {
            replica_sets
                .iter()
                .find(|rs| rs.metadata.uid.as_deref() == Some(uid))
                .and_then(|rs| rs.metadata.name.as_deref())
                .map(|name| {
                    controlled_pods(
                        self.pods.store(),
                        key.namespace().unwrap_or_default(),
                        "ReplicaSet",
                        name,
                        uid,
                    )
                })
                .unwrap_or_default()
        };
        let input = SyncInput {
            deployment: d,
            replica_sets,
            pods_of: &pods_of,
            now,
        };
        plan_sync_with(&input, self.features)
    }
}

impl Controller for DeploymentController {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

/// A plan, with what it was made from.
#[derive(Debug)]
pub struct Planned {
    d: Arc<Deployment>,
    candidates: Vec<Arc<ReplicaSet>>,
    plan: SyncPlan,
    now: Timestamp,
    started: Instant,
}

impl Steps for DeploymentController {
    const NAME: &'static str = COMPONENT;
    type Object = Deployment;
    type Plan = Planned;
    type Error = SyncError;

    fn get(&self, key: &ObjectKey) -> Option<Arc<Deployment>> {
        let mut d = self.handlers.deployments.get(key.namespace(), key.name())?;
        if self.options.ignore_paused
            && let Some(spec) = Arc::make_mut(&mut d).spec.as_mut()
        {
            spec.paused = Some(false);
        }
        Some(d)
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_deref()
    }

    fn client(&self) -> &kube::Client {
        &self.executor.client
    }

    /// Upstream `syncDeployment` up to its writes, the claims as data.
    fn decide(&self, key: &ObjectKey, d: Arc<Deployment>) -> Result<Decided<Planned>, SyncError> {
        let started = Instant::now();
        let candidates = candidates(self.replica_sets.store(), &*d);
        let now = self.executor.clock.now();
        let plan = self.plan(key, &d, &candidates, now)?;
        Ok(Decided::Plan(Planned {
            d,
            candidates,
            plan,
            now,
            started,
        }))
    }

    fn compare(&self, _: &ObjectKey, p: Planned) -> Comparison {
        Comparison {
            differences: shadow::differences(&p.d, &p.plan),
            fingerprint: controller::shadow::fingerprint(&*p.d, &p.candidates),
            again: None,
        }
    }

    async fn claim(&self, key: &ObjectKey, p: &Planned) -> Result<Vec<String>, SyncError> {
        self.executor.claim(key, &p.plan.owner, &p.plan.claims).await
    }

    fn without(&self, key: &ObjectKey, p: Planned, gone: &[String]) -> Result<Decided<Planned>, SyncError> {
        let candidates: Vec<Arc<ReplicaSet>> = p
            .candidates
            .into_iter()
            .filter(|rs| {
                !gone
                    .iter()
                    .any(|uid| rs.metadata.uid.as_deref() == Some(uid.as_str()))
            })
            .collect();
        let plan = self.plan(key, &p.d, &candidates, p.now)?;
        Ok(Decided::Plan(Planned {
            candidates,
            plan,
            ..p
        }))
    }

    async fn execute(&self, key: &ObjectKey, p: Planned) -> Result<Option<Duration>, SyncError> {
        let Planned {
            d,
            candidates,
            plan,
            started,
            ..
        } = p;
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
        let result = self.executor.execute(key, &d, plan).await;
        tracing::debug!(deployment = %key, elapsed = ?started.elapsed(), "finished syncing");
        result
    }
}
