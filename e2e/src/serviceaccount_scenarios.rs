//! The ServiceAccount controller's scenarios: a new namespace gets its `default` ServiceAccount
//! (the runner waits for it before each scenario starts), a deleted one is made again, other
//! accounts are left alone, and a terminating namespace gets none. Upstream's controller runs them
//! in reference mode; kcm-rs's in bare mode, with no kube-controller-manager at all.

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

use crate::{
    TestNamespace,
    differential::{Outcome, Scenario},
    namespace_scenarios::{HOLD, configmap, delete_namespace, release},
    wait_for,
};

/// Liveness bound for an account to be made again.
const WAIT: Duration = Duration::from_secs(60);
/// How long a terminating namespace is watched for an account that must not be made.
const KEPT_FOR: Duration = Duration::from_secs(5);

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("created", |ns| created(ns).boxed()),
        Scenario::new("recreated", |ns| recreated(ns).boxed()),
        Scenario::new("others-kept", |ns| others_kept(ns).boxed()),
        Scenario::new("terminating", |ns| terminating(ns).boxed()),
    ]
}

async fn names(ns: &TestNamespace) -> String {
    let list = ns
        .api::<ServiceAccount>()
        .list(&Default::default())
        .await
        .expect("list accounts");
    let mut names: Vec<String> = list.items.into_iter().filter_map(|a| a.metadata.name).collect();
    names.sort();
    names.join(",")
}

async fn uid(ns: &TestNamespace) -> Option<String> {
    let api = ns.api::<ServiceAccount>();
    api.get_opt("default")
        .await
        .expect("get default")
        .and_then(|a| a.metadata.uid)
}

/// Deletes `default` and waits for one with another UID.
async fn delete_and_wait_for_another(ns: &TestNamespace) -> String {
    let before = uid(ns).await;
    ns.api::<ServiceAccount>()
        .delete("default", &DeleteParams::default())
        .await
        .expect("delete default");
    wait_for("another default ServiceAccount", WAIT, || async {
        match uid(ns).await {
            Some(u) if Some(&u) != before.as_ref() => Ok("yes".to_owned()),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

async fn created(ns: TestNamespace) -> Outcome {
    Outcome::from([("accounts".into(), names(&ns).await)])
}

async fn recreated(ns: TestNamespace) -> Outcome {
    let again = delete_and_wait_for_another(&ns).await;
    Outcome::from([
        ("made again".into(), again),
        ("accounts".into(), names(&ns).await),
    ])
}

async fn others_kept(ns: TestNamespace) -> Outcome {
    let builder: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "builder"}})).unwrap();
    ns.api::<ServiceAccount>()
        .create(&PostParams::default(), &builder)
        .await
        .expect("create builder");
    let again = delete_and_wait_for_another(&ns).await;
    Outcome::from([
        ("made again".into(), again),
        ("accounts".into(), names(&ns).await),
    ])
}

/// A namespace held in Terminating by a ConfigMap's finalizer: its accounts are deleted with the
/// rest and none is made again.
async fn terminating(ns: TestNamespace) -> Outcome {
    configmap(&ns, "held", &[HOLD]).await;
    delete_namespace(&ns).await;
    wait_for("the accounts deleted with the namespace", WAIT, || async {
        match names(&ns).await.as_str() {
            "" => Ok(()),
            other => Err(other.to_owned()),
        }
    })
    .await;
    tokio::time::sleep(KEPT_FOR).await;
    let out = Outcome::from([("accounts while terminating".into(), names(&ns).await)]);
    release(&ns.api::<ConfigMap>(), "held").await;
    out
}
