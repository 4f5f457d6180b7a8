//! Programs over one ReplicationController (upstream's ReplicaSet controller behind its conversion
//! adapters, kcm-rs's over `ReplicaKind`): drawn steps, how each is applied, when a step has
//! settled, and what is compared. Its pods are interchangeable, so a step picks them by position in
//! a sorted list, never by name.

use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use kube::api::{Patch, PatchParams, PostParams};
use rand::{Rng as _, rngs::StdRng, seq::IndexedRandom as _};
use serde_json::json;

use super::{
    execute::{Applied, delete_pod, live_pods, merge, refused},
    program::{MAX_REPLICAS, RC, RcStep, Step},
    projection::{Snapshot, conditions},
};
use crate::{
    TestNamespace,
    differential::Outcome,
    pods::{controller_uid, is_ready},
    replicaset_scenarios::Replicas,
    soak::{is_active, pick},
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Scale,
    MinReadySeconds,
    DeletePods,
    ReleasePod,
}

const WEIGHTS: &[(Op, u32)] = &[
    (Op::Scale, 40),
    (Op::MinReadySeconds, 15),
    (Op::DeletePods, 25),
    (Op::ReleasePod, 20),
];

pub fn steps(rng: &mut StdRng, n: usize) -> Vec<Step> {
    let mut out = vec![RcStep::Create {
        replicas: rng.random_range(0..=4),
        min_ready_seconds: *[0, 0, 1].choose(rng).expect("values"),
    }];
    while out.len() < n {
        out.push(match pick(rng, WEIGHTS) {
            Op::Scale => RcStep::Scale(rng.random_range(0..=MAX_REPLICAS)),
            Op::MinReadySeconds => RcStep::MinReadySeconds(*[0, 1].choose(rng).expect("values")),
            Op::DeletePods => RcStep::DeletePods(rng.random_range(1..=2)),
            Op::ReleasePod => RcStep::ReleasePod {
                which: rng.random_range(0..4),
            },
        });
    }
    out.into_iter().map(Step::ReplicationController).collect()
}

/// The RC's running pods (`execute::live_pods`' order): any of them is as good as another.
async fn owned_pods(ns: &TestNamespace) -> Result<Vec<Pod>, String> {
    let mut pods = live_pods(ns).await?;
    pods.retain(|p| controller_uid(&p.metadata).is_some());
    Ok(pods)
}

pub async fn apply(ns: &TestNamespace, step: &RcStep) -> Applied {
    let api = ns.api::<ReplicationController>();
    match step {
        RcStep::Create {
            replicas,
            min_ready_seconds,
        } => {
            let rc = <ReplicationController as Replicas>::manifest(RC, *replicas, *min_ready_seconds);
            api.create(&PostParams::default(), &rc)
                .await
                .map(|_| "applied".to_owned())
                .map_err(|e| refused("creating the ReplicationController", e))
        }
        RcStep::Scale(n) => merge(&api, RC, json!({"spec": {"replicas": n}})).await,
        RcStep::MinReadySeconds(n) => merge(&api, RC, json!({"spec": {"minReadySeconds": n}})).await,
        RcStep::DeletePods(n) => {
            let mut pods = owned_pods(ns).await?;
            pods.truncate(*n);
            if pods.is_empty() {
                return Ok("skipped: no pod".into());
            }
            for p in &pods {
                delete_pod(ns, p).await?;
            }
            Ok(format!("deleted {} pods", pods.len()))
        }
        RcStep::ReleasePod { which } => {
            let pods = owned_pods(ns).await?;
            let Some(p) = pods.get(which % pods.len().max(1)) else {
                return Ok("skipped: no pod".into());
            };
            // Out of the selector: the controller releases it and creates a replacement.
            let name = p.metadata.name.clone().unwrap_or_default();
            let patch = json!({"metadata": {"labels": {"app": "released"}}});
            ns.api::<Pod>()
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| "released a pod".to_owned())
                .map_err(|e| refused("relabelling a pod", e))
        }
    }
}

fn owned_by(p: &Pod, rc: &ReplicationController) -> bool {
    controller_uid(&p.metadata).is_some() && controller_uid(&p.metadata) == rc.metadata.uid.as_deref()
}

/// Settled: the status observed the spec, every replica Ready and available, as many live pods of
/// its own as it wants.
pub fn unsettled(s: &Snapshot, out: &mut Vec<String>) {
    let Some(rc) = &s.replication_controller else {
        out.push("no ReplicationController".into());
        return;
    };
    let want = rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let st = rc.status.clone().unwrap_or_default();
    if st.observed_generation != rc.metadata.generation {
        out.push("the generation not observed".into());
    }
    let own = s.pods.iter().filter(|p| is_active(p) && owned_by(p, rc)).count();
    let figures = [
        st.replicas,
        st.ready_replicas.unwrap_or(0),
        st.available_replicas.unwrap_or(0),
        i32::try_from(own).unwrap_or(i32::MAX),
    ];
    if figures.iter().any(|n| *n != want) {
        out.push(format!(
            "want {want}: status replicas, ready, available {:?}, {own} live pods of its own",
            &figures[..3]
        ));
    }
}

pub fn project(s: &Snapshot) -> Outcome {
    let mut o = Outcome::new();
    let Some(rc) = &s.replication_controller else {
        o.insert("replicationcontroller".into(), "absent".into());
        return o;
    };
    let st = rc.status.clone().unwrap_or_default();
    for (k, v) in [
        ("replicas", Some(st.replicas)),
        ("fullyLabeledReplicas", st.fully_labeled_replicas),
        ("readyReplicas", st.ready_replicas),
        ("availableReplicas", st.available_replicas),
    ] {
        o.insert(format!("status.{k}"), v.unwrap_or(0).to_string());
    }
    let by_type = st.conditions.iter().flatten();
    let by_type = by_type.map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_deref()));
    o.insert("status.conditions".into(), conditions(by_type));
    let own = s.pods.iter().filter(|p| is_active(p) && owned_by(p, rc));
    let ready = own.clone().filter(|p| is_ready(p)).count();
    o.insert("own live pods".into(), own.count().to_string());
    o.insert("own ready pods".into(), ready.to_string());
    let released = s
        .pods
        .iter()
        .filter(|p| is_active(p) && controller_uid(&p.metadata).is_none())
        .count();
    o.insert("released live pods".into(), released.to_string());
    o
}
