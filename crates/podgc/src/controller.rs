//! Wiring (the shared pod and node informers, gating the start, with no handlers: upstream's
//! collector reads only its listers) and the pass that runs every [`CHECK_PERIOD`] (upstream
//! `PodGCController.Run` and `gc`): decide on the caches, force-delete what was decided, four
//! groups one after the other, each group's deletions at once.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use controller::{
    Build, Clock, CompactPod as Pod, Context, ControlError, Controller, Reconciler, SystemClock, Wiring,
    shadow::ShadowState,
};
use futures::future::join_all;
use informer::{HandlerFns, InformerOptions, LabelMatcher, Lister, ObjectKey};
use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client};

use crate::{
    decide::{NodeState, Reason, decide, node_name, orphans, pod_key},
    force_delete::{Disruption, NODE_GONE, force_delete},
    metrics::PodGcMetrics,
    quarantine::Quarantine,
    shadow::{GoneNodes, Would},
};

/// KCM's name for the controller (`names.PodGarbageCollectorController`).
pub const COMPONENT: &str = "pod-garbage-collector-controller";
/// Its client's name and bootstrap role (`system:controller:pod-garbage-collector`).
pub const ROLE: &str = "pod-garbage-collector";
/// The queue holding its one key: a pass is due.
pub const QUEUE_NAME: &str = "pod_garbage_collector";
/// How long after a pass the next one starts (upstream `gcCheckPeriod`).
pub const CHECK_PERIOD: Duration = Duration::from_secs(20);
/// KCM's `--terminated-pod-gc-threshold` default (`PodGCControllerConfiguration`).
pub const DEFAULT_TERMINATED_THRESHOLD: i32 = 12_500;

/// What is the pod garbage collector's alone.
#[derive(Clone)]
pub struct Options {
    /// Terminated pods kept before the oldest are deleted; 0 or less keeps them all.
    pub terminated_threshold: i32,
    pub metrics: Arc<dyn PodGcMetrics>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            terminated_threshold: DEFAULT_TERMINATED_THRESHOLD,
            metrics: Arc::new(()),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("terminated_threshold", &self.terminated_threshold)
            .finish_non_exhaustive()
    }
}

/// The pod garbage collector.
pub struct PodGarbageCollector {
    wiring: Wiring,
    pods: Lister<Pod>,
    nodes: Lister<Node>,
    client: Client,
    options: Options,
    quarantine: Quarantine,
    clock: Arc<dyn Clock>,
    /// Set in shadow mode: a pass files what it would delete there ([`Would`]), and writes nothing.
    shadow: Option<Arc<ShadowState>>,
    /// Shadow mode's memory of the nodes found gone.
    gone_nodes: GoneNodes,
}

impl std::fmt::Debug for PodGarbageCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodGarbageCollector")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Build for PodGarbageCollector {
    type Options = Options;
    type Shadow = Self;

    fn build(cx: Context<'_>, options: Options) -> Self {
        Self::with_shadow(cx, options, None)
    }

    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: Options) -> Self {
        Self::with_shadow(cx, options, Some(state))
    }
}

/// The one key of the queue.
fn pass_key() -> ObjectKey {
    ObjectKey::new(None, "pass")
}

impl PodGarbageCollector {
    fn with_shadow(cx: Context<'_>, options: Options, shadow: Option<Arc<ShadowState>>) -> Self {
        let pods = cx.informer::<Pod>();
        let nodes = cx.factory.cluster::<Node>(InformerOptions::default());
        let (queue, mut wiring) = cx.wiring(QUEUE_NAME);
        wiring = wiring.with_resync(None);
        wiring.watch(&pods, HandlerFns::new());
        wiring.watch(&nodes, HandlerFns::new());
        queue.add(pass_key());
        Self {
            wiring,
            pods: pods.lister(),
            nodes: nodes.lister(),
            client: cx.client,
            options,
            quarantine: Quarantine::new(cx.metrics),
            clock: Arc::new(SystemClock),
            shadow,
            gone_nodes: GoneNodes::default(),
        }
    }

    /// One pass over the caches.
    async fn pass(&self) {
        let pods = self.pods.list(&LabelMatcher::Everything);
        let nodes: HashMap<String, NodeState> = self
            .nodes
            .list(&LabelMatcher::Everything)
            .iter()
            .filter_map(|n| Some((n.metadata.name.clone()?, NodeState::of(n))))
            .collect();
        let plan = decide(&pods, &nodes, self.options.terminated_threshold);
        let mut would = Would::default();
        if !plan.terminated.is_empty() {
            tracing::info!(pods = plan.terminated.len(), "garbage collecting pods");
        }
        self.collect(&plan.terminated, Reason::Terminated, None, &mut would)
            .await;
        for pod in pods.iter().filter(|p| p.metadata.deletion_timestamp.is_some()) {
            let node = node_name(pod).unwrap_or_default();
            if !nodes.contains_key(node) {
                // Upstream looks up the node of every terminating pod and logs each it cannot find.
                tracing::error!(pod = %pod_key(pod), node, "failed to get node: not found");
            }
        }
        self.collect(&plan.out_of_service, Reason::OutOfService, None, &mut would)
            .await;
        self.quarantine.add(&plan.missing_nodes);
        let mut gone = self.deleted_nodes(self.quarantine.take_ready(), &nodes).await;
        if self.shadow.is_some() {
            gone = self.gone_nodes.remember(gone, &nodes);
        }
        for pod in orphans(&pods, &gone) {
            self.collect(
                std::slice::from_ref(&pod),
                Reason::Orphaned,
                Some(NODE_GONE),
                &mut would,
            )
            .await;
        }
        for pod in &plan.unscheduled {
            self.collect(std::slice::from_ref(pod), Reason::Unscheduled, None, &mut would)
                .await;
        }
        if let Some(state) = &self.shadow {
            would.file(state);
        }
    }

    /// The nodes of `ready` the cache still does not hold that the API server says are gone; a
    /// lookup that fails leaves its node for a later pass.
    async fn deleted_nodes(
        &self,
        ready: Vec<String>,
        cached: &HashMap<String, NodeState>,
    ) -> BTreeSet<String> {
        let api: Api<Node> = Api::all(self.client.clone());
        let mut gone = BTreeSet::new();
        for name in ready.into_iter().filter(|n| !cached.contains_key(n)) {
            match api.get_opt(&name).await {
                Ok(None) => {
                    gone.insert(name);
                }
                Ok(Some(_)) => {}
                Err(e) => tracing::error!(node = %name, "error while getting node: {e}"),
            }
        }
        gone
    }

    /// Force-deletes `pods` at once, counting each and each failure (an attempt is counted before
    /// its writes for the out-of-service reason and after them for the others, as upstream counts).
    /// In shadow mode they go to `would` instead.
    async fn collect(
        &self,
        pods: &[Arc<Pod>],
        reason: Reason,
        condition: Option<Disruption>,
        would: &mut Would,
    ) {
        if pods.is_empty() {
            return;
        }
        if self.shadow.is_some() {
            would.add(pods, reason);
            return;
        }
        let now = self.clock.now();
        let count = |pod: &Pod| {
            let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
            self.options.metrics.force_delete(ns, reason.label());
        };
        let results = join_all(pods.iter().map(|pod| async move {
            match reason {
                Reason::Orphaned => tracing::info!(pod = %pod_key(pod), node = node_name(pod),
                    "found orphaned pod assigned to the node, deleting"),
                Reason::Unscheduled => tracing::info!(pod = %pod_key(pod),
                    "found unscheduled terminating pod not assigned to any node, deleting"),
                Reason::OutOfService => count(pod),
                Reason::Terminated => {}
            }
            tracing::info!(pod = %pod_key(pod), "PodGC is force deleting Pod");
            (pod, force_delete(&self.client, pod, condition, now).await)
        }))
        .await;
        for (pod, result) in results {
            if reason != Reason::OutOfService {
                count(pod);
            }
            match result {
                Ok(()) if reason == Reason::Orphaned || reason == Reason::Unscheduled => {
                    tracing::info!(pod = %pod_key(pod), reason = reason.label(), "forced deletion of pod succeeded");
                }
                Ok(()) => {}
                Err(e) => self.failed(pod, reason, &e),
            }
        }
    }

    fn failed(&self, pod: &Pod, reason: Reason, e: &ControlError) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        self.options.metrics.force_delete_error(ns, reason.label());
        tracing::error!(pod = %pod_key(pod), reason = reason.label(), "failed to force-delete pod: {e}");
    }
}

impl Reconciler for PodGarbageCollector {
    type Error = std::convert::Infallible;

    /// A pass; the next one [`CHECK_PERIOD`] after it ends, as `wait.UntilWithContext` runs it.
    async fn sync(&self, _: &ObjectKey) -> Result<Option<Duration>, Self::Error> {
        self.pass().await;
        Ok(Some(CHECK_PERIOD))
    }
}

impl Controller for PodGarbageCollector {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}
