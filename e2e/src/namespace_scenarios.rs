//! The namespace controller's scenarios: each makes a namespace, fills it, deletes it, and records
//! what the namespace said while it could not go (its phase, its five conditions, what was left in
//! it) and that it went once nothing held it. Upstream's controller runs them in reference mode;
//! kcm-rs's in bare mode, with no kube-controller-manager at all, as under envtest.
//!
//! Without kube-controller-manager a new namespace gets no `default` ServiceAccount, so the scenarios
//! that create pods make it themselves, and [`run_scenarios`] does not wait for it as
//! [`crate::with_namespace`] does. What only upstream's other controllers add to a namespace (the
//! `kube-root-ca.crt` ConfigMap) is left out of the outcomes.

use std::{panic::AssertUnwindSafe, time::Duration};

use futures::FutureExt as _;
use k8s_openapi::{
    api::core::v1::{ConfigMap, Namespace, Node, Pod, Secret, ServiceAccount},
    kube_aggregator::pkg::apis::apiregistration::v1::APIService,
};
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    Cluster, TestNamespace,
    differential::{Outcome, Scenario, panic_message, together_then_solo},
    json::merge,
    wait_for,
};

/// Liveness bound: a held namespace is looked at again within 16 s (half a pod's 30 s grace, and
/// a second), a failing one within a minute (the queue's backoff cap).
const WAIT: Duration = Duration::from_secs(120);
/// The test's own finalizer, which holds an object until the scenario lets it go.
pub(crate) const HOLD: &str = "kcm-rs.test/hold";
/// The aggregated API whose backend never exists.
const BROKEN_API: &str = "v1.nsc.kcm-rs.test";

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("empty", |ns| empty(ns).boxed()),
        Scenario::new("content", |ns| content(ns).boxed()),
        Scenario::new("finalizer-held", |ns| finalizer_held(ns).boxed()),
        Scenario::new("pod-held", |ns| pod_held(ns).boxed()),
        Scenario::new("other-finalizer", |ns| other_finalizer(ns).boxed()),
        Scenario::solo("aggregated-api-down", |ns| aggregated_api_down(ns).boxed()),
    ]
}

/// Runs `scenarios` under `actor`, each in a namespace of its own that it deletes itself: the
/// others together, then the solo ones one by one. Each result is the outcome or the panic's text.
pub async fn run_scenarios(
    cluster: &Cluster,
    scenarios: &[Scenario],
    actor: &str,
) -> Vec<Result<Outcome, String>> {
    together_then_solo(scenarios, |s| run_one(cluster, s, actor)).await
}

async fn run_one(cluster: &Cluster, scenario: Scenario, actor: &str) -> Result<Outcome, String> {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            generate_name: Some(format!("e2e-nsc-{}-{actor}-", scenario.name)),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let name = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .map_err(|e| format!("creating the namespace: {e}"))?
        .metadata
        .name
        .expect("a generated name");
    let tn = TestNamespace {
        cluster: cluster.clone(),
        name,
    };
    AssertUnwindSafe((scenario.run)(tn))
        .catch_unwind()
        .await
        .map_err(|p| panic_message(&*p))
}

pub(crate) async fn delete_namespace(ns: &TestNamespace) {
    Api::<Namespace>::all(ns.cluster.client.clone())
        .delete(&ns.name, &DeleteParams::default())
        .await
        .expect("delete the namespace");
}

/// Waits for the namespace to be gone, and says so.
async fn gone(ns: &TestNamespace) -> String {
    let api: Api<Namespace> = Api::all(ns.cluster.client.clone());
    wait_for(&format!("namespace {} gone", ns.name), WAIT, || async {
        match api.get_opt(&ns.name).await.map_err(|e| e.to_string())? {
            None => Ok("yes".to_owned()),
            Some(n) => Err(format!("still there: {:?}", n.status)),
        }
    })
    .await
}

/// Waits until the namespace carries the condition `type_` with `status`, and returns its phase and
/// its five conditions, one fact each.
async fn held(ns: &TestNamespace, type_: &str, status: &str) -> Outcome {
    let api: Api<Namespace> = Api::all(ns.cluster.client.clone());
    let seen = wait_for(&format!("{type_}={status} on {}", ns.name), WAIT, || async {
        let n = api.get(&ns.name).await.map_err(|e| e.to_string())?;
        let s = n.status.clone().unwrap_or_default();
        let conditions = s.conditions.clone().unwrap_or_default();
        let found = conditions.iter().any(|c| c.type_ == type_ && c.status == status);
        if found && conditions.len() == 5 {
            Ok(s)
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    let mut out = Outcome::new();
    out.insert("phase".into(), seen.phase.unwrap_or_default());
    for c in seen.conditions.unwrap_or_default() {
        let text = format!(
            "{} {}: {}",
            c.status,
            c.reason.unwrap_or_default(),
            c.message.unwrap_or_default().replace(&ns.name, "NS")
        );
        out.insert(format!("condition {}", c.type_), text);
    }
    out
}

/// The names of the scenario's own ConfigMaps left in the namespace.
async fn configmaps_left(ns: &TestNamespace) -> String {
    let list = ns
        .api::<ConfigMap>()
        .list(&Default::default())
        .await
        .expect("list configmaps");
    let mut names: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    names.sort();
    names.join(",")
}

pub(crate) async fn configmap(ns: &TestNamespace, name: &str, finalizers: &[&str]) {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "finalizers": finalizers},
    }))
    .unwrap();
    ns.api::<ConfigMap>()
        .create(&PostParams::default(), &cm)
        .await
        .expect("create configmap");
}

pub(crate) async fn release<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove the test's finalizer");
}

/// Pod `p` of one pause container, with `meta` and `spec` merged in.
async fn pod(ns: &TestNamespace, meta: Value, spec: Value) {
    let mut pod = json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    });
    merge(&mut pod["metadata"], meta);
    merge(&mut pod["spec"], spec);
    let pod: Pod = serde_json::from_value(pod).unwrap();
    ns.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
}

/// Without kube-controller-manager nobody makes it; with it, it may be there already.
async fn default_service_account(ns: &TestNamespace) {
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    match ns
        .api::<ServiceAccount>()
        .create(&PostParams::default(), &sa)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create the default ServiceAccount: {e}"),
    }
}

async fn empty(ns: TestNamespace) -> Outcome {
    delete_namespace(&ns).await;
    Outcome::from([("gone".into(), gone(&ns).await)])
}

/// Several kinds, and a pod on a KWOK node with a grace period, all deleted.
async fn content(ns: TestNamespace) -> Outcome {
    default_service_account(&ns).await;
    for name in ["a", "b", "c"] {
        configmap(&ns, name, &[]).await;
    }
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}})).unwrap();
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .expect("create secret");
    let nodes = Api::<Node>::all(ns.cluster.client.clone())
        .list(&Default::default())
        .await
        .expect("list nodes");
    let node = nodes
        .items
        .first()
        .and_then(|n| n.metadata.name.clone())
        .expect("a KWOK node");
    pod(
        &ns,
        json!({}),
        json!({"nodeName": node, "terminationGracePeriodSeconds": 5}),
    )
    .await;
    delete_namespace(&ns).await;
    Outcome::from([("gone".into(), gone(&ns).await)])
}

/// A ConfigMap held by a finalizer: the rest goes, the namespace says what remains and why, and
/// goes once the finalizer is removed.
async fn finalizer_held(ns: TestNamespace) -> Outcome {
    configmap(&ns, "held", &[HOLD]).await;
    configmap(&ns, "free", &[]).await;
    delete_namespace(&ns).await;
    let mut out = held(&ns, "NamespaceFinalizersRemaining", "True").await;
    out.insert("configmaps while held".into(), configmaps_left(&ns).await);
    release(&ns.api::<ConfigMap>(), "held").await;
    out.insert("gone".into(), gone(&ns).await);
    out
}

/// A pod held by a finalizer: nothing else is deleted while a pod remains, and the namespace's
/// conditions then say nothing remains (upstream writes them without the totals at that point).
async fn pod_held(ns: TestNamespace) -> Outcome {
    default_service_account(&ns).await;
    configmap(&ns, "kept", &[]).await;
    pod(
        &ns,
        json!({"finalizers": [HOLD]}),
        json!({"schedulingGates": [{"name": HOLD}]}),
    )
    .await;
    delete_namespace(&ns).await;
    let mut out = held(&ns, "NamespaceContentRemaining", "False").await;
    let p = ns.api::<Pod>().get("p").await.expect("the held pod");
    out.insert(
        "pod being deleted".into(),
        p.metadata.deletion_timestamp.is_some().to_string(),
    );
    out.insert(
        "configmaps while the pod is held".into(),
        configmaps_left(&ns).await,
    );
    release(&ns.api::<Pod>(), "p").await;
    out.insert("gone".into(), gone(&ns).await);
    out
}

/// A namespace finalizer of someone else's: the controller removes only its own, and the namespace
/// waits, empty, for the other.
async fn other_finalizer(ns: TestNamespace) -> Outcome {
    let api: Api<Namespace> = Api::all(ns.cluster.client.clone());
    let mut n = api.get(&ns.name).await.expect("the namespace");
    n.spec.get_or_insert_with(Default::default).finalizers = Some(vec!["kubernetes".into(), HOLD.into()]);
    api.replace_subresource("finalize", &ns.name, &PostParams::default(), &n)
        .await
        .expect("add a finalizer of the test's");
    configmap(&ns, "a", &[]).await;
    delete_namespace(&ns).await;
    let left = wait_for("the controller's finalizer removed", WAIT, || async {
        let n = api.get(&ns.name).await.map_err(|e| e.to_string())?;
        let finalizers = n.spec.clone().and_then(|s| s.finalizers).unwrap_or_default();
        if finalizers.iter().any(|f| f == "kubernetes") {
            Err(format!("{finalizers:?}"))
        } else {
            Ok(n)
        }
    })
    .await;
    let mut out = Outcome::new();
    let finalizers = left.spec.clone().and_then(|s| s.finalizers).unwrap_or_default();
    out.insert("finalizers left".into(), finalizers.join(","));
    out.insert(
        "phase".into(),
        left.status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
    );
    out.insert("configmaps left".into(), configmaps_left(&ns).await);
    wait_for("the test's finalizer removed", WAIT, || async {
        let mut n = api.get(&ns.name).await.map_err(|e| e.to_string())?;
        n.spec.get_or_insert_with(Default::default).finalizers = Some(Vec::new());
        api.replace_subresource("finalize", &ns.name, &PostParams::default(), &n)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    out.insert("gone".into(), gone(&ns).await);
    out
}

/// An aggregated API whose backend is missing: discovery fails for its group, the namespace says
/// so and is not finalized, though its content is deleted; it goes once the API is removed.
async fn aggregated_api_down(ns: TestNamespace) -> Outcome {
    let client = ns.cluster.client.clone();
    let services: Api<APIService> = Api::all(client.clone());
    let service: APIService = serde_json::from_value(json!({
        "metadata": {"name": BROKEN_API},
        "spec": {"group": "nsc.kcm-rs.test", "version": "v1", "groupPriorityMinimum": 100,
                 "versionPriority": 10, "insecureSkipTLSVerify": true,
                 "service": {"namespace": "default", "name": "nsc-missing", "port": 443}},
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("create the APIService");
    wait_for("the broken API stale in discovery", WAIT, || async {
        let request = http::Request::get("/apis")
            .header(http::header::ACCEPT, controller::discovery::ACCEPT_AGGREGATED)
            .body(Vec::new())
            .unwrap();
        let text = client.request_text(request).await.map_err(|e| e.to_string())?;
        if text.contains(r#""name":"nsc.kcm-rs.test""#) && text.contains("Stale") {
            Ok(())
        } else {
            Err("not stale yet".to_owned())
        }
    })
    .await;
    configmap(&ns, "a", &[]).await;
    delete_namespace(&ns).await;
    let mut out = held(&ns, "NamespaceDeletionDiscoveryFailure", "True").await;
    out.insert(
        "configmaps while discovery fails".into(),
        configmaps_left(&ns).await,
    );
    services
        .delete(BROKEN_API, &DeleteParams::default())
        .await
        .expect("delete the APIService");
    out.insert("gone".into(), gone(&ns).await);
    out
}
