//! The thread-safe indexed store (client-go `thread_safe_store.go`): the informer's cache.

use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use parking_lot::RwLock;

use super::index::IndexFn;
use crate::key::ObjectKey;

/// Objects by key, with indexes. Cloning shares the store. Objects are held as `Arc<K>` and handed out
/// as `Arc` clones: readers cannot mutate the cache (client-go's "treat as read-only" made static).
pub struct Store<K> {
    inner: Arc<RwLock<Inner<K>>>,
}

struct Inner<K> {
    items: AHashMap<ObjectKey, Arc<K>>,
    /// Index name -> (value -> keys). Invariant: for every index, a key is filed under exactly the
    /// values the index function gives for its current object, and no value maps to an empty set.
    indices: AHashMap<String, Index<K>>,
}

struct Index<K> {
    func: IndexFn<K>,
    values: AHashMap<String, AHashSet<ObjectKey>>,
}

/// An index name that was never registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("index {0:?} does not exist")]
pub struct NoSuchIndex(pub String);

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            inner: self.inner.clone(),
        }
    }
}

impl<K> std::fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Store")
            .field("items", &inner.items.len())
            .field("indices", &inner.indices.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<K> Default for Store<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Store<K> {
    pub fn new() -> Self {
        Store {
            inner: Arc::new(RwLock::new(Inner {
                items: AHashMap::new(),
                indices: AHashMap::new(),
            })),
        }
    }

    /// Registers an index; objects already stored are indexed at once. Replaces an index of that name.
    pub fn add_index(&self, name: &str, func: IndexFn<K>) {
        let mut inner = self.inner.write();
        let mut index = Index {
            func,
            values: AHashMap::new(),
        };
        for (key, obj) in &inner.items {
            index.insert(key, obj);
        }
        inner.indices.insert(name.to_owned(), index);
    }

    /// Inserts or replaces the object at `key`; returns the previous one.
    pub fn upsert(&self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let Inner { items, indices } = &mut *inner;
        let old = items.insert(key.clone(), obj.clone());
        for index in indices.values_mut() {
            index.update(&key, old.as_deref(), Some(&obj));
        }
        old
    }

    /// Removes the object at `key`; returns it.
    pub fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let Inner { items, indices } = &mut *inner;
        let old = items.remove(key)?;
        for index in indices.values_mut() {
            index.update(key, Some(&old), None);
        }
        Some(old)
    }

    /// Replaces the whole contents and rebuilds every index.
    pub fn replace(&self, objects: impl IntoIterator<Item = (ObjectKey, Arc<K>)>) {
        let mut inner = self.inner.write();
        let Inner { items, indices } = &mut *inner;
        *items = objects.into_iter().collect();
        for index in indices.values_mut() {
            index.values.clear();
            for (key, obj) in items.iter() {
                index.insert(key, obj);
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.inner.read().items.contains_key(key)
    }

    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.read().items.keys().cloned().collect()
    }

    /// Every (key, object) pair, for callers that need both.
    pub fn entries(&self) -> Vec<(ObjectKey, Arc<K>)> {
        self.inner
            .read()
            .items
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects filed under `value` in index `name` (client-go `ByIndex`).
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, NoSuchIndex> {
        let inner = self.inner.read();
        let index = inner
            .indices
            .get(name)
            .ok_or_else(|| NoSuchIndex(name.to_owned()))?;
        Ok(index
            .values
            .get(value)
            .map(|keys| keys.iter().filter_map(|k| inner.items.get(k).cloned()).collect())
            .unwrap_or_default())
    }

    /// Keys filed under `value` in index `name` (client-go `IndexKeys`).
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, NoSuchIndex> {
        let inner = self.inner.read();
        let index = inner
            .indices
            .get(name)
            .ok_or_else(|| NoSuchIndex(name.to_owned()))?;
        Ok(index
            .values
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// The values present in index `name` (client-go `ListIndexFuncValues`).
    pub fn index_values(&self, name: &str) -> Result<Vec<String>, NoSuchIndex> {
        let inner = self.inner.read();
        let index = inner
            .indices
            .get(name)
            .ok_or_else(|| NoSuchIndex(name.to_owned()))?;
        Ok(index.values.keys().cloned().collect())
    }

    pub fn has_index(&self, name: &str) -> bool {
        self.inner.read().indices.contains_key(name)
    }

    #[cfg(test)]
    pub(crate) fn assert_invariants(&self) {
        let inner = self.inner.read();
        for (name, index) in &inner.indices {
            let mut expected: AHashMap<String, AHashSet<ObjectKey>> = AHashMap::new();
            for (key, obj) in &inner.items {
                for v in (index.func)(obj) {
                    expected.entry(v).or_default().insert(key.clone());
                }
            }
            assert!(
                index.values.values().all(|s| !s.is_empty()),
                "index {name} keeps an empty set"
            );
            assert_eq!(
                index.values, expected,
                "index {name} is out of step with the items"
            );
        }
    }
}

impl<K> Index<K> {
    fn insert(&mut self, key: &ObjectKey, obj: &K) {
        for v in (self.func)(obj) {
            self.values.entry(v).or_default().insert(key.clone());
        }
    }

    fn update(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&K>) {
        let old_values = old.map(|o| (self.func)(o)).unwrap_or_default();
        let new_values = new.map(|n| (self.func)(n)).unwrap_or_default();
        // The common case: one value, unchanged (the namespace index on every update).
        if old_values == new_values && old.is_some() && new.is_some() {
            return;
        }
        for v in old_values.iter().filter(|v| !new_values.contains(v)) {
            if let Some(set) = self.values.get_mut(v) {
                set.remove(key);
                if set.is_empty() {
                    self.values.remove(v);
                }
            }
        }
        for v in new_values {
            self.values.entry(v).or_default().insert(key.clone());
        }
    }
}

#[cfg(test)]
#[path = "thread_safe_tests.rs"]
mod tests;
