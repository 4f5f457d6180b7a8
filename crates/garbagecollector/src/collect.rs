//! What a worker does with one object (upstream `attemptToDeleteItem`,
//! `processDeletingDependentsItem` and `attemptToOrphanWorker`): read it live, look up its owners
//! live, [`decide`], and write. The graph says only which objects to look at and who depends on
//! whom; every deletion is decided on what the API server answers.

use std::{hash::Hash, time::Duration};

use futures::future::join_all;
use informer::ObjectKey;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::{
    controller::GarbageCollector,
    decide::{Action, Dependents, OwnerState, Policy, decide},
    error::GcError,
    graph::Node,
    identity::{FOREGROUND, Identity, ORPHAN, waits_with},
    operations::{drop_references, drop_references_merge, unblock, unblock_merge},
    shadow::{self, Path},
};

/// Why a look at an object ended without a write to wait for.
enum Lookup {
    /// Found gone, or beyond what the collector acts on: nothing to come back for.
    Forget,
    /// Done; if the object is still known only as an owner, come back.
    Done,
    /// Shadow mode: what kcm-rs would write must stand unchanged this long before it is reported.
    Settle(Duration),
}

impl GarbageCollector {
    /// A worker's look at the object with this UID; `Ok(Some(d))` asks for it again after `d`.
    pub(crate) async fn attempt_to_delete(&self, uid: &str) -> Result<Option<Duration>, GcError> {
        let Some(node) = self.graph.lock().node(uid).cloned() else {
            self.forget_shadow(uid);
            return Ok(None);
        };
        match self.attempt(&node).await? {
            Lookup::Forget => {
                self.forget_shadow(uid);
                Ok(None)
            }
            Lookup::Settle(after) => Ok(Some(after)),
            Lookup::Done if self.graph.lock().node(uid).is_some_and(|n| n.virtual_) => {
                Err(GcError::NotObserved(Box::new(node.identity)))
            }
            Lookup::Done => Ok(None),
        }
    }

    /// Shadow mode: files what kcm-rs `would` write on `item` (or nothing) for the worker on `path`,
    /// decided on `inputs`; the look ends waiting for it to settle, or done.
    async fn file(&self, item: &Identity, path: Path, would: Option<String>, inputs: impl Hash) -> Lookup {
        let Some(filings) = &self.shadow else {
            return Lookup::Done;
        };
        match filings.observe(&self.client, item, path, would, inputs).await {
            Some(after) => Lookup::Settle(after),
            None => Lookup::Done,
        }
    }

    fn forget_shadow(&self, uid: &str) {
        if let Some(filings) = &self.shadow {
            filings.forget(uid);
        }
    }

    async fn attempt(&self, node: &Node) -> Result<Lookup, GcError> {
        let item = &node.identity;
        tracing::debug!(item = %item, virtual_ = node.virtual_, "processing item");
        if node.being_deleted && !node.deleting_dependents {
            // Upstream leaves it too: whatever deletes it does the rest.
            return Ok(self.file(item, Path::Delete, None, ()).await);
        }
        let mapping = self.ops.mapping(&item.api_version, &item.kind)?;
        if mapping.namespaced && !item.is_namespaced() {
            // A cluster-scoped object naming a namespaced owner made this virtual node: it cannot
            // be looked up, and the dependent is never collected for it.
            return Ok(Lookup::Forget);
        }
        let Some(latest) = self.ops.get(item).await? else {
            self.found_gone(item.clone());
            return Ok(Lookup::Forget);
        };
        if latest.metadata.uid.as_deref() != Some(&item.uid) {
            self.found_gone(item.clone());
            return Ok(Lookup::Forget);
        }
        let finalizers = latest.metadata.finalizers.clone().unwrap_or_default();
        if node.deleting_dependents {
            return self.finish_foreground(node, &finalizers).await;
        }
        let refs = latest.metadata.owner_references.clone().unwrap_or_default();
        if refs.is_empty() {
            return Ok(self.file(item, Path::Delete, None, ()).await);
        }
        let mut owners = Vec::with_capacity(refs.len());
        for r in refs.iter() {
            match self.owner_state(r, item).await? {
                Some(state) => owners.push((r.clone(), state)),
                None => return Ok(Lookup::Forget),
            }
        }
        let dependents = {
            let graph = self.graph.lock();
            let current = graph.node(&item.uid);
            let deps = current.map(|n| &n.dependents);
            Dependents {
                count: deps.map_or(0, |d| d.len()),
                one_deletes_its_own: deps.is_some_and(|d| graph.nodes_of(d).any(|n| n.deleting_dependents)),
            }
        };
        let rv = latest.metadata.resource_version.clone();
        let action = decide(&owners, dependents, &finalizers);
        if !matches!(action, Action::Keep) {
            tracing::info!(item = %item, ?action, "garbage collector acting on item");
        }
        if self.shadow.is_some() {
            let inputs = (refs.iter().map(|r| &r.uid).collect::<Vec<_>>(), &finalizers);
            return Ok(self
                .file(item, Path::Delete, shadow::would(&action), inputs)
                .await);
        }
        let gone = match action {
            Action::Keep => false,
            Action::DropReferences(uids) => {
                let strategic = drop_references(&item.uid, &uids);
                !self
                    .ops
                    .patch(item, strategic, |live| drop_references_merge(live, &uids))
                    .await?
            }
            Action::DeleteForeground { unblock_first } => {
                if unblock_first {
                    let strategic = unblock(&item.uid, &node.owners);
                    self.ops.patch(item, strategic, unblock_merge).await?;
                }
                !self
                    .ops
                    .delete(item, rv.as_deref(), &refs, Policy::Foreground)
                    .await?
            }
            Action::Delete(policy) => !self.ops.delete(item, rv.as_deref(), &refs, policy).await?,
        };
        if gone {
            self.found_gone(item.clone());
            return Ok(Lookup::Forget);
        }
        Ok(Lookup::Done)
    }

    /// What the API server shows of the owner `r` of `item` (upstream `isDangling`, with the
    /// absent-owner cache); `None` for a namespaced owner of a cluster-scoped object, which the
    /// collector leaves alone.
    async fn owner_state(&self, r: &OwnerReference, item: &Identity) -> Result<Option<OwnerState>, GcError> {
        let cluster = Identity::of_owner(r, "");
        let in_namespace = Identity::of_owner(r, &item.namespace);
        {
            let mut graph = self.graph.lock();
            if graph.absent.has(&cluster) || graph.absent.has(&in_namespace) {
                return Ok(Some(OwnerState::Absent));
            }
        }
        let mapping = self.ops.mapping(&r.api_version, &r.kind)?;
        if mapping.namespaced && !item.is_namespaced() {
            tracing::info!(item = %item, owner = %cluster, "item is cluster-scoped, but refers to a namespaced owner");
            return Ok(None);
        }
        let owner = if mapping.namespaced { in_namespace } else { cluster };
        let found = self.ops.get(&owner).await?;
        let Some(live) = found.filter(|m| m.metadata.uid.as_deref() == Some(&r.uid)) else {
            self.graph.lock().absent.add(owner);
            return Ok(Some(OwnerState::Absent));
        };
        let finalizers = live.metadata.finalizers.unwrap_or_default();
        Ok(Some(
            if waits_with(
                live.metadata.deletion_timestamp.is_some(),
                &finalizers,
                FOREGROUND,
            ) {
                OwnerState::WaitingForDependents
            } else {
                OwnerState::Solid
            },
        ))
    }

    /// An object deleted in the foreground: once no dependent blocks it, its finalizer goes; until
    /// then, its blocking dependents are looked at.
    async fn finish_foreground(&self, node: &Node, finalizers: &[String]) -> Result<Lookup, GcError> {
        if self.shadow.is_some() && !finalizers.iter().any(|f| f == FOREGROUND) {
            // Upstream removed it: its removal of a finalizer already gone writes nothing.
            return Ok(self.file(&node.identity, Path::Delete, None, ()).await);
        }
        let blocking: Vec<(String, bool)> = self
            .graph
            .lock()
            .blocking_dependents(&node.identity.uid)
            .into_iter()
            .map(|d| (d.identity.uid.clone(), d.deleting_dependents))
            .collect();
        if blocking.is_empty() {
            tracing::info!(item = %node.identity, "remove DeleteDependents finalizer for item");
            if self.shadow.is_some() {
                let would =
                    format!("metadata.finalizers: kcm-rs would remove {FOREGROUND}: no dependent blocks it");
                return Ok(self
                    .file(&node.identity, Path::Delete, Some(would), finalizers)
                    .await);
            }
            self.ops.remove_finalizer(&node.identity, FOREGROUND).await?;
            return Ok(Lookup::Done);
        }
        for (uid, deleting_its_own) in blocking {
            if !deleting_its_own {
                self.delete_queue.add(ObjectKey::new(None, &uid));
            }
        }
        Ok(self.file(&node.identity, Path::Delete, None, ()).await)
    }

    /// An owner deleted with the orphan policy: its dependents lose their references to it, then it
    /// loses its finalizer. `Ok(Some(d))` asks for it again after `d` (shadow mode's settle time).
    pub(crate) async fn attempt_to_orphan(&self, uid: &str) -> Result<Option<Duration>, GcError> {
        let found = {
            let graph = self.graph.lock();
            graph.node(uid).map(|n| {
                let deps: Vec<Identity> = graph
                    .nodes_of(&n.dependents)
                    .map(|d| d.identity.clone())
                    .collect();
                (n.identity.clone(), deps)
            })
        };
        let Some((owner, dependents)) = found else {
            self.forget_shadow(uid);
            return Ok(None);
        };
        tracing::info!(owner = %owner, dependents = dependents.len(), "orphaning dependents");
        if self.shadow.is_some() {
            return self.orphan_shadowed(&owner, dependents.len()).await;
        }
        let owners = [owner.uid.clone()];
        let results = join_all(dependents.iter().map(|d| {
            self.ops.patch(d, drop_references(&d.uid, &owners), |live| {
                drop_references_merge(live, &owners)
            })
        }))
        .await;
        let errors: Vec<String> = dependents
            .iter()
            .zip(results)
            .filter_map(|(d, r)| r.err().map(|e| format!("orphaning {d} failed, {e}")))
            .collect();
        if !errors.is_empty() {
            return Err(GcError::Orphaning {
                owner: Box::new(owner),
                errors: format!("[{}]", errors.join(", ")),
            });
        }
        self.ops.remove_finalizer(&owner, ORPHAN).await.map(|()| None)
    }

    /// Shadow mode's look at an owner being orphaned: unlike upstream's worker, it reads the owner
    /// live, since nothing else tells it that upstream's collector has already removed `orphan`.
    async fn orphan_shadowed(
        &self,
        owner: &Identity,
        dependents: usize,
    ) -> Result<Option<Duration>, GcError> {
        let live = self.ops.get(owner).await?;
        let Some(live) = live.filter(|m| m.metadata.uid.as_deref() == Some(&owner.uid)) else {
            self.forget_shadow(&owner.uid);
            return Ok(None);
        };
        let finalizers = live.metadata.finalizers.unwrap_or_default();
        let would = finalizers.iter().any(|f| f == ORPHAN).then(|| {
            format!(
                "metadata.finalizers: kcm-rs would orphan its {dependents} dependents, then remove {ORPHAN}"
            )
        });
        let filed = self.file(owner, Path::Orphan, would, (dependents, &finalizers));
        Ok(match filed.await {
            Lookup::Settle(after) => Some(after),
            Lookup::Done | Lookup::Forget => None,
        })
    }
}

#[cfg(test)]
#[path = "collect_tests.rs"]
mod tests;
