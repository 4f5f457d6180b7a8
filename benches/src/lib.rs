//! Fixtures shared by the benchmarks.
#![forbid(unsafe_code)]

mod recorded;

pub use recorded::{PODS_JSON, web_pod_json, web_pod_protobuf};

use std::sync::{Arc, LazyLock};

use controller::CompactPod;
use serde_json::Value;

/// A pod as kube-controller-manager's ReplicaSet controller created it and KWOK ran it, recorded from
/// the local control plane with `kubectl get -o json --show-managed-fields` (managedFields included).
pub const POD_JSON: &str = include_str!("../fixtures/pod.json");

/// The recorded pod as JSON, with name, uid and resourceVersion made unique for index `i`, spread over
/// `namespaces` namespaces and owned by one of `owners` ReplicaSets.
pub fn pod_json(i: usize, namespaces: usize, owners: usize) -> Value {
    static POD: LazyLock<Value> =
        LazyLock::new(|| serde_json::from_str(POD_JSON).expect("fixture is valid JSON"));
    let mut v = POD.clone();
    let meta = &mut v["metadata"];
    meta["name"] = format!("web-8cdd8b8cb-{i:06}").into();
    meta["namespace"] = format!("ns-{}", i % namespaces.max(1)).into();
    meta["uid"] = format!("00000000-0000-0000-0000-{i:012}").into();
    meta["resourceVersion"] = (1000 + i).to_string().into();
    meta["ownerReferences"][0]["uid"] = format!("owner-{}", i % owners.max(1)).into();
    v
}

/// `n` distinct pods as the controllers' informer caches them: the fixture decoded once, cloned, with
/// the fields of [`pod_json`] changed.
pub fn pods(n: usize, namespaces: usize, owners: usize) -> Vec<Arc<CompactPod>> {
    let base: CompactPod = serde_json::from_str(POD_JSON).expect("fixture is a Pod");
    (0..n)
        .map(|i| {
            let mut p = base.clone();
            let m = &mut p.metadata;
            m.name = Some(format!("web-8cdd8b8cb-{i:06}"));
            m.namespace = Some(format!("ns-{}", i % namespaces.max(1)));
            m.uid = Some(format!("00000000-0000-0000-0000-{i:012}"));
            m.resource_version = Some((1000 + i).to_string());
            if let Some(r) = m.owner_references.as_mut().and_then(|r| r.first_mut()) {
                r.uid = format!("owner-{}", i % owners.max(1));
            }
            Arc::new(p)
        })
        .collect()
}
