//! The garbage collector's scenarios, after upstream's e2e and integration tests of it: owners and
//! dependents are ConfigMaps, Secrets, Widgets (a custom resource, `custom`) and Roles (for names
//! that need escaping), kinds no other controller acts on, with ownerReferences written by hand; owners are deleted with each
//! propagation policy, or are missing, of another UID, in another namespace, or namespaced under a
//! cluster-scoped dependent. Each scenario records what was left and how its references, finalizers
//! and deletion marks read. Upstream's collector runs them in reference mode; kcm-rs's in bare mode,
//! with no kube-controller-manager at all, beside kcm-rs's namespace controller, which deletes the
//! scenarios' namespaces.
//!
//! A scenario waits (up to a minute) for what the collector must do, and watches for [`KEPT_FOR`]
//! for what it must not, once the collector has shown it acts in the namespace.
//!
//! `workloads` holds a second suite, where the owners are Deployments and Jobs and the workload
//! controllers run beside the collector.

mod custom;
mod guard;
mod helpers;
pub mod random;
mod workloads;

use futures::FutureExt as _;
use k8s_openapi::{
    api::{
        core::v1::{ConfigMap, Event},
        rbac::v1::ClusterRole,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use serde_json::json;

pub use custom::install_widgets;
pub use helpers::run_scenarios;
use helpers::*;
pub use workloads::workload_scenarios;

use crate::{
    TestNamespace,
    differential::{Outcome, Scenario},
    namespace_scenarios::{HOLD, release},
};

pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("background", |ns| background(ns).boxed()),
        Scenario::new("orphan", |ns| orphan(ns).boxed()),
        Scenario::new("foreground", |ns| foreground(ns).boxed()),
        Scenario::new("foreground-held", |ns| foreground_held(ns).boxed()),
        Scenario::new("dangling-at-create", |ns| dangling_at_create(ns).boxed()),
        Scenario::new("one-owner-left", |ns| one_owner_left(ns).boxed()),
        Scenario::new("wrong-uid", |ns| wrong_uid(ns).boxed()),
        Scenario::new("cluster-scoped-dependent", |ns| {
            cluster_scoped_dependent(ns).boxed()
        }),
        Scenario::new("cross-namespace-owner", |ns| cross_namespace_owner(ns).boxed()),
        Scenario::new("orphan-then-background-of-dependents", |ns| {
            orphan_then_background(ns).boxed()
        }),
        Scenario::new("custom-owner-background", |ns| {
            custom::custom_owner_background(ns).boxed()
        }),
        Scenario::new("custom-dependents-orphan", |ns| {
            custom::custom_dependents_orphan(ns).boxed()
        }),
        Scenario::new("custom-foreground", |ns| custom::custom_foreground(ns).boxed()),
        Scenario::new("names-to-escape", |ns| names_to_escape(ns).boxed()),
    ]
}

/// ConfigMap `owner` and its dependents: ConfigMaps `a` and `b` and Secret `c`, which the collector
/// finds through two informers.
async fn owner_and_family(ns: &TestNamespace, block: bool) -> Made {
    let owner = make(ns, Kind::ConfigMap, "owner", json!({})).await;
    let refs = owned_by(&[&owner], block);
    make(ns, Kind::ConfigMap, "a", refs.clone()).await;
    make(ns, Kind::ConfigMap, "b", refs.clone()).await;
    make(ns, Kind::Secret, "c", refs).await;
    owner
}

fn gone(name: &'static str) -> impl Fn(&Objects) -> bool {
    move |o: &Objects| !o.contains_key(name)
}

async fn background(ns: TestNamespace) -> Outcome {
    let owner = owner_and_family(&ns, false).await;
    delete(&ns, &owner, &DeleteParams::background()).await;
    let left = until(&ns, "the dependents deleted", is_empty).await;
    let mut out = Outcome::new();
    record(&mut out, "left", &left);
    out
}

/// The owner goes once its dependents no longer name it; they stay, owned by nothing.
async fn orphan(ns: TestNamespace) -> Outcome {
    let owner = owner_and_family(&ns, false).await;
    let deleting = delete(&ns, &owner, &DeleteParams::orphan()).await;
    let mut out = Outcome::from([(
        "owner's finalizers once deleted".into(),
        finalizers(deleting.as_ref()),
    )]);
    until(&ns, "the owner gone", gone("ConfigMap/owner")).await;
    tokio::time::sleep(KEPT_FOR).await;
    record(&mut out, "left", &snapshot(&ns).await);
    out
}

async fn foreground(ns: TestNamespace) -> Outcome {
    let owner = owner_and_family(&ns, true).await;
    let deleting = delete(&ns, &owner, &DeleteParams::foreground()).await;
    let mut out = Outcome::from([(
        "owner's finalizers once deleted".into(),
        finalizers(deleting.as_ref()),
    )]);
    let left = until(&ns, "the owner and its dependents deleted", is_empty).await;
    record(&mut out, "left", &left);
    out
}

/// A blocking dependent held by a finalizer of the test's keeps its owner, being deleted with
/// `foregroundDeletion`, while the free dependents go; both go once it is let go.
async fn foreground_held(ns: TestNamespace) -> Outcome {
    let owner = make(&ns, Kind::ConfigMap, "owner", json!({})).await;
    let refs = owned_by(&[&owner], true);
    let mut held = refs.clone();
    held["finalizers"] = json!([HOLD]);
    make(&ns, Kind::ConfigMap, "held", held).await;
    make(&ns, Kind::ConfigMap, "a", refs.clone()).await;
    make(&ns, Kind::Secret, "b", refs).await;
    delete(&ns, &owner, &DeleteParams::foreground()).await;
    until(
        &ns,
        "the free dependents deleted and the held one being deleted",
        |o| {
            !o.contains_key("ConfigMap/a")
                && !o.contains_key("Secret/b")
                && o.get("ConfigMap/held")
                    .is_some_and(|m| m.deletion_timestamp.is_some())
        },
    )
    .await;
    tokio::time::sleep(KEPT_FOR).await;
    let mut out = Outcome::new();
    record(&mut out, "while held", &snapshot(&ns).await);
    release(&ns.api::<ConfigMap>(), "held").await;
    let left = until(&ns, "the owner deleted after the held dependent", is_empty).await;
    record(&mut out, "after the release", &left);
    out
}

/// Dependents created naming owners that never existed, of both kinds.
async fn dangling_at_create(ns: TestNamespace) -> Outcome {
    let missing_cm = Made::absent(Kind::ConfigMap, "missing");
    let missing_secret = Made::absent(Kind::Secret, "missing");
    make(&ns, Kind::ConfigMap, "a", owned_by(&[&missing_cm], false)).await;
    make(&ns, Kind::Secret, "b", owned_by(&[&missing_secret], false)).await;
    let left = until(&ns, "the dependents of missing owners deleted", is_empty).await;
    let mut out = Outcome::new();
    record(&mut out, "left", &left);
    out
}

/// A dependent of a ConfigMap and a Secret outlives the Secret: only the reference to it goes.
async fn one_owner_left(ns: TestNamespace) -> Outcome {
    let live = make(&ns, Kind::ConfigMap, "live", json!({})).await;
    let dying = make(&ns, Kind::Secret, "dying", json!({})).await;
    make(&ns, Kind::ConfigMap, "d", owned_by(&[&live, &dying], false)).await;
    delete(&ns, &dying, &DeleteParams::background()).await;
    until(&ns, "the reference to the deleted owner dropped", |o| {
        one_owner_at_most(o, "ConfigMap/d")
    })
    .await;
    left_after_kept_for(&ns).await
}

/// Whether `name` is gone or names one owner at most.
fn one_owner_at_most(o: &Objects, name: &str) -> bool {
    o.get(name)
        .is_none_or(|m| m.owner_references.as_ref().is_none_or(|r| r.len() < 2))
}

/// What is left once the collector has had [`KEPT_FOR`] to do what it must not.
async fn left_after_kept_for(ns: &TestNamespace) -> Outcome {
    tokio::time::sleep(KEPT_FOR).await;
    let mut out = Outcome::new();
    record(&mut out, "left", &snapshot(ns).await);
    out
}

/// The named owner exists, but it is another object than the one referenced (its UID differs).
async fn wrong_uid(ns: TestNamespace) -> Outcome {
    let owner = make(&ns, Kind::ConfigMap, "owner", json!({})).await;
    make(&ns, Kind::ConfigMap, "d", owned_by(&[&owner.other_uid()], false)).await;
    let left = until(&ns, "the dependent deleted", gone("ConfigMap/d")).await;
    let mut out = Outcome::new();
    record(&mut out, "left", &left);
    out
}

/// A ClusterRole naming a ConfigMap as its owner: a reference that cannot resolve (namespaced
/// owners are looked for in the dependent's namespace, and it has none), which upstream neither
/// follows nor retries; it warns on the ClusterRole.
async fn cluster_scoped_dependent(ns: TestNamespace) -> Outcome {
    collector_working(&ns).await;
    let owner = make(&ns, Kind::ConfigMap, "owner", json!({})).await;
    // Unique across actors and runs: the namespace's name is generated.
    let name = format!("{}-dependent", ns.name);
    let roles: Api<ClusterRole> = Api::all(ns.cluster.client.clone());
    let role: ClusterRole =
        serde_json::from_value(json!({"metadata": metadata(&name, owned_by(&[&owner], false))}))
            .expect("a ClusterRole");
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("create the ClusterRole");
    let cleanup = async {
        if let Err(e) = roles.delete(&name, &DeleteParams::default()).await {
            eprintln!("warning: deleting ClusterRole {name}: {e}");
        }
    };
    then_always(cluster_scoped_kept(&ns, &roles, &name), cleanup).await
}

async fn cluster_scoped_kept(ns: &TestNamespace, roles: &Api<ClusterRole>, name: &str) -> Outcome {
    tokio::time::sleep(KEPT_FOR).await;
    let role = roles.get_opt(name).await.expect("get the ClusterRole");
    let mut out = Outcome::from([(
        "ClusterRole".into(),
        role.map_or_else(|| "gone".to_owned(), |r| state(&r.metadata)),
    )]);
    // Written in namespace `default` by upstream's recorder, which files there the events of
    // cluster-scoped objects; looked for everywhere.
    let events: Api<Event> = Api::all(ns.cluster.client.clone());
    out.insert(
        format!("{INVALID_NAMESPACE} on the ClusterRole"),
        invalid_namespace_event(&events, name).await,
    );
    record(&mut out, "left", &snapshot(ns).await);
    out
}

/// A dependent naming, by UID, an owner that lives in another namespace: the owner is looked for in
/// the dependent's namespace, is not there, and the dependent goes; upstream, which has seen the
/// owner elsewhere, warns on the dependent. The owner's namespace is made after the collector has
/// shown it watches ConfigMaps, so the owner is seen before its dependent, as the warning needs.
async fn cross_namespace_owner(ns: TestNamespace) -> Outcome {
    collector_working(&ns).await;
    let meta = ObjectMeta {
        name: Some(format!("{}-owner", ns.name)),
        ..ObjectMeta::default()
    };
    let other = new_namespace(&ns.cluster, meta)
        .await
        .expect("the owner's namespace");
    then_always(cross_namespace_in(&ns, &other), drop_namespace(&other)).await
}

async fn cross_namespace_in(ns: &TestNamespace, other: &TestNamespace) -> Outcome {
    let owner = make(other, Kind::ConfigMap, "owner", json!({})).await;
    make(ns, Kind::ConfigMap, "dependent", owned_by(&[&owner], false)).await;
    let left = until(ns, "the dependent deleted", is_empty).await;
    let mut out = Outcome::new();
    record(&mut out, "left", &left);
    record(&mut out, "left in the owner's namespace", &snapshot(other).await);
    // In the dependent's namespace only: the other actor's run left one on its own `dependent`.
    out.insert(
        format!("{INVALID_NAMESPACE} on the dependent"),
        invalid_namespace_event(&ns.api::<Event>(), "dependent").await,
    );
    out
}

/// owner ← child ← grandchild. Orphaning the owner cuts only the child's reference to it; the
/// grandchild still goes with the child.
async fn orphan_then_background(ns: TestNamespace) -> Outcome {
    let owner = make(&ns, Kind::ConfigMap, "owner", json!({})).await;
    let child = make(&ns, Kind::ConfigMap, "child", owned_by(&[&owner], false)).await;
    make(&ns, Kind::Secret, "grandchild", owned_by(&[&child], false)).await;
    delete(&ns, &owner, &DeleteParams::orphan()).await;
    until(&ns, "the owner gone", gone("ConfigMap/owner")).await;
    tokio::time::sleep(KEPT_FOR).await;
    let mut out = Outcome::new();
    record(&mut out, "after the orphaning", &snapshot(&ns).await);
    delete(&ns, &child, &DeleteParams::background()).await;
    let left = until(&ns, "the grandchild deleted with the child", is_empty).await;
    record(&mut out, "after the child's deletion", &left);
    out
}

/// Role names the API server accepts (an RBAC name need only be a path segment) that a request's
/// path must carry escaped: `#` and `?` would end it early, a space and `é` are no URL characters.
const NAMES_TO_ESCAPE: [&str; 4] = ["ops#1", "ops?1", "ops 1", "ops-é"];

/// Dependents so named go with their owner; a dependent of an owner so named keeps it. The owner is
/// read fresh once the dependent's other owner, missing, makes the collector look at it: a request
/// that reached another name would find nothing and delete the dependent.
async fn names_to_escape(ns: TestNamespace) -> Outcome {
    let owner = make(&ns, Kind::ConfigMap, "owner", json!({})).await;
    for name in NAMES_TO_ESCAPE {
        make(&ns, Kind::Role, name, owned_by(&[&owner], false)).await;
    }
    let role_owner = make(&ns, Kind::Role, "ops#owner", json!({})).await;
    let missing = Made::absent(Kind::ConfigMap, "missing");
    make(
        &ns,
        Kind::ConfigMap,
        "kept",
        owned_by(&[&role_owner, &missing], false),
    )
    .await;
    delete(&ns, &owner, &DeleteParams::background()).await;
    until(
        &ns,
        "the owner's Roles deleted and the missing owner's reference dropped",
        |o| {
            NAMES_TO_ESCAPE
                .iter()
                .all(|n| !o.contains_key(&format!("Role/{n}")))
                && one_owner_at_most(o, "ConfigMap/kept")
        },
    )
    .await;
    left_after_kept_for(&ns).await
}
