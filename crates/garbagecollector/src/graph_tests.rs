//! The graph's cases, after upstream's `TestProcessGraphChanges`-style tables: which objects a
//! change has the workers look at.

use super::*;

fn id(name: &str, namespace: &str) -> Identity {
    Identity {
        kind: "ConfigMap".into(),
        api_version: "v1".into(),
        namespace: namespace.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
    }
}

fn owner_ref(owner: &Identity, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        block_owner_deletion: block.then_some(true),
        ..OwnerReference::default()
    }
}

fn obj(identity: &Identity, owners: &[OwnerReference]) -> Observed {
    Observed {
        identity: identity.clone(),
        owners: owners.to_vec(),
        ..Observed::default()
    }
}

fn deleting(identity: &Identity, finalizer: &str) -> Observed {
    Observed {
        deleting: true,
        finalizers: vec![finalizer.into()],
        ..obj(identity, &[])
    }
}

#[test]
fn a_dependent_seen_before_its_owner_makes_a_virtual_owner_to_look_up() {
    let mut g = Graph::default();
    let (owner, dep) = (id("owner", "ns"), id("dep", "ns"));
    let fx = g.apply(Change::Added(obj(&dep, &[owner_ref(&owner, false)])));
    assert_eq!(fx.attempt_to_delete, [owner.uid.as_str()]);
    assert!(g.node(&owner.uid).unwrap().virtual_);
    // Seen for real, under the same coordinates: nobody to look at again.
    let fx = g.apply(Change::Added(obj(&owner, &[])));
    assert_eq!(fx, Effects::default());
    assert!(!g.node(&owner.uid).unwrap().virtual_);
    assert!(g.node(&owner.uid).unwrap().dependents.contains(&dep.uid));
}

#[test]
fn an_owner_deleted_has_its_dependents_looked_at_and_is_remembered_absent() {
    let mut g = Graph::default();
    let (owner, a, b) = (id("owner", "ns"), id("a", "ns"), id("b", "ns"));
    g.apply(Change::Added(obj(&owner, &[])));
    g.apply(Change::Added(obj(&a, &[owner_ref(&owner, false)])));
    g.apply(Change::Added(obj(&b, &[owner_ref(&owner, false)])));
    let mut fx = g.apply(Change::Deleted(obj(&owner, &[])));
    fx.attempt_to_delete.sort();
    assert_eq!(fx.attempt_to_delete, [a.uid.clone(), b.uid.clone()]);
    assert!(g.node(&owner.uid).is_none());
    assert!(g.absent.has(&owner));
}

#[test]
fn a_foreground_deletion_starts_with_its_finalizer_once() {
    let mut g = Graph::default();
    let (owner, dep) = (id("owner", "ns"), id("dep", "ns"));
    g.apply(Change::Added(obj(&owner, &[])));
    g.apply(Change::Added(obj(&dep, &[owner_ref(&owner, true)])));
    let fx = g.apply(Change::Updated {
        old: obj(&owner, &[]),
        new: deleting(&owner, FOREGROUND),
    });
    assert_eq!(fx.attempt_to_delete, [dep.uid.clone(), owner.uid.clone()]);
    assert!(g.node(&owner.uid).unwrap().deleting_dependents);
    assert_eq!(g.blocking_dependents(&owner.uid).len(), 1);
    // The same state again is no new start.
    let fx = g.apply(Change::Updated {
        old: deleting(&owner, FOREGROUND),
        new: deleting(&owner, FOREGROUND),
    });
    assert_eq!(fx, Effects::default());
    // The dependent's reference stops blocking: the owner is looked at.
    let fx = g.apply(Change::Updated {
        old: obj(&dep, &[owner_ref(&owner, true)]),
        new: obj(&dep, &[owner_ref(&owner, false)]),
    });
    assert_eq!(fx.attempt_to_delete, [owner.uid.as_str()]);
    assert!(g.blocking_dependents(&owner.uid).is_empty());
}

#[test]
fn an_orphaning_goes_to_the_orphan_queue() {
    let mut g = Graph::default();
    let owner = id("owner", "ns");
    let fx = g.apply(Change::Added(deleting(&owner, ORPHAN)));
    assert_eq!(fx.attempt_to_orphan, [owner.uid.as_str()]);
    assert!(fx.attempt_to_delete.is_empty());
}

#[test]
fn a_namespaced_owner_in_another_namespace_is_reported_once_seen() {
    let mut g = Graph::default();
    let (owner, dep) = (id("owner", "a"), id("dep", "b"));
    g.apply(Change::Added(obj(&owner, &[])));
    let fx = g.apply(Change::Added(obj(&dep, &[owner_ref(&owner, false)])));
    assert_eq!(fx.attempt_to_delete, [dep.uid.as_str()]);
    assert_eq!(fx.invalid_namespace.len(), 1);
    assert_eq!(fx.invalid_namespace[0].0, dep);
}

#[test]
fn a_virtual_owner_seen_under_other_coordinates_has_its_dependents_looked_at() {
    let mut g = Graph::default();
    let (owner, dep) = (id("owner", "ns"), id("dep", "ns"));
    let wrong = OwnerReference {
        name: "other-name".into(),
        ..owner_ref(&owner, false)
    };
    g.apply(Change::Added(obj(&dep, &[wrong])));
    let fx = g.apply(Change::Added(obj(&owner, &[])));
    assert_eq!(fx.attempt_to_delete, [dep.uid.as_str()]);
}

#[test]
fn a_virtual_owner_found_gone_under_one_identity_takes_the_next_one_its_dependents_give() {
    let mut g = Graph::default();
    let (owner, a, b) = (id("owner", "ns"), id("a", "ns"), id("b", "ns"));
    let other = OwnerReference {
        kind: "Secret".into(),
        ..owner_ref(&owner, false)
    };
    g.apply(Change::Added(obj(&a, &[owner_ref(&owner, false)])));
    g.apply(Change::Added(obj(&b, &[other])));
    let fx = g.apply(Change::FoundGone(owner.clone()));
    assert_eq!(fx.attempt_to_delete, [a.uid.as_str()]);
    assert_eq!(fx.attempt_to_delete_later, [owner.uid.as_str()]);
    assert_eq!(g.node(&owner.uid).unwrap().identity.kind, "Secret");
    // Found gone under that one too: its dependent is looked at, and the node takes the first
    // identity again while a dependent still names it so.
    let secret = g.node(&owner.uid).unwrap().identity.clone();
    let fx = g.apply(Change::FoundGone(secret.clone()));
    assert_eq!(fx.attempt_to_delete, [b.uid.as_str()]);
    assert_eq!(g.node(&owner.uid).unwrap().identity, owner);
    // Once no dependent is left, found gone removes the node.
    g.apply(Change::Deleted(obj(&a, &[owner_ref(&owner, false)])));
    g.apply(Change::Deleted(obj(&b, &[owner_ref(&secret, false)])));
    let fx = g.apply(Change::FoundGone(owner.clone()));
    assert_eq!(fx, Effects::default());
    assert!(g.node(&owner.uid).is_none());
}

#[test]
fn a_dependent_leaving_its_owner_is_unlinked() {
    let mut g = Graph::default();
    let (owner, dep) = (id("owner", "ns"), id("dep", "ns"));
    g.apply(Change::Added(obj(&owner, &[])));
    g.apply(Change::Added(obj(&dep, &[owner_ref(&owner, false)])));
    g.apply(Change::Updated {
        old: obj(&dep, &[owner_ref(&owner, false)]),
        new: obj(&dep, &[]),
    });
    assert!(g.node(&owner.uid).unwrap().dependents.is_empty());
    let fx = g.apply(Change::Deleted(obj(&owner, &[])));
    assert_eq!(fx, Effects::default());
    assert!(!g.absent.has(&owner));
}
