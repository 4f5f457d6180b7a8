//! Listers (client-go `listers.go`): typed reads of an informer's store.

use std::sync::Arc;

use kube::Resource;

use super::{index::NAMESPACE_INDEX, thread_safe::Store};
use crate::{key::ObjectKey, selector::LabelMatcher};

/// Reads of a store by namespace, name and labels. Cloning shares the store.
pub struct Lister<K> {
    store: Store<K>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            store: self.store.clone(),
        }
    }
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister").field("store", &self.store).finish()
    }
}

impl<K: Resource> Lister<K> {
    pub fn new(store: Store<K>) -> Self {
        Lister { store }
    }

    pub fn store(&self) -> &Store<K> {
        &self.store
    }

    /// The object `namespace/name` (or `name` for cluster-scoped kinds).
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        self.store.get(ObjectKey::new(namespace, name).as_str())
    }

    /// Every object whose labels match.
    pub fn list(&self, matcher: &LabelMatcher) -> Vec<Arc<K>> {
        match matcher {
            LabelMatcher::Nothing => Vec::new(),
            LabelMatcher::Everything => self.store.list(),
            m => self
                .store
                .list()
                .into_iter()
                .filter(|o| m.matches_labels(o.meta().labels.as_ref()))
                .collect(),
        }
    }

    /// Objects in `namespace` whose labels match; uses the namespace index when the store has one.
    pub fn list_namespace(&self, namespace: &str, matcher: &LabelMatcher) -> Vec<Arc<K>> {
        if matches!(matcher, LabelMatcher::Nothing) {
            return Vec::new();
        }
        let candidates = match self.store.by_index(NAMESPACE_INDEX, namespace) {
            Ok(objs) => objs,
            Err(_) => self
                .store
                .list()
                .into_iter()
                .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
                .collect(),
        };
        if matches!(matcher, LabelMatcher::Everything) {
            return candidates;
        }
        candidates
            .into_iter()
            .filter(|o| matcher.matches_labels(o.meta().labels.as_ref()))
            .collect()
    }
}
