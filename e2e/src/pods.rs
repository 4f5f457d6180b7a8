//! Helpers for tests that compare an informer's cache with the API server.

use std::{collections::BTreeMap, time::Duration};

use futures::{StreamExt as _, stream};
use informer::SharedInformer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, PostParams};
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

/// Creates pods `{prefix}-0` .. `{prefix}-{n-1}`, 16 at a time, retrying each for up to a minute (right
/// after a control-plane restart the apiserver may refuse for a moment).
pub async fn create_pods(ns: &TestNamespace, prefix: &str, n: usize) {
    let api = ns.api::<Pod>();
    stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let name = format!("{prefix}-{i}");
            async move {
                // Retried: right after a restart the apiserver may still refuse for a moment.
                wait_for(
                    &format!("creating pod {name}"),
                    Duration::from_secs(60),
                    || async {
                        match api.create(&PostParams::default(), &pod(&name, i)).await {
                            Ok(_) => Ok(()),
                            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                            Err(e) => Err(e.to_string()),
                        }
                    },
                )
                .await;
            }
        })
        .buffer_unordered(16)
        .collect::<()>()
        .await;
}

/// A started, synced pod informer limited to the test's namespace (the factory's defaults, as the
/// controllers use them), with the token that stops it.
pub async fn synced_pod_informer(
    ns: &TestNamespace,
    metrics: Option<std::sync::Arc<dyn informer::MetricsProvider>>,
) -> (SharedInformer<Pod>, tokio_util::sync::CancellationToken) {
    let mut factory = informer::SharedInformerFactory::new(ns.cluster.client.clone())
        .with_namespaces(vec![ns.name.clone()]);
    if let Some(m) = metrics {
        factory = factory.with_metrics(m);
    }
    let pods = factory.namespaced::<Pod>(informer::InformerOptions::default());
    let cancel = tokio_util::sync::CancellationToken::new();
    factory.start(&cancel);
    assert!(
        informer::wait_for_cache_sync(&cancel, &[&pods]).await,
        "the pod informer synced"
    );
    (pods, cancel)
}

/// Every pod of the namespace.
pub async fn list(ns: &TestNamespace) -> Vec<Pod> {
    ns.api::<Pod>().list(&ListParams::default()).await.unwrap().items
}

/// The pod's phase, "" before the kubelet (KWOK) reported one.
pub fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// Whether the pod's Ready condition is True.
pub fn is_ready(p: &Pod) -> bool {
    p.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Waits until `done` holds for the namespace's pods, and returns them.
pub async fn wait_pods(ns: &TestNamespace, what: &str, done: impl Fn(&[Pod]) -> bool) -> Vec<Pod> {
    wait_for(what, crate::DEFAULT_WAIT, || async {
        let p = list(ns).await;
        if done(&p) {
            Ok(p)
        } else {
            Err(format!("{} pods", p.len()))
        }
    })
    .await
}

/// The UID of the object's controller (its ownerReference with `controller: true`).
pub fn controller_uid(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// The seconds from each pod's end to the next pod's creation, over the pods `selector` picks in
/// creation order: how long a Job controller waited before replacing a failed pod. Both ends are
/// whole seconds, and a controller counts from the same truncated end, so a gap never reads below
/// the wait it kept.
pub async fn replacement_gaps(ns: &TestNamespace, selector: &str) -> Vec<i64> {
    let mut pods = ns
        .api::<Pod>()
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items;
    pods.sort_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0));
    pods.windows(2)
        .map(|w| created(&w[1]) - finished(&w[0]))
        .collect()
}

fn created(p: &Pod) -> i64 {
    p.metadata
        .creation_timestamp
        .as_ref()
        .expect("created")
        .0
        .as_second()
}

/// When the pod's container ended (KWOK's stages for a failing command set it).
fn finished(p: &Pod) -> i64 {
    let status = p.status.as_ref().expect("a status");
    let terminated = status
        .container_statuses
        .iter()
        .flatten()
        .find_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.clone());
    terminated.expect("the container's end").0.as_second()
}
