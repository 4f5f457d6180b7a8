//! Helpers for tests that compare an informer's cache with the API server.

use std::{collections::BTreeMap, time::Duration};

use informer::SharedInformer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use serde_json::json;

use crate::{TestNamespace, wait_for};

/// Long enough for 2,000 pods' worth of events to drain on a 2-core machine; a liveness bound only.
const CONVERGE: Duration = Duration::from_secs(180);

/// A pod bound to one of the fake nodes (no scheduler involved), labelled `app=churn`.
pub fn pod(name: &str, node: usize) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "churn"}},
        "spec": {"nodeName": format!("kwok-node-{}", node % 3), "containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap()
}

/// name -> resourceVersion, from the informer's cache.
fn cached(informer: &SharedInformer<Pod>) -> BTreeMap<String, String> {
    informer
        .store()
        .list()
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap(),
                p.metadata.resource_version.clone().unwrap(),
            )
        })
        .collect()
}

/// name -> resourceVersion, from a consistent LIST.
async fn listed(ns: &TestNamespace) -> BTreeMap<String, String> {
    ns.api::<Pod>()
        .list(&ListParams::default())
        .await
        .expect("list pods")
        .items
        .into_iter()
        .map(|p| (p.metadata.name.unwrap(), p.metadata.resource_version.unwrap()))
        .collect()
}

/// Waits until the cache equals a fresh LIST (names and resourceVersions).
pub async fn assert_converges(ns: &TestNamespace, informer: &SharedInformer<Pod>) {
    wait_for("the informer's cache to equal a fresh LIST", CONVERGE, || async {
        let (want, got) = (listed(ns).await, cached(informer));
        if want == got {
            Ok(())
        } else {
            let missing = want.keys().filter(|k| !got.contains_key(*k)).count();
            let phantom = got.keys().filter(|k| !want.contains_key(*k)).count();
            let stale = want
                .iter()
                .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
                .count();
            Err(format!(
                "{missing} missing, {phantom} phantom, {stale} stale of {} pods",
                want.len()
            ))
        }
    })
    .await;
}
