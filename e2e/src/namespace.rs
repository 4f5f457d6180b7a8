use std::{fmt::Debug, future::Future, panic::AssertUnwindSafe, time::Duration};

use futures::FutureExt as _;
use k8s_openapi::{
    NamespaceResourceScope,
    api::{
        apps::v1::{Deployment, ReplicaSet},
        core::v1::{Namespace, ServiceAccount},
    },
    serde::de::DeserializeOwned,
};
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, PostParams},
};

use crate::{Cluster, wait_for};

/// The admission plugin rejects pods until the namespace's `default` ServiceAccount exists, which
/// kube-controller-manager's serviceaccount controller creates shortly after the namespace.
const SERVICE_ACCOUNT_WAIT: Duration = Duration::from_secs(60);

/// A namespace of a test's own, with the cluster connection.
#[derive(Debug, Clone)]
pub struct TestNamespace {
    pub cluster: Cluster,
    pub name: String,
}

impl TestNamespace {
    /// Creates ReplicaSet `name` of `replicas` pause pods and waits until all are ready: proof that
    /// whichever ReplicaSet controller runs is reconciling.
    pub async fn replicaset_becomes_ready(&self, name: &str, replicas: i32) {
        let rs: ReplicaSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
                }
            }
        }))
        .expect("a ReplicaSet");
        let rss = self.api::<ReplicaSet>();
        rss.create(&PostParams::default(), &rs)
            .await
            .expect("creating the ReplicaSet");
        wait_for(
            &format!("ReplicaSet {name} to have {replicas} ready replicas"),
            Duration::from_secs(90),
            || {
                let rss = rss.clone();
                async move {
                    let rs = rss.get(name).await.map_err(|e| e.to_string())?;
                    match rs.status.and_then(|s| s.ready_replicas) {
                        Some(n) if n == replicas => Ok(()),
                        other => Err(format!("ready {other:?}")),
                    }
                }
            },
        )
        .await;
    }

    /// Waits, at most `timeout`, until Deployment `name` has rolled out `replicas` pods (observed,
    /// all updated, all available), as `kubectl rollout status` does.
    pub async fn deployment_rolled_out(&self, name: &str, replicas: i32, timeout: Duration) {
        let deployments = self.api::<Deployment>();
        wait_for(&format!("Deployment {name} to roll out"), timeout, || {
            let deployments = deployments.clone();
            async move {
                let d = deployments.get(name).await.map_err(|e| e.to_string())?;
                let s = d.status.unwrap_or_default();
                let done = s.observed_generation == d.metadata.generation
                    && s.updated_replicas == Some(replicas)
                    && s.available_replicas == Some(replicas);
                if done { Ok(()) } else { Err(format!("{s:?}")) }
            }
        })
        .await;
    }

    /// An `Api` for a namespaced kind in this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.cluster.client.clone(), &self.name)
    }

    /// Waits, at most `timeout`, until object `name`'s controller has observed its generation and
    /// `done` holds for it, and returns it; the failure shows the status last seen.
    pub async fn wait_observed<K>(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        done: impl Fn(&K) -> bool,
    ) -> K
    where
        K: Observed + kube::Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
        <K as kube::Resource>::DynamicType: Default,
    {
        let kind = K::kind(&Default::default()).into_owned();
        wait_for(&format!("{kind} {name}: {what}"), timeout, || async {
            let object = self.api::<K>().get(name).await.map_err(|e| e.to_string())?;
            if object.observed_generation() == object.meta().generation && done(&object) {
                Ok(object)
            } else {
                Err(object.status_text())
            }
        })
        .await
    }
}

/// A kind whose status reports the generation its controller last acted on.
pub trait Observed {
    fn observed_generation(&self) -> Option<i64>;
    /// The status, for failure messages.
    fn status_text(&self) -> String;
}

impl Observed for ReplicaSet {
    fn observed_generation(&self) -> Option<i64> {
        self.status.as_ref().and_then(|s| s.observed_generation)
    }

    fn status_text(&self) -> String {
        format!("{:?}", self.status)
    }
}

impl Observed for k8s_openapi::api::core::v1::ReplicationController {
    fn observed_generation(&self) -> Option<i64> {
        self.status.as_ref().and_then(|s| s.observed_generation)
    }

    fn status_text(&self) -> String {
        format!("{:?}", self.status)
    }
}

impl Observed for Deployment {
    fn observed_generation(&self) -> Option<i64> {
        self.status.as_ref().and_then(|s| s.observed_generation)
    }

    fn status_text(&self) -> String {
        format!("{:?}", self.status)
    }
}

/// Runs `test` in a fresh namespace (`e2e-<prefix>-xxxxx`) and deletes the namespace afterwards, also
/// when the test panics. Panics carry on after the cleanup, with the components' log tails appended
/// so a failure can be read without the cluster.
pub async fn with_namespace<F, Fut>(cluster: Cluster, prefix: &str, test: F)
where
    F: FnOnce(TestNamespace) -> Fut,
    Fut: Future<Output = ()>,
{
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            generate_name: Some(format!("e2e-{prefix}-")),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating a namespace for {prefix}: {e}"));
    let name = created
        .metadata
        .name
        .expect("the API server names generated namespaces");
    let accounts: Api<ServiceAccount> = Api::namespaced(cluster.client.clone(), &name);
    wait_for(
        &format!("ServiceAccount {name}/default"),
        SERVICE_ACCOUNT_WAIT,
        || async {
            accounts
                .get_opt("default")
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "not created yet".to_owned())
        },
    )
    .await;

    let tn = TestNamespace {
        cluster: cluster.clone(),
        name: name.clone(),
    };
    let outcome = AssertUnwindSafe(test(tn)).catch_unwind().await;
    if let Err(e) = namespaces.delete(&name, &DeleteParams::background()).await {
        eprintln!("warning: deleting test namespace {name}: {e}");
    }
    if let Err(panic) = outcome {
        eprintln!(
            "test in namespace {name} failed; component logs:\n{}",
            cluster.log_tails()
        );
        std::panic::resume_unwind(panic);
    }
}
