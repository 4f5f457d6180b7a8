//! The kinds this controller scales. Upstream runs one ReplicaSet controller for two kinds: the
//! ReplicationController manager (`pkg/controller/replication`) is its base controller behind
//! adapters that convert each ReplicationController into a ReplicaSet on the way in and its status
//! back on the way out, with its own names and without the parts a ReplicationController has no
//! field for. [`ReplicaKind`] is that seam: the plan and the status are computed on the
//! [`ReplicaSet`] view of the object, and the writes go to the object's own kind.

use std::{borrow::Cow, fmt::Debug, sync::Arc};

use controller::FeatureGates;
use informer::{LabelMatcher, SelectorError};
use k8s_openapi::{
    NamespaceResourceScope,
    api::{
        apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetSpec, ReplicaSetStatus},
        core::v1::{ReplicationController, ReplicationControllerCondition, ReplicationControllerStatus},
    },
    apimachinery::pkg::apis::meta::v1::LabelSelector,
};
use kube::Resource;
use serde::{Serialize, de::DeserializeOwned};

/// A kind the controller keeps at its replica count.
pub trait ReplicaKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    /// The events' source component, also KCM's client name and RBAC role for this controller.
    const COMPONENT: &'static str;
    /// The work queue's name (the `name` label of the workqueue metrics).
    const QUEUE_NAME: &'static str;
    /// The group-resource the consistency store tracks its status writes under; `None`: the
    /// controller never waits for its own writes (upstream gives the ReplicationController manager
    /// a no-op store).
    const CONSISTENCY_RESOURCE: Option<&'static str>;
    /// Whether `status.terminatingReplicas` is kept (with `DeploymentReplicaSetTerminatingReplicas`);
    /// a ReplicationController has no such field and upstream turns it off for its manager.
    const TERMINATING_REPLICAS: bool;
    /// Whether a scale-down ranks pods by how many pods of the objects sharing this one's
    /// controller run on the same node (upstream `getIndirectlyRelatedPods`). Upstream's index of
    /// those objects by their controller's UID admits only ReplicaSets, so the ReplicationController
    /// manager, which shares its informer code, never finds one and ranks every pod alike.
    const RANKS_BY_RELATED_PODS: bool;

    /// The object as a ReplicaSet: borrowed for a ReplicaSet, converted for the other kinds.
    fn as_replica_set(&self) -> Cow<'_, ReplicaSet>;
    /// The same, to keep beside the object for the rest of a sync: the cached ReplicaSet itself, or
    /// one conversion of the other kinds.
    fn shared_view(self: &Arc<Self>) -> Arc<ReplicaSet> {
        Arc::new(self.as_replica_set().into_owned())
    }
    /// Its selector, without converting the whole object (the pod handlers ask for every pod).
    fn selector(&self) -> Result<LabelMatcher, SelectorError>;
    fn min_ready_seconds(&self) -> i32;
    /// The object with `status` in its own kind's shape, the body of a status write.
    fn with_status(&self, status: ReplicaSetStatus) -> Self;

    /// `gates` as this kind's controller plans with them: `terminatingReplicas` only where kept.
    fn plan_gates(gates: FeatureGates) -> FeatureGates {
        FeatureGates {
            deployment_replica_set_terminating_replicas: gates.deployment_replica_set_terminating_replicas
                && Self::TERMINATING_REPLICAS,
            ..gates
        }
    }
}

impl ReplicaKind for ReplicaSet {
    const COMPONENT: &'static str = "replicaset-controller";
    const QUEUE_NAME: &'static str = "replicaset";
    const CONSISTENCY_RESOURCE: Option<&'static str> = Some("replicasets.apps");
    const TERMINATING_REPLICAS: bool = true;
    const RANKS_BY_RELATED_PODS: bool = true;

    fn as_replica_set(&self) -> Cow<'_, ReplicaSet> {
        Cow::Borrowed(self)
    }

    fn shared_view(self: &Arc<Self>) -> Arc<ReplicaSet> {
        Arc::clone(self)
    }

    fn selector(&self) -> Result<LabelMatcher, SelectorError> {
        LabelMatcher::from_selector(self.spec.as_ref().map(|s| &s.selector))
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0)
    }

    fn with_status(&self, status: ReplicaSetStatus) -> Self {
        ReplicaSet {
            status: Some(status),
            ..self.clone()
        }
    }
}

/// Seen as a ReplicaSet as upstream's conversion does: the selector map becomes `matchLabels`,
/// `replicas` defaults to 1 as the API server defaults it, the status and its conditions carry over
/// field by field.
impl ReplicaKind for ReplicationController {
    const COMPONENT: &'static str = "replication-controller";
    const QUEUE_NAME: &'static str = "replicationmanager";
    const CONSISTENCY_RESOURCE: Option<&'static str> = None;
    const TERMINATING_REPLICAS: bool = false;
    const RANKS_BY_RELATED_PODS: bool = false;

    fn as_replica_set(&self) -> Cow<'_, ReplicaSet> {
        let spec = self.spec.as_ref().map(|s| ReplicaSetSpec {
            replicas: Some(s.replicas.unwrap_or(1)),
            min_ready_seconds: s.min_ready_seconds,
            selector: LabelSelector {
                match_labels: s.selector.clone(),
                match_expressions: None,
            },
            template: s.template.clone(),
        });
        let status = self.status.as_ref().map(|s| ReplicaSetStatus {
            replicas: s.replicas,
            fully_labeled_replicas: s.fully_labeled_replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            terminating_replicas: None,
            conditions: s.conditions.as_ref().map(|cs| {
                cs.iter()
                    .map(|c| ReplicaSetCondition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                        last_transition_time: c.last_transition_time.clone(),
                    })
                    .collect()
            }),
        });
        Cow::Owned(ReplicaSet {
            metadata: self.metadata.clone(),
            spec,
            status,
        })
    }

    fn selector(&self) -> Result<LabelMatcher, SelectorError> {
        // The converted view's (`as_replica_set`). An RC without a selector never gets here: the API
        // server defaults it from the template's labels and refuses an empty one.
        let labels = self.spec.as_ref().and_then(|s| s.selector.clone());
        LabelMatcher::from_selector(Some(&LabelSelector {
            match_labels: labels,
            match_expressions: None,
        }))
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0)
    }

    fn with_status(&self, status: ReplicaSetStatus) -> Self {
        let status = ReplicationControllerStatus {
            replicas: status.replicas,
            fully_labeled_replicas: status.fully_labeled_replicas,
            ready_replicas: status.ready_replicas,
            available_replicas: status.available_replicas,
            observed_generation: status.observed_generation,
            conditions: status.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicationControllerCondition {
                        type_: c.type_,
                        status: c.status,
                        reason: c.reason,
                        message: c.message,
                        last_transition_time: c.last_transition_time,
                    })
                    .collect()
            }),
        };
        ReplicationController {
            status: Some(status),
            ..self.clone()
        }
    }
}

#[cfg(test)]
#[path = "kind_tests.rs"]
mod tests;
