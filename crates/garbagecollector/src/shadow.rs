//! Shadow mode's account of the collector. What kcm-rs's collector would write on an object (delete
//! it, drop references from it, orphan its dependents, remove a finalizer) is a disagreement with
//! upstream's until upstream's collector does it, reported once the object has stayed unchanged for
//! the settle time. The reverse, an object upstream deleted that kcm-rs would have kept, is not
//! seen: the object is gone by then.
//!
//! The workers know objects by UID and the graph forgets one once it is deleted, so what is filed
//! is remembered by UID here: a worker that finds the UID gone forgets its filing.

use std::{
    collections::HashMap,
    hash::{DefaultHasher, Hash, Hasher},
    sync::Arc,
    time::Duration,
};

use controller::shadow::{ShadowState, namespace_terminating};
use kube::Client;
use parking_lot::Mutex;

use crate::{
    controller::COMPONENT,
    decide::{Action, Policy},
    identity::Identity,
};

/// The collector's filings with shadow mode's state.
#[derive(Debug)]
pub(crate) struct Filings {
    state: Arc<ShadowState>,
    /// The object each filed UID stands under.
    filed: Mutex<HashMap<String, String>>,
}

impl Filings {
    pub(crate) fn new(state: Arc<ShadowState>) -> Self {
        Self {
            state,
            filed: Mutex::default(),
        }
    }

    /// Files what kcm-rs `would` write on `item`, decided on what hashes to `fingerprint` (`None`:
    /// nothing, which clears a filing). Returns when to look again for it to settle. In a namespace
    /// being deleted nothing is held against anything: the namespace controller deletes there too.
    pub(crate) async fn observe(
        &self,
        client: &Client,
        item: &Identity,
        fingerprint: u64,
        would: Option<String>,
    ) -> Option<Duration> {
        let object = object(item);
        let differences = Vec::from_iter(would);
        if !differences.is_empty()
            && item.is_namespaced()
            && namespace_terminating(client, &item.namespace).await
        {
            self.forget(&item.uid);
            return None;
        }
        if differences.is_empty() {
            self.filed.lock().remove(&item.uid);
        } else {
            self.filed.lock().insert(item.uid.clone(), object.clone());
        }
        self.state.observe(COMPONENT, &object, fingerprint, differences)
    }

    /// Forgets the object with this UID: gone, or no longer the collector's.
    pub(crate) fn forget(&self, uid: &str) {
        if let Some(object) = self.filed.lock().remove(uid) {
            self.state.forget(COMPONENT, &object);
        }
    }
}

/// How `/debug/shadow` names an object: `namespace/name` as for every controller, then its kind,
/// since a ConfigMap and a Secret may share a name.
fn object(item: &Identity) -> String {
    let name = if item.is_namespaced() {
        format!("{}/{}", item.namespace, item.name)
    } else {
        item.name.clone()
    };
    format!("{name} ({} {})", item.api_version, item.kind)
}

/// A fingerprint of what a decision was made on: the object's resourceVersion, or for an owner
/// being orphaned (read from the graph, not live) its UID and how many dependents it has.
pub(crate) fn fingerprint(parts: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// The line shadow mode files for `action`; none for [`Action::Keep`].
pub(crate) fn would(action: &Action) -> Option<String> {
    Some(match action {
        Action::Keep => return None,
        Action::DropReferences(uids) => format!(
            "metadata.ownerReferences: kcm-rs would remove those to {}",
            uids.join(", ")
        ),
        Action::DeleteForeground { .. } => {
            "kcm-rs would delete it in the foreground: an owner waits for it".to_owned()
        }
        Action::Delete(policy) => format!(
            "kcm-rs would delete it ({} propagation): no owner holds it",
            match policy {
                Policy::Background => "background",
                Policy::Foreground => "foreground",
                Policy::Orphan => "orphan",
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(namespace: &str) -> Identity {
        Identity {
            kind: "ConfigMap".into(),
            api_version: "v1".into(),
            namespace: namespace.into(),
            name: "a".into(),
            uid: "u1".into(),
        }
    }

    #[test]
    fn objects_are_named_with_their_kind() {
        assert_eq!(object(&item("ns")), "ns/a (v1 ConfigMap)");
        assert_eq!(object(&item("")), "a (v1 ConfigMap)");
    }

    #[test]
    fn every_write_has_a_line_and_keeping_none() {
        assert_eq!(would(&Action::Keep), None);
        assert_eq!(
            would(&Action::Delete(Policy::Background)).as_deref(),
            Some("kcm-rs would delete it (background propagation): no owner holds it")
        );
        assert_eq!(
            would(&Action::DropReferences(vec!["u2".into()])).as_deref(),
            Some("metadata.ownerReferences: kcm-rs would remove those to u2")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_filing_is_forgotten_by_uid() {
        let state = Arc::new(ShadowState::new(Duration::ZERO, |_| {}));
        let filings = Filings::new(state.clone());
        let client = testing::ApiServer::new().client();
        let line = would(&Action::Delete(Policy::Background));
        filings.observe(&client, &item(""), 1, line).await;
        assert_eq!(state.current().len(), 1);
        filings.forget("u1");
        assert!(state.current().is_empty());
    }
}
