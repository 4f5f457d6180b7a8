use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{api::core::v1::Pod, apimachinery::pkg::apis::meta::v1::OwnerReference};
use kube::api::ObjectMeta;
use proptest::prelude::*;

use super::*;
use crate::store::index::{IndexFn, NAMESPACE_INDEX, namespace_index};

/// A multi-valued index for these tests: objects by the UID of their controller, if any.
const CONTROLLER_UID_INDEX: &str = "controller-uid";

fn controller_uid_index<K: kube::Resource>() -> IndexFn<K> {
    std::sync::Arc::new(|obj: &K| {
        obj.meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.controller == Some(true))
            .map(|r| r.uid.clone())
            .take(1)
            .collect()
    })
}

fn pod(ns: &str, name: &str, owner: Option<&str>) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            owner_references: owner.map(|uid| {
                vec![OwnerReference {
                    uid: uid.into(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })
}

fn indexed_store() -> Store<Pod> {
    let s = Store::new();
    s.add_index(NAMESPACE_INDEX, namespace_index());
    s.add_index(CONTROLLER_UID_INDEX, controller_uid_index());
    s
}

fn names(mut pods: Vec<Arc<Pod>>) -> Vec<String> {
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
}

#[test]
fn indexes_follow_updates_and_deletes() {
    let s = indexed_store();
    s.upsert("a/1".into(), pod("a", "1", Some("rs-1")));
    s.upsert("a/2".into(), pod("a", "2", Some("rs-1")));
    s.upsert("b/3".into(), pod("b", "3", None));
    assert_eq!(names(s.by_index(NAMESPACE_INDEX, "a").unwrap()), ["1", "2"]);
    assert_eq!(
        names(s.by_index(CONTROLLER_UID_INDEX, "rs-1").unwrap()),
        ["1", "2"]
    );

    // Released by its owner.
    s.upsert("a/2".into(), pod("a", "2", None));
    assert_eq!(names(s.by_index(CONTROLLER_UID_INDEX, "rs-1").unwrap()), ["1"]);
    s.delete(&"a/1".into());
    assert!(s.by_index(CONTROLLER_UID_INDEX, "rs-1").unwrap().is_empty());
    assert_eq!(
        s.index_values(CONTROLLER_UID_INDEX).unwrap(),
        Vec::<String>::new(),
        "no empty sets kept"
    );
    s.assert_invariants();
}

#[test]
fn index_added_later_covers_existing_items() {
    let s: Store<Pod> = Store::new();
    s.upsert("a/1".into(), pod("a", "1", None));
    assert_eq!(
        s.by_index(NAMESPACE_INDEX, "a"),
        Err(NoSuchIndex(NAMESPACE_INDEX.into()))
    );
    s.add_index(NAMESPACE_INDEX, namespace_index());
    assert_eq!(names(s.by_index(NAMESPACE_INDEX, "a").unwrap()), ["1"]);
}

#[test]
fn replace_rebuilds_indexes() {
    let s = indexed_store();
    s.upsert("a/1".into(), pod("a", "1", Some("x")));
    s.replace([("b/2".into(), pod("b", "2", Some("y")))]);
    assert!(s.get("a/1").is_none());
    assert!(s.by_index(NAMESPACE_INDEX, "a").unwrap().is_empty());
    assert_eq!(names(s.by_index(CONTROLLER_UID_INDEX, "y").unwrap()), ["2"]);
    s.assert_invariants();
}

#[derive(Debug, Clone)]
enum Op {
    Upsert { ns: u8, name: u8, owner: Option<u8> },
    Delete { ns: u8, name: u8 },
    Replace(Vec<(u8, u8, Option<u8>)>),
}

fn op() -> impl Strategy<Value = Op> {
    let item = (0u8..3, 0u8..6, proptest::option::of(0u8..3));
    prop_oneof![
        8 => item.clone().prop_map(|(ns, name, owner)| Op::Upsert { ns, name, owner }),
        4 => (0u8..3, 0u8..6).prop_map(|(ns, name)| Op::Delete { ns, name }),
        1 => proptest::collection::vec(item, 0..6).prop_map(Op::Replace),
    ]
}

proptest! {
    /// The store and its indexes against a plain map and a recomputation of each index.
    #[test]
    fn matches_a_plain_map(ops in proptest::collection::vec(op(), 0..120)) {
        let s = indexed_store();
        let mut model: BTreeMap<String, Option<u8>> = BTreeMap::new();
        let key = |ns: u8, name: u8| format!("ns{ns}/p{name}");
        for op in ops {
            match op {
                Op::Upsert { ns, name, owner } => {
                    let uid = owner.map(|o| format!("uid{o}"));
                    s.upsert(key(ns, name).as_str().into(), pod(&format!("ns{ns}"), &format!("p{name}"), uid.as_deref()));
                    model.insert(key(ns, name), owner);
                }
                Op::Delete { ns, name } => {
                    prop_assert_eq!(s.delete(&key(ns, name).as_str().into()).is_some(), model.remove(&key(ns, name)).is_some());
                }
                Op::Replace(items) => {
                    model.clear();
                    let objs: Vec<_> = items.iter().map(|(ns, name, owner)| {
                        model.insert(key(*ns, *name), *owner);
                        let uid = owner.map(|o| format!("uid{o}"));
                        (ObjectKey::from(key(*ns, *name).as_str()), pod(&format!("ns{ns}"), &format!("p{name}"), uid.as_deref()))
                    }).collect();
                    s.replace(objs);
                }
            }
            s.assert_invariants();
            let keys: BTreeSet<String> = s.list_keys().iter().map(|k| k.to_string()).collect();
            prop_assert_eq!(keys, model.keys().cloned().collect::<BTreeSet<_>>());
            for o in 0u8..3 {
                let want: BTreeSet<String> = model.iter().filter(|(_, v)| **v == Some(o)).map(|(k, _)| k.clone()).collect();
                let got: BTreeSet<String> = s.index_keys(CONTROLLER_UID_INDEX, &format!("uid{o}")).unwrap().iter().map(|k| k.to_string()).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
