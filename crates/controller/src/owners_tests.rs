use std::sync::Arc;

use informer::{LabelMatcher, Lister, ObjectKey, Store};
use k8s_openapi::{
    api::apps::v1::{ReplicaSet, ReplicaSetSpec},
    apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta},
};

use super::*;
use crate::{CompactPod, testing::pod};

fn rs(name: &str, uid: &str, app: &str) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            selector: LabelSelector {
                match_labels: Some([("app".to_owned(), app.to_owned())].into()),
                ..LabelSelector::default()
            },
            ..ReplicaSetSpec::default()
        }),
        status: None,
    }
}

fn store_of(pods: Vec<CompactPod>) -> Store<CompactPod> {
    let store = Store::new();
    store.add_index(OWNER_INDEX, owner_index());
    for p in pods {
        store.upsert(ObjectKey::of(&p), Arc::new(p));
    }
    store
}

fn names(pods: &[Arc<CompactPod>]) -> Vec<String> {
    let mut n: Vec<_> = pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
    n.sort();
    n
}

#[test]
fn candidates_are_the_owners_own_objects_and_the_orphans_of_its_namespace() {
    let store = store_of(vec![
        pod("mine").owner("ReplicaSet", "a", "uid-a").build(),
        pod("theirs").owner("ReplicaSet", "b", "uid-b").build(),
        pod("orphan").build(),
    ]);
    let owner = rs("a", "uid-a", "x");
    assert_eq!(names(&candidates(&store, &owner)), ["mine", "orphan"]);
    assert_eq!(names(&controlled_by(&store, "uid-b")), ["theirs"]);
}

/// A pod controller's candidates: its own pods by namespace, kind, name and UID, and the orphans; a
/// pod whose reference has the owner's UID under another name or kind, or from another namespace,
/// is left out, as upstream's index key.
#[test]
fn a_pod_controllers_candidates_need_its_namespace_kind_and_name_too() {
    let mut elsewhere = pod("elsewhere").owner("ReplicaSet", "a", "uid-a").build();
    elsewhere.metadata.namespace = Some("other".into());
    let store = store_of(vec![
        pod("mine").owner("ReplicaSet", "a", "uid-a").build(),
        pod("other-name").owner("ReplicaSet", "b", "uid-a").build(),
        pod("other-kind").owner("Job", "a", "uid-a").build(),
        elsewhere,
        pod("orphan").build(),
    ]);
    let owner = rs("a", "uid-a", "x");
    assert_eq!(names(&pod_candidates(&store, &owner)), ["mine", "orphan"]);
    assert_eq!(
        names(&controlled_pods(&store, "ns", "ReplicaSet", "a", "uid-a")),
        ["mine"]
    );
    assert_eq!(
        names(&candidates(&store, &owner)),
        ["elsewhere", "mine", "orphan", "other-kind", "other-name"],
        "claims over ReplicaSets go by UID alone"
    );
}

#[test]
fn a_reference_resolves_only_to_the_same_kind_name_and_uid() {
    let store = Store::new();
    store.upsert(ObjectKey::new(Some("ns"), "a"), Arc::new(rs("a", "uid-a", "x")));
    let lister = Lister::new(store);
    let reference = |kind: &str, uid: &str| OwnerReference {
        api_version: "apps/v1".into(),
        kind: kind.into(),
        name: "a".into(),
        uid: uid.into(),
        controller: Some(true),
        ..OwnerReference::default()
    };
    assert!(resolve_controller(&lister, Some("ns"), &reference("ReplicaSet", "uid-a")).is_some());
    assert!(resolve_controller(&lister, Some("ns"), &reference("ReplicaSet", "uid-old")).is_none());
    assert!(resolve_controller(&lister, Some("ns"), &reference("Job", "uid-a")).is_none());
}

#[test]
fn an_orphan_wakes_the_owners_selecting_it_and_none_without_labels() {
    let store = Store::new();
    for (name, app) in [("a", "x"), ("b", "y")] {
        store.upsert(ObjectKey::new(Some("ns"), name), Arc::new(rs(name, name, app)));
    }
    let lister = Lister::new(store);
    let select = |r: &ReplicaSet| {
        LabelMatcher::from_selector(r.spec.as_ref().map(|s| &s.selector))
            .ok()
            .filter(|m| matches!(m, LabelMatcher::Match(_)))
    };
    let labelled = pod("p").label("app", "x").build();
    let woken = selecting(&lister, &labelled.metadata, select);
    assert_eq!(woken.len(), 1);
    assert_eq!(woken[0].metadata.name.as_deref(), Some("a"));
    let bare = pod("q").build();
    assert!(selecting(&lister, &bare.metadata, select).is_empty());
}

#[test]
fn the_owner_of_any_kind_takes_its_type_from_the_kind() {
    let mut r = rs("a", "uid-a", "x");
    r.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let o = Owner::of(&r);
    assert_eq!(
        (o.api_version.as_str(), o.kind.as_str()),
        ("apps/v1", "ReplicaSet")
    );
    assert_eq!(
        (o.namespace.as_str(), o.name.as_str(), o.uid.as_str()),
        ("ns", "a", "uid-a")
    );
    assert!(o.deleting);
}
