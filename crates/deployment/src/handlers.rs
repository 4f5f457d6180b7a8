//! Informer event handlers: which Deployments a change concerns (upstream `addDeployment`,
//! `updateDeployment`, `deleteDeployment`, `addReplicaSet`, `updateReplicaSet`, `deleteReplicaSet`,
//! `deletePod`).

use controller::compact_pod::Pod;
use std::sync::Arc;

use controller::pod_util::controller_of;
use controller::resolve_controller;
use controller::selecting;
use informer::{DeletedObject, EventHandler, LabelMatcher, Lister, ObjectKey, WorkQueue};
use k8s_openapi::{
    api::apps::v1::{Deployment, ReplicaSet},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};

use crate::spec::{self, Strategy};

/// What the handlers share with the controller.
#[derive(Debug, Clone)]
pub struct Handlers {
    pub deployments: Lister<Deployment>,
    pub replica_sets: Lister<ReplicaSet>,
    pub queue: WorkQueue<ObjectKey>,
}

impl Handlers {
    /// The Deployment a controller reference points to, if it is one we know with that UID.
    pub fn resolve(&self, namespace: Option<&str>, r: &OwnerReference) -> Option<Arc<Deployment>> {
        resolve_controller(&self.deployments, namespace, r)
    }

    /// Deployments whose selector matches an orphan ReplicaSet's labels; empty selectors match
    /// nothing here, nor does a ReplicaSet without labels, even for a selector of only `NotIn` or
    /// `DoesNotExist` terms (upstream `GetDeploymentsForReplicaSet`; such an orphan is still
    /// adopted by the next sync of a Deployment selecting it).
    pub fn matching(&self, rs: &ReplicaSet) -> Vec<Arc<Deployment>> {
        let matching = selecting(&self.deployments, &rs.metadata, |d| {
            LabelMatcher::from_selector(spec::selector(d))
                .ok()
                .filter(|m| matches!(m, LabelMatcher::Match(_)))
        });
        if matching.len() > 1 {
            tracing::debug!(replica_set = ?rs.metadata.name, "user error: more than one Deployment selects this ReplicaSet");
        }
        matching
    }

    fn enqueue(&self, d: &Deployment) {
        self.queue.add(ObjectKey::of(d));
    }

    fn rs_deleted(&self, rs: &ReplicaSet) {
        // Orphans going away concern nobody.
        if let Some(r) = controller_of(&rs.metadata)
            && let Some(d) = self.resolve(rs.metadata.namespace.as_deref(), r)
        {
            self.enqueue(&d);
        }
    }
}

/// Handles Deployment events: every one enqueues, resyncs included.
#[derive(Debug, Clone)]
pub struct DeploymentHandler(pub Handlers);

impl EventHandler<Deployment> for DeploymentHandler {
    fn on_add(&self, d: &Arc<Deployment>, _: bool) {
        self.0.enqueue(d);
    }

    fn on_update(&self, _: &Arc<Deployment>, new: &Arc<Deployment>) {
        self.0.enqueue(new);
    }

    fn on_delete(&self, d: &DeletedObject<Deployment>) {
        self.0.enqueue(d.object());
    }
}

/// Handles ReplicaSet events.
#[derive(Debug, Clone)]
pub struct ReplicaSetHandler(pub Handlers);

impl EventHandler<ReplicaSet> for ReplicaSetHandler {
    fn on_add(&self, rs: &Arc<ReplicaSet>, _: bool) {
        let h = &self.0;
        if rs.metadata.deletion_timestamp.is_some() {
            // Seen first already being deleted (after a restart).
            h.rs_deleted(rs);
            return;
        }
        if let Some(r) = controller_of(&rs.metadata) {
            if let Some(d) = h.resolve(rs.metadata.namespace.as_deref(), r) {
                h.enqueue(&d);
            }
            return;
        }
        for d in h.matching(rs) {
            h.enqueue(&d);
        }
    }

    fn on_update(&self, old: &Arc<ReplicaSet>, cur: &Arc<ReplicaSet>) {
        let h = &self.0;
        if old.metadata.resource_version == cur.metadata.resource_version {
            return; // a resync: the Deployment's own resync covers it
        }
        let (cur_ref, old_ref) = (controller_of(&cur.metadata), controller_of(&old.metadata));
        let ref_changed = cur_ref != old_ref;
        if ref_changed
            && let Some(r) = old_ref
            && let Some(d) = h.resolve(old.metadata.namespace.as_deref(), r)
        {
            h.enqueue(&d);
        }
        if let Some(r) = cur_ref {
            if let Some(d) = h.resolve(cur.metadata.namespace.as_deref(), r) {
                h.enqueue(&d);
            }
            return;
        }
        if ref_changed || old.metadata.labels != cur.metadata.labels {
            for d in h.matching(cur) {
                h.enqueue(&d);
            }
        }
    }

    fn on_delete(&self, rs: &DeletedObject<ReplicaSet>) {
        self.0.rs_deleted(rs.object());
    }
}

/// Handles pod deletions: a Recreate Deployment waits for its old pods to be gone.
#[derive(Debug, Clone)]
pub struct PodHandler(pub Handlers);

impl EventHandler<Pod> for PodHandler {
    fn on_add(&self, _: &Arc<Pod>, _: bool) {}

    fn on_update(&self, _: &Arc<Pod>, _: &Arc<Pod>) {}

    fn on_delete(&self, pod: &DeletedObject<Pod>) {
        let h = &self.0;
        let pod = pod.object();
        let ns = pod.metadata.namespace.as_deref();
        let Some(r) = controller_of(&pod.metadata).filter(|r| r.kind == "ReplicaSet") else {
            return;
        };
        let Some(rs) = h
            .replica_sets
            .get(ns, &r.name)
            .filter(|rs| rs.metadata.uid.as_deref() == Some(r.uid.as_str()))
        else {
            return;
        };
        let Some(d) = controller_of(&rs.metadata).and_then(|r| h.resolve(ns, r)) else {
            return;
        };
        if spec::strategy(&d) == Strategy::Recreate {
            h.enqueue(&d);
        }
    }
}

#[cfg(test)]
#[path = "handlers_tests.rs"]
mod tests;
