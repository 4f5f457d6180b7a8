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

/// Which worker filed a disagreement: each clears only its own, since an owner being orphaned is
/// also looked at by the deleting worker, which has nothing to say of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    Delete,
    Orphan,
}

/// The collector's filings with shadow mode's state.
#[derive(Debug)]
pub(crate) struct Filings {
    state: Arc<ShadowState>,
    /// The object each filed UID stands under, and who filed it.
    filed: Mutex<HashMap<String, (String, Path)>>,
}

impl Filings {
    pub(crate) fn new(state: Arc<ShadowState>) -> Self {
        Self {
            state,
            filed: Mutex::default(),
        }
    }

    /// Files what kcm-rs `would` write on `item` (`None`: nothing, which clears `path`'s filing),
    /// decided on `inputs`: the parts of the object the decision read. Not its resourceVersion, which
    /// a status write or a Lease renewal moves without changing the decision, and which would keep a
    /// busy object from ever settling. Returns when to look again for it to settle. In a namespace
    /// being deleted nothing is held against anything: the namespace controller deletes there too.
    pub(crate) async fn observe(
        &self,
        client: &Client,
        item: &Identity,
        path: Path,
        would: Option<String>,
        inputs: impl Hash,
    ) -> Option<Duration> {
        let Some(line) = would else {
            self.clear(&item.uid, path);
            return None;
        };
        if item.is_namespaced() && namespace_terminating(client, &item.namespace).await {
            self.forget(&item.uid);
            return None;
        }
        let fingerprint = fingerprint((&line, inputs));
        let object = object(item);
        self.filed.lock().insert(item.uid.clone(), (object.clone(), path));
        self.state.observe(COMPONENT, &object, fingerprint, vec![line])
    }

    /// Who filed a disagreement about the object with this UID, if anyone did.
    pub(crate) fn filed_by(&self, uid: &str) -> Option<Path> {
        self.filed.lock().get(uid).map(|(_, path)| *path)
    }

    /// Clears `path`'s filing for the UID; another worker's stays.
    fn clear(&self, uid: &str, path: Path) {
        if self.filed_by(uid) == Some(path) {
            self.forget(uid);
        }
    }

    /// Forgets the object with this UID: gone, or no longer the collector's. An object made again
    /// under the name keeps its own filing.
    pub(crate) fn forget(&self, uid: &str) {
        let mut filed = self.filed.lock();
        let Some((object, _)) = filed.remove(uid) else {
            return;
        };
        if !filed.values().any(|(o, _)| *o == object) {
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

fn fingerprint(parts: impl Hash) -> u64 {
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
    async fn a_filing_is_forgotten_by_uid_and_cleared_only_by_its_worker() {
        let state = Arc::new(ShadowState::new(Duration::ZERO, |_| {}));
        let filings = Filings::new(state.clone());
        let client = testing::ApiServer::new().client();
        let line = || would(&Action::Delete(Policy::Background));
        filings
            .observe(&client, &item(""), Path::Orphan, line(), ())
            .await;
        assert_eq!(state.current().len(), 1);
        filings.observe(&client, &item(""), Path::Delete, None, ()).await;
        assert_eq!(
            state.current().len(),
            1,
            "the deleting worker leaves the orphaning one's"
        );
        filings.observe(&client, &item(""), Path::Orphan, None, ()).await;
        assert!(state.current().is_empty());

        filings
            .observe(&client, &item(""), Path::Delete, line(), ())
            .await;
        let mut again = item("");
        again.uid = "u2".into();
        filings.observe(&client, &again, Path::Delete, line(), ()).await;
        filings.forget("u1");
        assert_eq!(
            state.current().len(),
            1,
            "the object made again under the name stays"
        );
        filings.forget("u2");
        assert!(state.current().is_empty());
    }
}
