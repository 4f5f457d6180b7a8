//! Applying the patches the controllers send, as the API server would: JSON merge patches (the
//! garbage collector's, on custom resources) and the strategic-merge subset the controllers use
//! (events' counts, owner references merged by uid or deleted with `$patch: delete`, finalizers
//! merged as a set or removed with `$deleteFromPrimitiveList/finalizers`).
//!
//! Strategic merge goes by each field's schema; this subset goes by field name instead, which agrees
//! with the schema for the fields below. A directive it does not know is refused, so a controller
//! that starts sending one fails its tests instead of being answered wrongly.

use serde_json::{Map, Value};

/// List fields merged item by item on a key, as their schema's `patchMergeKey` says.
const MERGE_KEYS: &[(&str, &str)] = &[
    ("ownerReferences", "uid"),
    ("containers", "name"),
    ("initContainers", "name"),
    ("conditions", "type"),
    ("env", "name"),
    ("volumes", "name"),
];

/// Lists of strings merged as sets (`patchStrategy: merge` without a key).
const PRIMITIVE_SETS: &[&str] = &["finalizers"];

const DELETE_FROM: &str = "$deleteFromPrimitiveList/";
const ELEMENT_ORDER: &str = "$setElementOrder/";

/// RFC 7386: objects merge key by key, `null` removes a key, anything else (lists included) replaces.
pub(super) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("an object");
    for (k, v) in patch {
        if v.is_null() {
            target.remove(k);
        } else {
            merge(target.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// A strategic merge of `patch` into `target`; the error names the directive it cannot apply.
pub(super) fn strategic(target: &mut Value, patch: &Value) -> Result<(), String> {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("an object");
    // Removals first, so that a patch removing and adding the same finalizer ends with it.
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix(DELETE_FROM) {
            let gone = v.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(list)) = target.get_mut(field) {
                list.retain(|x| !gone.contains(x));
            }
        }
    }
    for (k, v) in patch {
        if k.starts_with(DELETE_FROM) || k.starts_with(ELEMENT_ORDER) {
            continue;
        }
        if k.starts_with('$') {
            return Err(format!("the fake API server does not support the directive {k}"));
        }
        match v {
            Value::Null => {
                target.remove(k);
            }
            Value::Object(_) => strategic(target.entry(k.clone()).or_insert(Value::Null), v)?,
            Value::Array(items) => {
                let current = target.entry(k.clone()).or_insert(Value::Null);
                if let Some((_, key)) = MERGE_KEYS.iter().find(|(field, _)| field == k) {
                    merge_by_key(current, items, key)?;
                } else if PRIMITIVE_SETS.contains(&k.as_str()) {
                    merge_set(current, items);
                } else {
                    *current = v.clone();
                }
            }
            _ => {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(())
}

fn merge_by_key(current: &mut Value, items: &[Value], key: &str) -> Result<(), String> {
    if !current.is_array() {
        *current = Value::Array(Vec::new());
    }
    let list = current.as_array_mut().expect("an array");
    for item in items {
        let id = &item[key];
        match item.get("$patch").and_then(Value::as_str) {
            Some("delete") => list.retain(|x| x[key] != *id),
            Some(other) => return Err(format!("the fake API server does not support $patch: {other}")),
            None => match list.iter_mut().find(|x| x[key] == *id) {
                Some(existing) => strategic(existing, item)?,
                None => {
                    let mut added = Value::Object(Map::new());
                    strategic(&mut added, item)?;
                    list.push(added);
                }
            },
        }
    }
    Ok(())
}

fn merge_set(current: &mut Value, items: &[Value]) {
    if !current.is_array() {
        *current = Value::Array(Vec::new());
    }
    let list = current.as_array_mut().expect("an array");
    for item in items {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn owner(uid: &str, controller: bool) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": uid, "controller": controller})
    }

    #[test]
    fn adoption_merges_the_controller_reference_by_uid_and_adds_the_finalizer() {
        let mut pod = json!({"metadata": {"ownerReferences": [owner("u1", false)], "finalizers": ["a"]}});
        let patch = json!({"metadata": {"ownerReferences": [owner("u1", true), owner("u2", false)],
            "uid": "p", "finalizers": ["a", "b"]}});
        strategic(&mut pod, &patch).unwrap();
        assert_eq!(
            pod["metadata"]["ownerReferences"],
            json!([owner("u1", true), owner("u2", false)])
        );
        assert_eq!(pod["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(pod["metadata"]["uid"], "p");
    }

    #[test]
    fn release_deletes_the_reference_by_uid_and_the_finalizer_from_the_list() {
        let mut pod = json!({"metadata": {"ownerReferences": [owner("u1", true), owner("u2", false)],
            "finalizers": ["a", "b"]}});
        let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "u1"}],
            "$deleteFromPrimitiveList/finalizers": ["b"]}});
        strategic(&mut pod, &patch).unwrap();
        assert_eq!(pod["metadata"]["ownerReferences"], json!([owner("u2", false)]));
        assert_eq!(pod["metadata"]["finalizers"], json!(["a"]));
    }

    #[test]
    fn other_lists_are_replaced_and_null_removes() {
        let mut obj = json!({"spec": {"args": ["a"], "x": 1}, "metadata": {"labels": {"a": "b", "c": "d"}}});
        let patch = json!({"spec": {"args": ["b"]}, "metadata": {"labels": {"a": null}}});
        strategic(&mut obj, &patch).unwrap();
        assert_eq!(
            obj,
            json!({"spec": {"args": ["b"], "x": 1}, "metadata": {"labels": {"c": "d"}}})
        );
    }

    #[test]
    fn an_unknown_directive_is_refused() {
        let mut obj = json!({});
        assert!(strategic(&mut obj, &json!({"$retainKeys": ["a"]})).is_err());
        assert!(
            strategic(
                &mut obj,
                &json!({"conditions": [{"type": "A", "$patch": "replace"}]})
            )
            .is_err()
        );
    }

    #[test]
    fn merge_patches_replace_lists() {
        let mut event = json!({"count": 1, "message": "a", "related": [1, 2]});
        merge(&mut event, &json!({"count": 2, "related": [3], "message": null}));
        assert_eq!(event, json!({"count": 2, "related": [3]}));
    }
}
