//! The garbage collector among the workload controllers: Deployments and Jobs deleted with each
//! propagation policy while their controllers run, so that the collector meets the references those
//! controllers write (controller, blockOwnerDeletion), a two-level family (Deployment, ReplicaSet,
//! pods), and the finalizer with which the Job controller tracks its pods. Upstream runs them in
//! reference mode; kcm-rs in bare mode, with its own workload controllers, namespace and
//! ServiceAccount controllers beside its collector and nothing of kube-controller-manager's left.
//!
//! Pods are kept off every node. Bare mode has no scheduler, so its pods stay unbound; under upstream
//! they would be bound and run under KWOK, and a bound pod's deletion waits for its kubelet, which
//! would set the halves apart in timing for no reason of the collector's.
//!
//! Names the controllers generate (ReplicaSets', pods') never reach the outcome: it counts
//! ReplicaSets and pods and tells owners by kind and by the names the scenarios chose.

use std::{collections::BTreeSet, time::Duration};

use futures::FutureExt as _;
use k8s_openapi::{
    api::{
        apps::v1::{Deployment, ReplicaSet},
        batch::v1::Job,
        core::v1::Pod,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

use super::helpers::{KEPT_FOR, delete_through, finalizers, state};
use crate::{
    TestNamespace,
    deployment_scenarios::deployment_manifest,
    differential::{Outcome, Scenario},
    job_scenarios::{FOREVER, job_manifest},
};

/// Liveness bound for each step: the controllers act within seconds, but kcm-rs's and upstream's
/// have just started (each half begins with a restart).
const WAIT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(250);
const PAUSE: &str = "registry.k8s.io/pause:3.10";
const REPLICAS: usize = 2;

pub fn workload_scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("deployment-background", |ns| deployment_background(ns).boxed()),
        Scenario::new("deployment-foreground", |ns| deployment_foreground(ns).boxed()),
        Scenario::new("deployment-orphan", |ns| deployment_orphan(ns).boxed()),
        Scenario::new("job-background", |ns| job_background(ns).boxed()),
    ]
}

/// The owner of a scenario: one per namespace, under a fixed name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Deployment,
    Job,
}

impl Owner {
    fn kind(self) -> &'static str {
        match self {
            Owner::Deployment => "Deployment",
            Owner::Job => "Job",
        }
    }

    /// Also the value of the `app` label its pod template carries (the manifests' convention).
    fn name(self) -> &'static str {
        match self {
            Owner::Deployment => "web",
            Owner::Job => "work",
        }
    }

    /// The kind of its pods' controller.
    fn pods_owner(self) -> &'static str {
        match self {
            Owner::Deployment => "ReplicaSet",
            Owner::Job => "Job",
        }
    }
}

/// A pod template spec no node matches (see the module's doc).
fn unbound() -> Value {
    json!({"template": {"spec": {"nodeSelector": {"kcm-rs.test/gc-nowhere": "true"}}}})
}

/// An owner's family as read at one time, owner first, then ReplicaSets, then pods: one that
/// vanishes after its dependents is never read as gone while they are still listed.
struct Family {
    owner: Option<ObjectMeta>,
    replica_sets: Vec<ObjectMeta>,
    pods: Vec<ObjectMeta>,
}

impl Family {
    fn is_gone(&self) -> bool {
        self.owner.is_none() && self.replica_sets.is_empty() && self.pods.is_empty()
    }

    /// The pods whose controller is one of the family's: a ReplicaSet listed with them, or the Job.
    fn owned_pods(&self, owner: Owner) -> usize {
        let uids: BTreeSet<&str> = match owner {
            Owner::Deployment => self
                .replica_sets
                .iter()
                .filter_map(|r| r.uid.as_deref())
                .collect(),
            Owner::Job => self.owner.iter().filter_map(|j| j.uid.as_deref()).collect(),
        };
        self.pods
            .iter()
            .filter(|p| crate::pods::controller_uid(p).is_some_and(|u| uids.contains(u)))
            .count()
    }

    fn describe(&self, owner: Owner) -> String {
        format!(
            "{}: {}; ReplicaSets: {}; pods: {} ({} owned by the {})",
            owner.kind(),
            self.owner.as_ref().map_or_else(|| "gone".to_owned(), state),
            self.replica_sets.len(),
            self.pods.len(),
            self.owned_pods(owner),
            owner.pods_owner()
        )
    }
}

async fn family(ns: &TestNamespace, owner: Owner) -> Result<Family, String> {
    let name = owner.name();
    let owner_meta = match owner {
        Owner::Deployment => ns
            .api::<Deployment>()
            .get_opt(name)
            .await
            .map(|d| d.map(|d| d.metadata)),
        Owner::Job => ns.api::<Job>().get_opt(name).await.map(|j| j.map(|j| j.metadata)),
    }
    .map_err(|e| e.to_string())?;
    let lp = ListParams::default().labels(&format!("app={name}"));
    let replica_sets = match owner {
        Owner::Deployment => {
            let list = ns
                .api::<ReplicaSet>()
                .list(&lp)
                .await
                .map_err(|e| e.to_string())?;
            list.items.into_iter().map(|r| r.metadata).collect()
        }
        Owner::Job => Vec::new(),
    };
    let pods = ns.api::<Pod>().list(&lp).await.map_err(|e| e.to_string())?;
    Ok(Family {
        owner: owner_meta,
        replica_sets,
        pods: pods.items.into_iter().map(|p| p.metadata).collect(),
    })
}

/// Reads the family until `done` holds for it, and returns it. `done` sees every read, so that it
/// can note what it passed on the way.
async fn until(
    ns: &TestNamespace,
    owner: Owner,
    what: &str,
    mut done: impl FnMut(&Family) -> bool,
) -> Family {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen = match family(ns, owner).await {
            Ok(f) if done(&f) => return f,
            Ok(f) => f.describe(owner),
            Err(e) => e,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!(
                "timed out after {WAIT:?} waiting for {what} in {}; last seen: {seen}",
                ns.name
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Records the family under `stage`: the owner's state, the ReplicaSets (their number, and the
/// one's state), the pods and how many of them the family's controller owns.
fn record(out: &mut Outcome, stage: &str, owner: Owner, family: &Family) {
    out.insert(
        format!("{stage}: {}", owner.kind()),
        family.owner.as_ref().map_or_else(|| "gone".to_owned(), state),
    );
    if owner == Owner::Deployment {
        out.insert(
            format!("{stage}: ReplicaSets"),
            family.replica_sets.len().to_string(),
        );
        if let [rs] = family.replica_sets.as_slice() {
            out.insert(format!("{stage}: the ReplicaSet"), state(rs));
        }
    }
    out.insert(format!("{stage}: pods"), family.pods.len().to_string());
    out.insert(
        format!("{stage}: pods owned by the {}", owner.pods_owner()),
        family.owned_pods(owner).to_string(),
    );
}

/// Deletes the owner with `dp`; its metadata if the API server kept it for a finalizer.
async fn delete(ns: &TestNamespace, owner: Owner, dp: &DeleteParams) -> Option<ObjectMeta> {
    match owner {
        Owner::Deployment => delete_through(ns.api::<Deployment>(), owner.name(), dp).await,
        Owner::Job => delete_through(ns.api::<Job>(), owner.name(), dp).await,
    }
}

/// Makes Deployment `web` and waits for its ReplicaSet and that one's pods.
async fn deployment_up(ns: &TestNamespace) -> Family {
    let owner = Owner::Deployment;
    let manifest = deployment_manifest(owner.name(), REPLICAS as i32, PAUSE, unbound());
    ns.api::<Deployment>()
        .create(&PostParams::default(), &manifest)
        .await
        .expect("create the Deployment");
    until(ns, owner, "the Deployment's ReplicaSet and its pods", |f| {
        f.replica_sets.len() == 1 && f.pods.len() == REPLICAS && f.owned_pods(owner) == REPLICAS
    })
    .await
}

async fn deployment_background(ns: TestNamespace) -> Outcome {
    let owner = Owner::Deployment;
    let mut out = Outcome::new();
    record(&mut out, "before", owner, &deployment_up(&ns).await);
    delete(&ns, owner, &DeleteParams::background()).await;
    let after = until(&ns, owner, "the ReplicaSet and pods deleted", Family::is_gone).await;
    record(&mut out, "after", owner, &after);
    out
}

/// Each level waits for the one below: the Deployment, kept by `foregroundDeletion`, outlives its
/// ReplicaSet (deleted in the foreground in turn), which outlives its pods. Every read on the way
/// is checked for a level gone before the ones below it; the Deployment's state while its
/// ReplicaSet existed starts from the deletion's answer, taken while the ReplicaSet surely existed,
/// so that a fast collector still leaves one observation.
async fn deployment_foreground(ns: TestNamespace) -> Outcome {
    let owner = Owner::Deployment;
    let mut out = Outcome::new();
    record(&mut out, "before", owner, &deployment_up(&ns).await);
    let deleting = delete(&ns, owner, &DeleteParams::foreground()).await;
    let mut while_rs: BTreeSet<String> = deleting.iter().map(state).collect();
    let (mut deployment_early, mut rs_early) = (false, false);
    let after = until(
        &ns,
        owner,
        "the Deployment, its ReplicaSet and pods deleted",
        |f| {
            let below = !f.replica_sets.is_empty() || !f.pods.is_empty();
            if !f.replica_sets.is_empty() {
                while_rs.extend(f.owner.iter().map(state));
            }
            deployment_early |= f.owner.is_none() && below;
            rs_early |= f.replica_sets.is_empty() && !f.pods.is_empty();
            f.is_gone()
        },
    )
    .await;
    out.insert(
        "Deployment while its ReplicaSet existed".into(),
        while_rs.into_iter().collect::<Vec<_>>().join(" | "),
    );
    out.insert(
        "Deployment seen gone before its ReplicaSet and pods".into(),
        deployment_early.to_string(),
    );
    out.insert(
        "ReplicaSet seen gone before its pods".into(),
        rs_early.to_string(),
    );
    record(&mut out, "after", owner, &after);
    out
}

/// The ReplicaSet is released and kept, and keeps its pods: orphaning cuts one level only.
async fn deployment_orphan(ns: TestNamespace) -> Outcome {
    let owner = Owner::Deployment;
    let mut out = Outcome::new();
    record(&mut out, "before", owner, &deployment_up(&ns).await);
    let deleting = delete(&ns, owner, &DeleteParams::orphan()).await;
    out.insert(
        "Deployment's finalizers once deleted".into(),
        finalizers(deleting.as_ref()),
    );
    until(
        &ns,
        owner,
        "the Deployment gone and its ReplicaSet released",
        |f| {
            f.owner.is_none()
                && !f.replica_sets.is_empty()
                && f.replica_sets
                    .iter()
                    .all(|r| r.owner_references.as_ref().is_none_or(Vec::is_empty))
        },
    )
    .await;
    tokio::time::sleep(KEPT_FOR).await;
    let after = until(&ns, owner, "a read of the family", |_| true).await;
    record(&mut out, "after", owner, &after);
    out
}

/// The Job's pods carry its tracking finalizer, which the Job controller must drop from pods whose
/// Job is gone before the collector's deletions of them can complete.
async fn job_background(ns: TestNamespace) -> Outcome {
    let owner = Owner::Job;
    let mut spec = json!({"parallelism": REPLICAS, "completions": REPLICAS});
    crate::json::merge(&mut spec, unbound());
    ns.api::<Job>()
        .create(&PostParams::default(), &job_manifest(owner.name(), FOREVER, spec))
        .await
        .expect("create the Job");
    let before = until(&ns, owner, "the Job's pods", |f| {
        f.pods.len() == REPLICAS && f.owned_pods(owner) == REPLICAS
    })
    .await;
    let mut out = Outcome::new();
    record(&mut out, "before", owner, &before);
    delete(&ns, owner, &DeleteParams::background()).await;
    let after = until(&ns, owner, "the Job's pods deleted", Family::is_gone).await;
    record(&mut out, "after", owner, &after);
    out
}
