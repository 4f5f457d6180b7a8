//! Which pods a pass collects, and why (upstream `PodGCController.gc`): a pure function of the
//! cached pods and nodes, so that the tests and shadow mode look at the same answer the executor
//! acts on. Only the orphans wait on something else: a node missing from the cache is confirmed
//! gone by the API server once its quarantine is over (`crate::quarantine`).

use std::{
    cmp::Ordering,
    collections::{BTreeSet, HashMap},
    sync::Arc,
};

use controller::CompactPod as Pod;
use k8s_openapi::api::core::v1::Node;

/// The taint that says a node is out of service for good, so its terminating pods may be deleted
/// without waiting for its kubelet (`v1.TaintNodeOutOfService`).
pub const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";

/// Why a pod is collected: the `reason` label of upstream's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Terminated, beyond `--terminated-pod-gc-threshold`.
    Terminated,
    /// Terminating on a node that is not ready and tainted out of service.
    OutOfService,
    /// Bound to a node that no longer exists.
    Orphaned,
    /// Terminating and never scheduled.
    Unscheduled,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::Terminated => "terminated",
            Reason::OutOfService => "out-of-service",
            Reason::Orphaned => "orphaned",
            Reason::Unscheduled => "unscheduled",
        }
    }
}

/// What the pod garbage collector reads of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeState {
    pub ready: bool,
    pub out_of_service: bool,
}

impl NodeState {
    /// Ready as upstream's `IsNodeReady` reads it (a `Ready` condition that is `True`), and
    /// tainted out of service with any effect.
    pub fn of(node: &Node) -> Self {
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let out_of_service = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .is_some_and(|ts| ts.iter().any(|t| t.key == OUT_OF_SERVICE_TAINT));
        Self {
            ready,
            out_of_service,
        }
    }
}

/// One pass's decisions before the orphans: each list in the order upstream acts on it.
#[derive(Debug, Default)]
pub struct Plan {
    pub terminated: Vec<Arc<Pod>>,
    pub out_of_service: Vec<Arc<Pod>>,
    /// The nodes pods are bound to that the cache does not hold: into quarantine.
    pub missing_nodes: BTreeSet<String>,
    pub unscheduled: Vec<Arc<Pod>>,
}

/// The pass over `pods` and `nodes` with `threshold` terminated pods allowed (none collected for
/// that reason when it is 0 or less).
pub fn decide(pods: &[Arc<Pod>], nodes: &HashMap<String, NodeState>, threshold: i32) -> Plan {
    let mut plan = Plan::default();
    if threshold > 0 {
        let mut terminated: Vec<Arc<Pod>> = pods.iter().filter(|p| is_terminated(p)).cloned().collect();
        let excess = terminated
            .len()
            .saturating_sub(usize::try_from(threshold).unwrap_or(0));
        if excess > 0 {
            terminated.sort_by(eviction_then_age);
            terminated.truncate(excess);
            plan.terminated = terminated;
        }
    }
    for pod in pods {
        let node = node_name(pod);
        let terminating = pod.metadata.deletion_timestamp.is_some();
        // Upstream looks the node up for every terminating pod; one not cached (or none at all) is
        // logged there and skipped here alike.
        if terminating
            && let Some(state) = node.and_then(|n| nodes.get(n))
            && !state.ready
            && state.out_of_service
        {
            plan.out_of_service.push(pod.clone());
        }
        if let Some(node) = node
            && !nodes.contains_key(node)
        {
            plan.missing_nodes.insert(node.to_owned());
        }
        if terminating && node.is_none() {
            plan.unscheduled.push(pod.clone());
        }
    }
    plan.out_of_service.sort_by(eviction_then_age);
    plan
}

/// The pods bound to one of `gone`, the nodes the API server confirmed deleted.
pub fn orphans(pods: &[Arc<Pod>], gone: &BTreeSet<String>) -> Vec<Arc<Pod>> {
    pods.iter()
        .filter(|p| node_name(p).is_some_and(|n| gone.contains(n)))
        .cloned()
        .collect()
}

/// `namespace/name`, as the controller's logs and `/debug/shadow` name a pod.
pub(crate) fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The node a pod is bound to; `None` for none or an empty name.
pub(crate) fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

/// Upstream's `isPodTerminated`: any phase but Pending, Running and Unknown, an empty one too.
pub fn is_terminated(pod: &Pod) -> bool {
    !matches!(phase(pod), Some("Pending" | "Running" | "Unknown"))
}

/// Whether a pod still needs its phase set to Failed before it is deleted.
pub fn needs_failed_phase(pod: &Pod) -> bool {
    !matches!(phase(pod), Some("Succeeded" | "Failed"))
}

/// Evicted pods first (the kubelet's `Failed` with reason `Evicted`), then the oldest, then by
/// name (upstream `byEvictionAndCreationTimestamp`).
fn eviction_then_age(a: &Arc<Pod>, b: &Arc<Pod>) -> Ordering {
    let evicted = |p: &Pod| {
        phase(p) == Some("Failed") && p.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Evicted")
    };
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    evicted(b)
        .cmp(&evicted(a))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
