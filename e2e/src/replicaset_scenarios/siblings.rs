//! A scale-down ranked by the pods of the objects sharing the owner's controller: ReplicaSets do,
//! ReplicationControllers do not.

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::{api::core::v1::Pod, apimachinery::pkg::apis::meta::v1::OwnerReference};
use kube::api::PostParams;
use serde_json::json;

use super::helpers::{Replicas, create_owner, is_ready, outcome, wait_pods, wait_settled};
use crate::{TestNamespace, differential::ScenarioFuture};

/// A scale-down between two pods that differ in two of the ranking's criteria: `old`, ready for
/// long, shares its node with the pod of another object under the same controller (a ConfigMap
/// here, as an OpenShift DeploymentConfig owns ReplicationControllers); `new`, ready for a few
/// seconds, is alone on its node. A ReplicaSet ranks pods by such neighbours first and deletes
/// `old`. Upstream's replication manager finds no objects sharing its controller (its index of
/// them admits only ReplicaSets), so it goes by ready time and deletes `new`.
pub(super) fn siblings_on_a_node<K: Replicas>(ns: TestNamespace) -> ScenarioFuture {
    async move {
        let owner = create_owner(&ns).await;
        let controlled = |name: &str| {
            let mut obj = K::manifest(name, 1, 0);
            obj.meta_mut().owner_references = Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: owner.metadata.uid.clone().unwrap(),
                controller: Some(true),
                block_owner_deletion: None,
            }]);
            obj
        };
        let orphan = |name: &str, app: &str, node: &str| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {"app": app, "role": name}},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]}
            }))
            .unwrap()
        };
        let create_ready = |pod: Pod| {
            let ns = &ns;
            async move {
                let name = pod.metadata.name.clone().unwrap();
                ns.api::<Pod>()
                    .create(&PostParams::default(), &pod)
                    .await
                    .unwrap();
                wait_pods(ns, &format!("{name} ready"), |p| {
                    p.iter()
                        .any(|p| p.metadata.name.as_deref() == Some(&name) && is_ready(p))
                })
                .await;
            }
        };
        create_ready(orphan("old", "web", "kwok-node-0")).await;
        create_ready(orphan("sibling", "other", "kwok-node-0")).await;
        // Ready times compare on a doubling scale: `old`'s must be over four times `new`'s.
        tokio::time::sleep(Duration::from_secs(20)).await;
        create_ready(orphan("new", "web", "kwok-node-1")).await;
        let apply = |obj: K| {
            let ns = &ns;
            async move { ns.api::<K>().create(&PostParams::default(), &obj).await.unwrap() }
        };
        apply(controlled("other")).await;
        wait_settled::<K>(&ns, "other", 1).await;
        // Adopts both of its pods, one too many: the scale-down is this sync's.
        apply(controlled("web")).await;
        wait_settled::<K>(&ns, "web", 1).await;
        wait_pods(&ns, "the scaled-down pod to go", |p| p.len() == 2).await;
        outcome::<K>(&ns, "web").await
    }
    .boxed()
}
