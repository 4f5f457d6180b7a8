//! The dependency graph (upstream `GraphBuilder.processGraphChanges`): every object the monitors
//! see, by UID, with its owners and dependents. Objects named as owners but not seen yet are
//! *virtual* nodes until a monitor reports them or the collector finds them gone.
//!
//! [`Graph::apply`] is pure: it changes the graph for one event and says what the workers should
//! look at ([`Effects`]); the graph task applies them to the queues and the event recorder.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::{
    absent::AbsentOwners,
    identity::{FOREGROUND, Identity, ORPHAN, blocks, waits_with},
};

/// One object of the graph.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub identity: Identity,
    pub owners: Vec<OwnerReference>,
    /// The UIDs of the nodes whose owners name this one.
    pub dependents: BTreeSet<String>,
    /// Named as an owner, not yet seen by a monitor.
    pub virtual_: bool,
    /// Seen with a deletionTimestamp: a one-way state.
    pub being_deleted: bool,
    /// Seen being deleted with the `foregroundDeletion` finalizer.
    pub deleting_dependents: bool,
}

/// An object as a monitor (or the collector, for one found gone) reports it.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub identity: Identity,
    pub owners: Vec<OwnerReference>,
    pub deleting: bool,
    pub finalizers: Vec<String>,
}

/// What happened to an object.
#[derive(Debug, Clone)]
pub enum Change {
    Added(Observed),
    /// With the object's state before, for the start of a deletion.
    Updated {
        old: Observed,
        new: Observed,
    },
    Deleted(Observed),
    /// The collector found the object gone (404, or another UID under its name): only its
    /// identity is known (upstream's virtual delete event).
    FoundGone(Identity),
}

/// What one change asks of the workers. UIDs may repeat; the queues collapse them.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    pub attempt_to_delete: Vec<String>,
    /// Asked again after the queue's backoff (a virtual node that took another identity).
    pub attempt_to_delete_later: Vec<String>,
    pub attempt_to_orphan: Vec<String>,
    /// Dependents whose ownerReference (by owner UID) names a namespaced owner in another namespace:
    /// the `OwnerRefInvalidNamespace` warning.
    pub invalid_namespace: Vec<(Identity, OwnerReference)>,
}

/// The graph, and the owners found absent (upstream's `absentOwnerCache`, shared with the workers).
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    pub absent: AbsentOwners,
}

impl Graph {
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes of `uids` that are in the graph.
    pub fn nodes_of<'a>(
        &'a self,
        uids: impl IntoIterator<Item = &'a String>,
    ) -> impl Iterator<Item = &'a Node> {
        uids.into_iter().filter_map(|u| self.nodes.get(u))
    }

    /// The dependents whose reference to `uid` blocks its foreground deletion.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<&Node> {
        let Some(n) = self.nodes.get(uid) else {
            return Vec::new();
        };
        self.nodes_of(&n.dependents)
            .filter(|d| d.owners.iter().any(|o| o.uid == uid && blocks(o)))
            .collect()
    }

    /// Applies one change.
    pub fn apply(&mut self, change: Change) -> Effects {
        let mut fx = Effects::default();
        match change {
            Change::Added(obj) => self.upsert(None, obj, &mut fx),
            Change::Updated { old, new } => self.upsert(Some(old), new, &mut fx),
            Change::Deleted(obj) => {
                self.observe(&obj.identity, &mut fx);
                self.delete(&obj.identity, false, &mut fx);
            }
            Change::FoundGone(identity) => self.delete(&identity, true, &mut fx),
        }
        fx
    }

    /// A virtual node seen for real takes the identity it was seen with; dependents that named it
    /// otherwise are looked at again.
    fn observe(&mut self, seen: &Identity, fx: &mut Effects) {
        let Some(node) = self.nodes.get(&seen.uid).filter(|n| n.virtual_) else {
            return;
        };
        if node.identity != *seen {
            let (_, mismatched) = self.partition(&node.dependents, seen);
            for dep in mismatched {
                let d = &self.nodes[&dep];
                if seen.is_namespaced() && d.identity.namespace != seen.namespace {
                    self.report_invalid_namespace(d, &seen.uid, fx);
                }
                fx.attempt_to_delete.push(dep);
            }
        }
        let node = self.nodes.get_mut(&seen.uid).expect("checked above");
        node.identity = seen.clone();
        node.virtual_ = false;
    }

    fn upsert(&mut self, old: Option<Observed>, new: Observed, fx: &mut Effects) {
        let uid = new.identity.uid.clone();
        self.observe(&new.identity, fx);
        if let Some(existing) = self.nodes.get(&uid) {
            let diff = ReferenceDiff::between(&existing.owners, &new.owners);
            if !diff.is_empty() {
                self.unblocked_owners(&diff, fx);
                let node = self.nodes.get_mut(&uid).expect("present");
                node.owners = new.owners.clone();
                self.add_to_owners(&uid, &diff.added, fx);
                self.remove_from_owners(&uid, &diff.removed);
            }
            if new.deleting {
                self.nodes.get_mut(&uid).expect("present").being_deleted = true;
            }
        } else {
            let node = Node {
                identity: new.identity.clone(),
                owners: new.owners.clone(),
                dependents: BTreeSet::new(),
                virtual_: false,
                being_deleted: new.deleting,
                deleting_dependents: waits_with(new.deleting, &new.finalizers, FOREGROUND),
            };
            self.nodes.insert(uid.clone(), node);
            self.add_to_owners(&uid, &new.owners, fx);
        }
        self.transitions(old.as_ref(), &new, fx);
    }

    /// The start of an orphaning or a foreground deletion.
    fn transitions(&mut self, old: Option<&Observed>, new: &Observed, fx: &mut Effects) {
        let starts = |finalizer: &str| {
            waits_with(new.deleting, &new.finalizers, finalizer)
                && !old.is_some_and(|o| waits_with(o.deleting, &o.finalizers, finalizer))
        };
        let uid = &new.identity.uid;
        if starts(ORPHAN) {
            fx.attempt_to_orphan.push(uid.clone());
            return;
        }
        if starts(FOREGROUND) {
            let node = self.nodes.get_mut(uid).expect("just upserted");
            node.deleting_dependents = true;
            fx.attempt_to_delete.extend(node.dependents.iter().cloned());
            fx.attempt_to_delete.push(uid.clone());
        }
    }

    /// Links `uid` under each of `owners`, making virtual nodes of the unseen ones; a reference that
    /// may not name its owner rightly has the dependent looked at (upstream `addDependentToOwners`).
    fn add_to_owners(&mut self, uid: &str, owners: &[OwnerReference], fx: &mut Effects) {
        let namespace = self.nodes[uid].identity.namespace.clone();
        let mut suspicious = false;
        for owner in owners {
            let Some(node) = self.nodes.get_mut(&owner.uid) else {
                let mut node = Node {
                    identity: Identity::of_owner(owner, &namespace),
                    virtual_: true,
                    ..Node::default()
                };
                node.dependents.insert(uid.to_owned());
                self.nodes.insert(owner.uid.clone(), node);
                fx.attempt_to_delete.push(owner.uid.clone());
                continue;
            };
            node.dependents.insert(uid.to_owned());
            if suspicious {
                continue;
            }
            let node = &self.nodes[&owner.uid];
            let id = &node.identity;
            if id.is_namespaced() && id.namespace != namespace {
                if !node.virtual_ {
                    self.report_invalid_namespace(&self.nodes[uid], &owner.uid, fx);
                }
                suspicious = true;
            } else if !id.matches(owner)
                || (!id.is_namespaced() && id.namespace != namespace && node.virtual_)
            {
                suspicious = true;
            }
        }
        if suspicious {
            fx.attempt_to_delete.push(uid.to_owned());
        }
    }

    fn remove_from_owners(&mut self, uid: &str, owners: &[OwnerReference]) {
        for owner in owners {
            if let Some(node) = self.nodes.get_mut(&owner.uid) {
                node.dependents.remove(uid);
            }
        }
    }

    /// Owners whose reference from this dependent stopped blocking them are looked at: their
    /// foreground deletion may now finish.
    fn unblocked_owners(&self, diff: &ReferenceDiff, fx: &mut Effects) {
        let unblocked = diff.removed.iter().filter(|r| blocks(r)).chain(
            diff.changed
                .iter()
                .filter(|(old, new)| blocks(old) && !blocks(new))
                .map(|(_, new)| new),
        );
        for r in unblocked {
            if self.nodes.contains_key(&r.uid) {
                fx.attempt_to_delete.push(r.uid.clone());
            }
        }
    }

    fn delete(&mut self, gone: &Identity, found_gone: bool, fx: &mut Effects) {
        let Some(node) = self.nodes.get(&gone.uid) else {
            return;
        };
        if found_gone {
            // Found gone under coordinates other than the node's: only the dependents that named it
            // so are affected; the node stays for the others.
            if node.virtual_ {
                let (matching, mismatched) = self.partition(&node.dependents, gone);
                if !mismatched.is_empty() {
                    let alternate = if node.identity == *gone {
                        self.alternate_identity(&mismatched, gone)
                    } else {
                        None
                    };
                    self.dependents_of_absent(gone, matching, fx);
                    if let Some(other) = alternate {
                        self.nodes.get_mut(&gone.uid).expect("present").identity = other;
                        fx.attempt_to_delete_later.push(gone.uid.clone());
                    }
                    return;
                }
            } else if node.identity != *gone {
                let (matching, _) = self.partition(&node.dependents, gone);
                self.dependents_of_absent(gone, matching, fx);
                return;
            }
        }
        let node = self.nodes.remove(&gone.uid).expect("present");
        self.remove_from_owners(&gone.uid, &node.owners);
        if !node.dependents.is_empty() {
            self.absent.add(gone.clone());
        }
        fx.attempt_to_delete.extend(node.dependents.iter().cloned());
        for owner in &node.owners {
            if self.nodes.get(&owner.uid).is_some_and(|o| o.deleting_dependents) {
                fx.attempt_to_delete.push(owner.uid.clone());
            }
        }
    }

    fn dependents_of_absent(&mut self, gone: &Identity, matching: Vec<String>, fx: &mut Effects) {
        if !matching.is_empty() {
            self.absent.add(gone.clone());
            fx.attempt_to_delete.extend(matching);
        }
    }

    /// The dependents among `deps` whose reference to `owner.uid` names it by all its coordinates
    /// (and, for a namespaced owner, from its namespace), and those that name it otherwise
    /// (upstream `partitionDependents`). A dependent may be in both.
    fn partition(&self, deps: &BTreeSet<String>, owner: &Identity) -> (Vec<String>, Vec<String>) {
        let (mut matching, mut mismatched) = (Vec::new(), Vec::new());
        for d in self.nodes_of(deps) {
            let (mut hit, mut miss) = (false, false);
            if owner.is_namespaced() && owner.namespace != d.identity.namespace {
                miss = true;
            } else {
                for r in d.owners.iter().filter(|r| r.uid == owner.uid) {
                    if owner.matches(r) {
                        hit = true;
                    } else {
                        miss = true;
                    }
                }
            }
            if hit {
                matching.push(d.identity.uid.clone());
            }
            if miss {
                mismatched.push(d.identity.uid.clone());
            }
        }
        (matching, mismatched)
    }

    /// Which other identity the dependents give a virtual owner found gone under one: the next one
    /// after it in identity order, else the first, so that each is tried in turn (upstream
    /// `getAlternateOwnerIdentity`).
    fn alternate_identity(&self, deps: &[String], gone: &Identity) -> Option<Identity> {
        let mut seen = BTreeSet::from([gone.clone()]);
        for d in deps.iter().filter_map(|u| self.nodes.get(u)) {
            for r in d.owners.iter().filter(|r| r.uid == gone.uid) {
                if gone.matches(r) && (!gone.is_namespaced() || gone.namespace == d.identity.namespace) {
                    continue;
                }
                let mut candidate = Identity::of_owner(r, &d.identity.namespace);
                if !gone.is_namespaced()
                    && candidate.api_version == gone.api_version
                    && candidate.kind == gone.kind
                {
                    candidate.namespace.clear();
                }
                seen.insert(candidate);
            }
        }
        seen.remove(gone);
        seen.range(gone.clone()..)
            .find(|c| *c > gone)
            .or_else(|| seen.iter().next())
            .cloned()
    }

    fn report_invalid_namespace(&self, dependent: &Node, owner_uid: &str, fx: &mut Effects) {
        if let Some(r) = dependent.owners.iter().find(|r| r.uid == owner_uid) {
            fx.invalid_namespace.push((dependent.identity.clone(), r.clone()));
        }
    }
}

/// How a dependent's ownerReferences changed, by owner UID (upstream `referencesDiffs`).
#[derive(Debug, Default)]
struct ReferenceDiff {
    added: Vec<OwnerReference>,
    removed: Vec<OwnerReference>,
    /// Same owner UID, some other field changed: (before, after).
    changed: Vec<(OwnerReference, OwnerReference)>,
}

impl ReferenceDiff {
    fn between(old: &[OwnerReference], new: &[OwnerReference]) -> Self {
        let mut diff = Self::default();
        let mut before: HashMap<&str, &OwnerReference> = old.iter().map(|r| (r.uid.as_str(), r)).collect();
        for r in new {
            match before.remove(r.uid.as_str()) {
                Some(o) if o != r => diff.changed.push((o.clone(), r.clone())),
                Some(_) => {}
                None => diff.added.push(r.clone()),
            }
        }
        diff.removed = before.into_values().cloned().collect();
        diff
    }

    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
