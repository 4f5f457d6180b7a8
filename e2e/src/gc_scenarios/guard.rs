//! The data-loss invariant of the garbage collector's random programs, checked on every ConfigMap
//! watch event of a program's namespace: an object the test did not delete starts going (a deletion
//! mark, or gone without one) only once none of its owners is solid.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use informer::{HandlerFns, InformerOptions, SharedInformerFactory, wait_for_cache_sync};
use k8s_openapi::{
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::TestNamespace;

/// The foreground-deletion finalizer, which decides whether an owner still holds its dependents.
const FOREGROUND: &str = "foregroundDeletion";

/// The data-loss invariant, checked on every ConfigMap watch event of a namespace.
pub struct Guard {
    state: Arc<Mutex<GuardState>>,
    cancel: CancellationToken,
}

#[derive(Default)]
struct GuardState {
    /// By name: UID, owners, deleting, finalizers.
    objects: HashMap<String, (String, Vec<OwnerReference>, bool, Vec<String>)>,
    /// UIDs the test deleted itself.
    deleted_by_test: HashSet<String>,
    /// UIDs seen deleting in the foreground: such an owner waits for its dependents from then on,
    /// even once its finalizer is gone while another (the test's) still holds it.
    waited: HashSet<String>,
    breaches: Vec<String>,
}

impl GuardState {
    /// Whether `r` names an owner that holds its dependents.
    fn solid(&self, r: &OwnerReference) -> bool {
        self.objects
            .get(&r.name)
            .is_some_and(|(uid, _, deleting, finalizers)| {
                *uid == r.uid
                    && !self.waited.contains(uid)
                    && !(*deleting && finalizers.iter().any(|f| f == FOREGROUND))
            })
    }

    /// `m` starts going (marked or gone), the test not having deleted it.
    fn starts_going(&mut self, m: &ObjectMeta) {
        let uid = m.uid.clone().unwrap_or_default();
        if self.deleted_by_test.contains(&uid) {
            return;
        }
        let solid: Vec<&str> = m
            .owner_references
            .iter()
            .flatten()
            .filter(|r| self.solid(r))
            .map(|r| r.name.as_str())
            .collect();
        if !solid.is_empty() {
            self.breaches.push(format!(
                "{} went while its owners {solid:?} were present",
                m.name.as_deref().unwrap_or_default()
            ));
        }
    }

    fn record(&mut self, m: &ObjectMeta) {
        let uid = m.uid.clone().unwrap_or_default();
        if m.deletion_timestamp.is_some() && m.finalizers.iter().flatten().any(|f| f == FOREGROUND) {
            self.waited.insert(uid);
        }
        self.objects.insert(
            m.name.clone().unwrap_or_default(),
            (
                m.uid.clone().unwrap_or_default(),
                m.owner_references.clone().unwrap_or_default(),
                m.deletion_timestamp.is_some(),
                m.finalizers.clone().unwrap_or_default(),
            ),
        );
    }
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("breaches", &self.state.lock().breaches)
            .finish_non_exhaustive()
    }
}

impl Guard {
    pub async fn start(ns: &TestNamespace) -> Guard {
        let factory =
            SharedInformerFactory::new(ns.cluster.client.clone()).with_namespaces(vec![ns.name.clone()]);
        let state: Arc<Mutex<GuardState>> = Arc::default();
        let (a, u, d) = (state.clone(), state.clone(), state.clone());
        let registration = factory
            .namespaced::<ConfigMap>(InformerOptions::default())
            .add_event_handler(
                HandlerFns::new()
                    .on_add(move |cm: &Arc<ConfigMap>, _| a.lock().record(&cm.metadata))
                    .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                        let mut s = u.lock();
                        if old.metadata.deletion_timestamp.is_none()
                            && new.metadata.deletion_timestamp.is_some()
                        {
                            s.starts_going(&new.metadata);
                        }
                        s.record(&new.metadata);
                    })
                    .on_delete(move |gone| {
                        let mut s = d.lock();
                        let m = &gone.object().metadata;
                        let name = m.name.as_deref().unwrap_or_default();
                        // Gone without a deletion mark seen first: this is where it started going.
                        if !s.objects.get(name).is_some_and(|(_, _, deleting, _)| *deleting) {
                            s.starts_going(m);
                        }
                        s.objects.remove(m.name.as_deref().unwrap_or_default());
                    }),
                None,
            );
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        assert!(
            wait_for_cache_sync(&cancel, &[&registration]).await,
            "the ConfigMap informer synced"
        );
        Guard { state, cancel }
    }

    /// The test is about to delete the object of `uid`.
    pub(super) fn deleting(&self, uid: &str) {
        self.state.lock().deleted_by_test.insert(uid.to_owned());
    }

    /// The breaches seen so far.
    pub fn breaches(&self) -> Vec<String> {
        self.state.lock().breaches.clone()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
