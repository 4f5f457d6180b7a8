//! The objects the server holds and the lifecycle rules every write shares: one resourceVersion
//! counter across all resources (so versions compare as the consistency store compares them), names
//! generated from `generateName`, unique uids, and deletion held back by finalizers.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

/// Where an object lives; `namespace` is empty for cluster-scoped objects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Key {
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub fn new(resource: &str, namespace: &str, name: &str) -> Key {
        Key {
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Store {
    objects: BTreeMap<Key, Value>,
    /// The last resourceVersion handed out or seeded.
    last_version: u64,
    /// Names generated so far: each generated name ends with the next count.
    generated: u64,
    /// Every uid ever held, so an object recreated under a name gets a new one, as on a real server.
    uids: HashSet<String>,
}

impl Store {
    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }

    /// The objects of `resource`, in `namespace` or in all, ordered by namespace and name.
    pub fn list<'a>(
        &'a self,
        resource: &'a str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Value> {
        self.objects
            .iter()
            .filter(move |(k, _)| k.resource == resource && namespace.is_none_or(|ns| k.namespace == ns))
            .map(|(_, v)| v)
    }

    pub fn last_version(&self) -> u64 {
        self.last_version
    }

    /// Puts `obj` as a test seeds it: a resourceVersion it carries is kept (so the objects a test
    /// hands its controller match the server's), and later writes get higher ones.
    pub fn seed(&mut self, key: Key, mut obj: Value) {
        match meta_str(&obj, "resourceVersion").and_then(|v| v.parse::<u64>().ok()) {
            Some(v) => self.last_version = self.last_version.max(v),
            None => obj["metadata"]["resourceVersion"] = Value::String(self.next_version()),
        }
        if let Some(uid) = meta_str(&obj, "uid") {
            self.uids.insert(uid.to_owned());
        }
        self.objects.insert(key, obj);
    }

    pub fn remove(&mut self, key: &Key) -> Option<Value> {
        self.objects.remove(key)
    }

    /// `<prefix><n>`: predictable where the real server appends five random characters.
    pub fn generate_name(&mut self, prefix: &str) -> String {
        self.generated += 1;
        format!("{prefix}{}", self.generated)
    }

    /// `uid-<name>`, as the builders name uids, or `uid-<name>-<n>` if that was taken.
    pub fn new_uid(&mut self, name: &str) -> String {
        let uid = (1..)
            .map(|n| {
                if n == 1 {
                    format!("uid-{name}")
                } else {
                    format!("uid-{name}-{n}")
                }
            })
            .find(|uid| !self.uids.contains(uid))
            .expect("an unused uid");
        self.uids.insert(uid.clone());
        uid
    }

    /// Writes `obj` with the next resourceVersion and returns it as written; an object being deleted
    /// with no finalizer left is removed instead, as the API server does once the last one goes.
    pub fn commit(&mut self, key: Key, mut obj: Value) -> Value {
        obj["metadata"]["resourceVersion"] = Value::String(self.next_version());
        let deleting = !obj["metadata"]["deletionTimestamp"].is_null();
        let finalizers = obj["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if deleting && !finalizers {
            self.objects.remove(&key);
        } else {
            self.objects.insert(key, obj.clone());
        }
        obj
    }

    fn next_version(&mut self) -> String {
        self.last_version += 1;
        self.last_version.to_string()
    }
}

/// A string field of an object's metadata.
pub(super) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj["metadata"][field].as_str().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn versions_grow_past_every_seeded_one() {
        let mut store = Store::default();
        store.seed(
            Key::new("pods", "ns", "a"),
            json!({"metadata": {"resourceVersion": "41"}}),
        );
        store.seed(Key::new("pods", "ns", "b"), json!({"metadata": {}}));
        assert_eq!(
            store.get(&Key::new("pods", "ns", "b")).unwrap()["metadata"]["resourceVersion"],
            "42"
        );
        let written = store.commit(Key::new("pods", "ns", "a"), json!({"metadata": {}}));
        assert_eq!(written["metadata"]["resourceVersion"], "43");
    }

    #[test]
    fn a_deleted_object_stays_until_its_last_finalizer_goes() {
        let mut store = Store::default();
        let key = Key::new("pods", "ns", "a");
        let held = json!({"metadata": {"deletionTimestamp": "1970-01-01T00:00:00Z", "finalizers": ["f"]}});
        store.commit(key.clone(), held);
        assert!(store.get(&key).is_some());
        store.commit(
            key.clone(),
            json!({"metadata": {"deletionTimestamp": "1970-01-01T00:00:00Z"}}),
        );
        assert!(store.get(&key).is_none());
    }

    #[test]
    fn a_recreated_name_gets_a_new_uid() {
        let mut store = Store::default();
        store.seed(Key::new("pods", "ns", "a"), json!({"metadata": {"uid": "uid-a"}}));
        assert_eq!(store.new_uid("a"), "uid-a-2");
        assert_eq!(store.new_uid("b"), "uid-b");
        assert_eq!(store.generate_name("web-"), "web-1");
    }
}
