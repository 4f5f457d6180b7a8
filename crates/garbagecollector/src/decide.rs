//! What the collector does with an object whose owners it has looked up (upstream
//! `attemptToDeleteItem` after `classifyReferences`): pure, so that every branch is a unit test.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::identity::{FOREGROUND, ORPHAN};

/// An owner as the API server showed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerState {
    /// Not found, or another object (another UID) under its name: the reference dangles.
    Absent,
    /// Being deleted in the foreground: it waits for this dependent to go.
    WaitingForDependents,
    /// Present, and not waiting for its dependents.
    Solid,
}

/// A deletion's propagation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Background,
    Foreground,
    Orphan,
}

/// What to do with the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// An owner holds it, and no reference needs removing.
    Keep,
    /// An owner holds it; these references (by owner UID: the dangling ones and those of owners
    /// waiting for it) are removed, so that nothing waits on it or names what is gone.
    DropReferences(Vec<String>),
    /// An owner waits for it and it has dependents of its own: deleted in the foreground, so that
    /// they go first. When one of them waits for its own dependents too, its references are first
    /// made non-blocking, against a cycle of foreground deletions waiting on each other.
    DeleteForeground { unblock_first: bool },
    /// No owner holds it: deleted with the policy its finalizers ask for (background if none).
    Delete(Policy),
}

/// What the collector knows of the object itself from the graph.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dependents {
    pub count: usize,
    /// Whether one of them is itself deleting its dependents in the foreground.
    pub one_deletes_its_own: bool,
}

/// The decision for an object with `owners` (each with what was found of it), `dependents` of
/// its own and `finalizers`.
pub fn decide(
    owners: &[(OwnerReference, OwnerState)],
    dependents: Dependents,
    finalizers: &[String],
) -> Action {
    let of = |state: OwnerState| {
        owners
            .iter()
            .filter(move |(_, s)| *s == state)
            .map(|(r, _)| r.uid.clone())
    };
    let waiting = of(OwnerState::WaitingForDependents).count();
    if of(OwnerState::Solid).next().is_some() {
        let drop: Vec<String> = of(OwnerState::Absent)
            .chain(of(OwnerState::WaitingForDependents))
            .collect();
        return if drop.is_empty() {
            Action::Keep
        } else {
            Action::DropReferences(drop)
        };
    }
    if waiting > 0 && dependents.count > 0 {
        return Action::DeleteForeground {
            unblock_first: dependents.one_deletes_its_own,
        };
    }
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    Action::Delete(if has(ORPHAN) {
        Policy::Orphan
    } else if has(FOREGROUND) {
        Policy::Foreground
    } else {
        Policy::Background
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: uid.into(),
            uid: uid.into(),
            ..OwnerReference::default()
        }
    }

    fn with(states: &[(&str, OwnerState)]) -> Vec<(OwnerReference, OwnerState)> {
        states.iter().map(|(u, s)| (owner(u), *s)).collect()
    }

    const NONE: Dependents = Dependents {
        count: 0,
        one_deletes_its_own: false,
    };

    #[test]
    fn a_solid_owner_keeps_the_object_and_drops_the_references_that_dangle_or_wait() {
        use OwnerState::*;
        assert_eq!(decide(&with(&[("a", Solid)]), NONE, &[]), Action::Keep);
        assert_eq!(
            decide(
                &with(&[("a", Absent), ("b", Solid), ("c", WaitingForDependents)]),
                NONE,
                &[]
            ),
            Action::DropReferences(vec!["a".into(), "c".into()])
        );
    }

    #[test]
    fn with_no_owner_left_the_object_goes_as_its_finalizers_ask() {
        use OwnerState::*;
        let gone = with(&[("a", Absent)]);
        assert_eq!(decide(&gone, NONE, &[]), Action::Delete(Policy::Background));
        assert_eq!(
            decide(&gone, NONE, &[ORPHAN.into()]),
            Action::Delete(Policy::Orphan)
        );
        assert_eq!(
            decide(&gone, NONE, &[FOREGROUND.into()]),
            Action::Delete(Policy::Foreground)
        );
        assert_eq!(
            decide(&gone, NONE, &[FOREGROUND.into(), ORPHAN.into()]),
            Action::Delete(Policy::Orphan)
        );
    }

    #[test]
    fn an_owner_waiting_for_an_object_with_dependents_has_it_deleted_in_the_foreground() {
        use OwnerState::*;
        let waiting = with(&[("a", WaitingForDependents), ("b", Absent)]);
        let deps = Dependents {
            count: 2,
            one_deletes_its_own: false,
        };
        assert_eq!(
            decide(&waiting, deps, &[]),
            Action::DeleteForeground { unblock_first: false }
        );
        let cycle = Dependents {
            one_deletes_its_own: true,
            ..deps
        };
        assert_eq!(
            decide(&waiting, cycle, &[]),
            Action::DeleteForeground { unblock_first: true }
        );
        // Without dependents of its own it simply goes, in the background.
        assert_eq!(decide(&waiting, NONE, &[]), Action::Delete(Policy::Background));
    }
}
