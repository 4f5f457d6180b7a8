//! Decoding without managedFields gives what decoding everything and then dropping them gave.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::WatchEvent;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{WithoutManagedFields, listwatch::event};

/// Recorded from the local control plane (`kubectl get -o json --show-managed-fields`): a Deployment
/// after `kubectl create` and `kubectl set image`, and its new ReplicaSet.
const REPLICASET: &str = include_str!("../../../../benches/fixtures/replicaset.json");
const DEPLOYMENT: &str = include_str!("../../../../benches/fixtures/deployment.json");

/// What kube's `Api` and the informers' transform gave before.
fn whole_then_stripped<K: DeserializeOwned + kube::Resource>(json: &str) -> K {
    let mut obj: K = serde_json::from_str(json).expect("decodes whole");
    assert!(
        obj.meta().managed_fields.is_some(),
        "the fixture has managedFields"
    );
    obj.meta_mut().managed_fields = None;
    obj
}

fn lean<K: DeserializeOwned>(json: &str) -> Result<K, serde_json::Error> {
    serde_json::from_str::<WithoutManagedFields<K>>(json).map(|o| o.0)
}

#[test]
fn recorded_objects_decode_as_whole_ones_stripped() {
    assert_eq!(
        lean::<ReplicaSet>(REPLICASET).unwrap(),
        whole_then_stripped::<ReplicaSet>(REPLICASET)
    );
    assert_eq!(
        lean::<Deployment>(DEPLOYMENT).unwrap(),
        whole_then_stripped::<Deployment>(DEPLOYMENT)
    );
}

#[test]
fn only_the_objects_own_managed_fields_are_skipped() {
    let mut rs: Value = serde_json::from_str(REPLICASET).unwrap();
    let entries = rs["metadata"]["managedFields"].clone();
    rs["spec"]["template"]["metadata"]["managedFields"] = entries.clone();
    let got = lean::<ReplicaSet>(&rs.to_string()).unwrap();
    assert_eq!(got.metadata.managed_fields, None);
    let template = got.spec.unwrap().template.unwrap().metadata.unwrap();
    assert_eq!(
        template.managed_fields.map(|m| m.len()),
        entries.as_array().map(Vec::len)
    );
}

#[test]
fn an_escaped_key_is_the_same_key() {
    let json = r#"{"metadata":{"name":"a","managed\u0046ields":[{"manager":"m"}]},"spec":{"replicas":1,"selector":{}}}"#;
    let rs = lean::<ReplicaSet>(json).unwrap();
    assert_eq!(rs.metadata.name.as_deref(), Some("a"));
    assert_eq!(rs.metadata.managed_fields, None);
}

#[test]
fn a_wrong_value_elsewhere_is_still_an_error() {
    let json = r#"{"metadata":{"name":7,"managedFields":[]}}"#;
    assert!(lean::<ReplicaSet>(json).is_err());
    assert!(lean::<ReplicaSet>(r#"{"metadata":"#).is_err());
}

#[test]
fn watch_lines_read_as_kube_reads_them() {
    let rs: Value = serde_json::from_str(REPLICASET).unwrap();
    let line = json!({"type": "MODIFIED", "object": rs}).to_string();
    match event::<ReplicaSet>(line.as_bytes()) {
        Some(Ok(WatchEvent::Modified(got))) => {
            assert_eq!(got, whole_then_stripped::<ReplicaSet>(REPLICASET));
        }
        other => panic!("a modification, got {other:?}"),
    }
    assert!(event::<ReplicaSet>(b"").is_none(), "an empty line is skipped");
    let expired = json!({"type": "ERROR", "object": {"kind": "Status", "code": 410}}).to_string();
    assert!(
        matches!(event::<ReplicaSet>(expired.as_bytes()), Some(Ok(WatchEvent::Error(s))) if s.code == 410)
    );
    let refused = json!({"kind": "Status", "status": "Failure", "code": 403}).to_string();
    assert!(
        matches!(event::<ReplicaSet>(refused.as_bytes()), Some(Err(kube::Error::Api(s))) if s.code == 403)
    );
    assert!(matches!(
        event::<ReplicaSet>(b"[7]"),
        Some(Err(kube::Error::SerdeError(_)))
    ));
}

/// `value` with its `metadata.managedFields` removed, where both are objects.
fn stripped(mut value: Value) -> Value {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    value
}

fn any_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("metadata".to_owned()),
        Just("managedFields".to_owned()),
        Just("spec".to_owned()),
        "[a-z]{1,3}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #[test]
    fn any_document_decodes_as_itself_without_its_managed_fields(value in any_json()) {
        let text = value.to_string();
        let whole: Value = serde_json::from_str(&text).expect("valid JSON decodes");
        let got = lean::<Value>(&text).expect("valid JSON decodes");
        prop_assert_eq!(got, stripped(whole));
    }

    #[test]
    fn any_cut_of_a_recorded_object_is_an_error_not_a_panic(cut in 0..REPLICASET.len()) {
        if REPLICASET.is_char_boundary(cut) {
            let _ = lean::<ReplicaSet>(&REPLICASET[..cut]);
        }
    }
}
