//! Informer event handlers: which ReplicaSets (or ReplicationControllers) a change concerns
//! (upstream `addPod`, `updatePod`, `deletePod`, `addRS`, `updateRS`, `deleteRS`).

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::ConsistencyStore;
use controller::Expectations;
use controller::pod_util::controller_of;
use controller::pod_util::is_deleting;
use controller::pod_util::is_ready;
use controller::resolve_controller;
use controller::selecting;
use informer::{DeletedObject, EventHandler, LabelMatcher, Lister, ObjectKey, WorkQueue};
use k8s_openapi::{api::apps::v1::ReplicaSet, apimachinery::pkg::apis::meta::v1::OwnerReference};

use crate::kind::ReplicaKind;

/// What the handlers share with the controller.
#[derive(Debug, Clone)]
pub struct Handlers<K: ReplicaKind = ReplicaSet> {
    pub replica_sets: Lister<K>,
    pub expectations: Arc<Expectations>,
    /// Shared with the executor, which records its writes there.
    pub consistency: Arc<ConsistencyStore>,
    pub queue: WorkQueue<ObjectKey>,
}

impl<K: ReplicaKind> Handlers<K> {
    /// The object a controller reference points to, if it is one we know with that kind and UID.
    fn resolve(&self, namespace: Option<&str>, r: &OwnerReference) -> Option<Arc<K>> {
        resolve_controller(&self.replica_sets, namespace, r)
    }

    /// Objects in the pod's namespace whose selector matches it; empty selectors match nothing
    /// here (upstream `GetPodReplicaSets`, `GetPodControllers`).
    fn matching(&self, pod: &Pod) -> Vec<Arc<K>> {
        let matching = selecting(&self.replica_sets, &pod.metadata, |rs| {
            rs.selector().ok().filter(|m| matches!(m, LabelMatcher::Match(_)))
        });
        if matching.len() > 1 {
            tracing::warn!(pod = ?pod.metadata.name, "user error: more than one ReplicaSet selects this pod's labels");
        }
        matching
    }

    fn enqueue(&self, rs: &K) {
        self.queue.add(ObjectKey::of(rs));
    }

    /// A pod is going away: observe the deletion for its controller and wake it.
    fn pod_deleted(&self, pod: &Pod) {
        let Some(r) = controller_of(&pod.metadata) else {
            return;
        };
        let Some(rs) = self.resolve(pod.metadata.namespace.as_deref(), r) else {
            return;
        };
        let key = ObjectKey::of(&*rs);
        self.expectations
            .deletion_observed(key.as_str(), ObjectKey::of(pod).as_str());
        self.queue.add(key);
    }

    /// As upstream: a ReplicaSet made since under the same name starts with nothing of this one's.
    fn rs_deleted(&self, rs: &K) {
        let key = ObjectKey::of(rs);
        self.consistency
            .forget_object(key.as_str(), rs.meta().uid.as_deref().unwrap_or_default());
        self.expectations.delete(key.as_str());
        self.queue.add(key);
    }
}

/// Handles ReplicaSet (or ReplicationController) events.
#[derive(Debug, Clone)]
pub struct ReplicaSetHandler<K: ReplicaKind = ReplicaSet>(pub Handlers<K>);

impl<K: ReplicaKind> EventHandler<K> for ReplicaSetHandler<K> {
    fn on_add(&self, rs: &Arc<K>, _: bool) {
        self.0.enqueue(rs);
    }

    /// Every update enqueues, status-only ones and resyncs included, so that a ReplicaSet whose creates
    /// failed is retried on resync.
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if old.meta().uid != new.meta().uid {
            self.0.rs_deleted(old);
        }
        self.0.enqueue(new);
    }

    fn on_delete(&self, rs: &DeletedObject<K>) {
        self.0.rs_deleted(rs.object());
    }
}

/// Handles pod events.
#[derive(Debug, Clone)]
pub struct PodHandler<K: ReplicaKind = ReplicaSet>(pub Handlers<K>);

impl<K: ReplicaKind> EventHandler<Pod> for PodHandler<K> {
    fn on_add(&self, pod: &Arc<Pod>, _: bool) {
        let h = &self.0;
        if is_deleting(&pod.metadata) {
            // A pod first seen already being deleted (after a restart) is not a creation.
            h.pod_deleted(pod);
            return;
        }
        if let Some(r) = controller_of(&pod.metadata) {
            if let Some(rs) = h.resolve(pod.metadata.namespace.as_deref(), r) {
                let key = ObjectKey::of(&*rs);
                h.expectations.creation_observed(key.as_str());
                h.queue.add(key);
            }
            return;
        }
        // An orphan: wake whoever might adopt it. No expectation waits for orphans.
        for rs in h.matching(pod) {
            h.enqueue(&rs);
        }
    }

    fn on_update(&self, old: &Arc<Pod>, cur: &Arc<Pod>) {
        let h = &self.0;
        if old.metadata.resource_version == cur.metadata.resource_version {
            return; // a resync: nothing changed
        }
        let labels_changed = old.metadata.labels != cur.metadata.labels;
        if is_deleting(&cur.metadata) {
            // Replace the pod as soon as it starts terminating, not when it is finally gone.
            h.pod_deleted(cur);
            if labels_changed {
                h.pod_deleted(old);
            }
            return;
        }
        let (cur_ref, old_ref) = (controller_of(&cur.metadata), controller_of(&old.metadata));
        let ref_changed = cur_ref != old_ref;
        if ref_changed
            && let Some(r) = old_ref
            && let Some(rs) = h.resolve(old.metadata.namespace.as_deref(), r)
        {
            h.enqueue(&rs);
        }
        if let Some(r) = cur_ref {
            let Some(rs) = h.resolve(cur.metadata.namespace.as_deref(), r) else {
                return;
            };
            h.enqueue(&rs);
            let min_ready = rs.min_ready_seconds();
            if !is_ready(old) && is_ready(cur) && min_ready > 0 {
                // The pod becomes available minReadySeconds from now: look again then.
                let after = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
                h.queue.add_after(ObjectKey::of(&*rs), after);
            }
            return;
        }
        if labels_changed || ref_changed {
            for rs in h.matching(cur) {
                h.enqueue(&rs);
            }
        }
    }

    fn on_delete(&self, pod: &DeletedObject<Pod>) {
        // Orphans going away concern nobody.
        self.0.pod_deleted(pod.object());
    }
}

#[cfg(test)]
#[path = "handlers_tests.rs"]
mod tests;
