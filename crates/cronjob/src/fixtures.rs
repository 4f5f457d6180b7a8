//! Test objects shared by the modules' tests.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

/// A Job with `metadata` and `status` fields as given, plus a true `condition` if any.
pub fn job(metadata: Value, mut status: Value, condition: Option<&str>) -> Arc<Job> {
    let conditions: Vec<_> = condition
        .map(|c| json!({"type": c, "status": "True"}))
        .into_iter()
        .collect();
    status["conditions"] = json!(conditions);
    Arc::new(serde_json::from_value(json!({"metadata": metadata, "status": status})).unwrap())
}
