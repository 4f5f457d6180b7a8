//! Building manifests: the scenario helpers start from a default and merge a scenario's changes in.

use serde_json::Value;

/// Merges `from` into `into` as a JSON merge patch would, without deletions: objects key by key,
/// anything else replaced.
pub fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}
