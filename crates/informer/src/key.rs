//! Object keys: `namespace/name`, or `name` for cluster-scoped objects (client-go
//! `MetaNamespaceKeyFunc`), the form controllers put in their work queues.

use std::{borrow::Borrow, fmt, sync::Arc};

use kube::Resource;

/// A `namespace/name` key. Cheap to clone (shared string), so the store and its indexes hold one copy.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace {
            Some(ns) if !ns.is_empty() => ObjectKey(format!("{ns}/{name}").into()),
            _ => ObjectKey(name.into()),
        }
    }

    /// The key of an object, from its metadata.
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self::new(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }

    /// Parses `namespace/name` or `name` (client-go `SplitMetaNamespaceKey`).
    pub fn parse(key: &str) -> Self {
        ObjectKey(key.into())
    }

    pub fn namespace(&self) -> Option<&str> {
        self.0.split_once('/').map(|(ns, _)| ns)
    }

    pub fn name(&self) -> &str {
        self.0.split_once('/').map_or(&self.0, |(_, n)| n)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ObjectKey {
    fn from(s: &str) -> Self {
        ObjectKey(s.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_and_cluster_scoped_keys() {
        let k = ObjectKey::new(Some("ns"), "a");
        assert_eq!((k.as_str(), k.namespace(), k.name()), ("ns/a", Some("ns"), "a"));
        let k = ObjectKey::new(None, "node-1");
        assert_eq!((k.as_str(), k.namespace(), k.name()), ("node-1", None, "node-1"));
        assert_eq!(ObjectKey::parse("x/y"), ObjectKey::new(Some("x"), "y"));
    }
}
