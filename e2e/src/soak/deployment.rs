//! A randomized soak of the Deployment controller (with kcm-rs's ReplicaSet controller under it), and
//! the convergence it ends with: after random scaling, image and strategy changes, pauses, deleted
//! pods, deleted and orphaned ReplicaSets and minReadySeconds changes, every Deployment must be
//! resumed, fully rolled out to one ReplicaSet holding all its pods, and stay so.
//!
//! Polls with LIST and GET only (no watch to re-establish after a "watcher close").

use std::{collections::BTreeSet, time::Duration};

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::Pod,
};
use kube::api::{DeleteParams, ListParams, PostParams};
use rand::{Rng as _, SeedableRng as _, rngs::StdRng, seq::IndexedRandom as _};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{
    TestNamespace,
    soak::{STABLE, Tally, Ticks, is_active, merge, pick},
};

/// How many Deployments the soak drives, and their largest random size.
pub const DEPLOYMENTS: usize = 4;
pub const MAX_REPLICAS: i32 = 12;
const REVISION: &str = "deployment.kubernetes.io/revision";

/// One kind of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `spec.replicas` to a random size.
    Scale,
    /// A new image: a rollout.
    Image,
    /// RollingUpdate with random maxSurge/maxUnavailable, or Recreate.
    Strategy,
    /// Paused or not, at random.
    Pause,
    /// A random `minReadySeconds` in 0..=3.
    MinReadySeconds,
    /// Delete one of its pods: its ReplicaSet replaces it.
    DeletePod,
    /// Delete one of its ReplicaSets: the Deployment makes the new one again if it was that one.
    DeleteReplicaSet,
    /// Remove a ReplicaSet's ownerReferences: the Deployment adopts it again.
    OrphanReplicaSet,
}

const WEIGHTS: &[(Op, u32)] = &[
    (Op::Scale, 30),
    (Op::Image, 18),
    (Op::Strategy, 10),
    (Op::Pause, 10),
    (Op::MinReadySeconds, 6),
    (Op::DeletePod, 12),
    (Op::DeleteReplicaSet, 6),
    (Op::OrphanReplicaSet, 8),
];

pub fn name(i: usize) -> String {
    format!("web-{i}")
}

/// The soak's state: the namespace, the seeded RNG and what it did so far.
#[derive(Debug)]
pub struct DeploymentSoak {
    ns: TestNamespace,
    rng: StdRng,
    pub seed: u64,
    pub tally: Tally,
    image: u64,
}

impl DeploymentSoak {
    pub fn new(ns: TestNamespace, seed: u64) -> DeploymentSoak {
        DeploymentSoak {
            ns,
            rng: StdRng::seed_from_u64(seed),
            seed,
            tally: Tally::default(),
            image: 1,
        }
    }

    pub async fn create(&self) {
        for i in 0..DEPLOYMENTS {
            let d = crate::deployment_scenarios::deployment_manifest(&name(i), 5, "nginx:1", json!({}));
            self.ns
                .api::<Deployment>()
                .create(&PostParams::default(), &d)
                .await
                .unwrap_or_else(|e| panic!("creating Deployment {}: {e}", name(i)));
        }
    }

    /// Applies a random operation every [`crate::soak::OP_INTERVAL`] for `duration`, then resumes every
    /// Deployment as a rolling update.
    pub async fn run(&mut self, duration: Duration) {
        let mut ticks = Ticks::new(duration);
        while ticks.next().await {
            let op = pick(&mut self.rng, WEIGHTS);
            let i = self.rng.random_range(0..DEPLOYMENTS);
            let result = self.apply(op, i).await;
            self.tally.record(op, &name(i), result);
        }
        // Resumed as rolling updates: a Recreate Deployment scaled while two of its ReplicaSets are
        // active and none has its template never converges, under upstream as under kcm-rs (the
        // Deployment suite's recreate-scaled-mid-rollout scenario), so the end state the soak checks
        // is reached through a rolling update.
        let end = json!({"spec": {"paused": false, "strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}});
        for i in 0..DEPLOYMENTS {
            let api = self.ns.api::<Deployment>();
            merge(&api, &name(i), &end)
                .await
                .unwrap_or_else(|e| panic!("resuming {}: {e}", name(i)));
        }
    }

    async fn apply(&mut self, op: Op, i: usize) -> Result<bool, kube::Error> {
        let n = name(i);
        let spec = match op {
            Op::Scale => json!({"replicas": self.rng.random_range(0..=MAX_REPLICAS)}),
            Op::Image => {
                self.image += 1;
                let image = format!("nginx:{}", self.image);
                json!({"template": {"spec": {"containers": [{"name": "c", "image": image}]}}})
            }
            Op::Strategy => self.strategy(),
            Op::Pause => json!({"paused": self.rng.random_bool(0.5)}),
            Op::MinReadySeconds => json!({"minReadySeconds": self.rng.random_range(0..=3)}),
            Op::DeletePod => return self.delete_pod(&n).await,
            Op::DeleteReplicaSet | Op::OrphanReplicaSet => return self.replica_set_op(op, &n).await,
        };
        merge(&self.ns.api::<Deployment>(), &n, &json!({"spec": spec})).await?;
        Ok(true)
    }

    fn strategy(&mut self) -> Value {
        if self.rng.random_bool(0.2) {
            return json!({"strategy": {"type": "Recreate", "rollingUpdate": null}});
        }
        let surge = [json!(0), json!(1), json!(3), json!("25%"), json!("50%")];
        let unavailable = [json!(0), json!(1), json!("25%"), json!("50%")];
        let s = surge.choose(&mut self.rng).expect("values").clone();
        let mut u = unavailable.choose(&mut self.rng).expect("values").clone();
        if s == json!(0) && u == json!(0) {
            // Both zero is invalid (the API server refuses it).
            u = json!(1);
        }
        json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": s, "maxUnavailable": u}}})
    }

    async fn delete_pod(&mut self, deployment: &str) -> Result<bool, kube::Error> {
        let pods = self.ns.api::<Pod>();
        let lp = ListParams::default().labels(&format!("app={deployment}"));
        let mut candidates: Vec<String> = pods
            .list(&lp)
            .await?
            .items
            .into_iter()
            .filter(is_active)
            .filter_map(|p| p.metadata.name)
            .collect();
        candidates.sort();
        let Some(pod) = candidates.choose(&mut self.rng) else {
            return Ok(false);
        };
        pods.delete(pod, &DeleteParams::default()).await?;
        Ok(true)
    }

    async fn replica_set_op(&mut self, op: Op, deployment: &str) -> Result<bool, kube::Error> {
        let api = self.ns.api::<ReplicaSet>();
        let lp = ListParams::default().labels(&format!("app={deployment}"));
        let mut candidates: Vec<String> = api
            .list(&lp)
            .await?
            .items
            .into_iter()
            .filter(|rs| {
                rs.metadata
                    .owner_references
                    .as_ref()
                    .is_some_and(|o| !o.is_empty())
            })
            .filter_map(|rs| rs.metadata.name)
            .collect();
        candidates.sort();
        let Some(rs) = candidates.choose(&mut self.rng) else {
            return Ok(false);
        };
        if op == Op::DeleteReplicaSet {
            api.delete(rs, &DeleteParams::background()).await?;
        } else {
            merge(&api, rs, &json!({"metadata": {"ownerReferences": null}})).await?;
        }
        Ok(true)
    }
}

/// What is wrong with Deployment `i` now; empty when it is fully rolled out. On success, the names
/// of its ReplicaSets and pods, to check that they stay put.
async fn problems(ns: &TestNamespace, i: usize) -> Result<BTreeSet<String>, Vec<String>> {
    let n = name(i);
    let get = |e: kube::Error| vec![format!("{n}: {e}")];
    let d = ns.api::<Deployment>().get(&n).await.map_err(get)?;
    let lp = ListParams::default().labels(&format!("app={n}"));
    let rss = ns.api::<ReplicaSet>().list(&lp).await.map_err(get)?.items;
    let pods = ns.api::<Pod>().list(&lp).await.map_err(get)?.items;
    let spec = d.spec.clone().unwrap_or_default();
    let want = spec.replicas.unwrap_or(1);
    let s = d.status.clone().unwrap_or_default();
    let uid = d.metadata.uid.clone().unwrap_or_default();
    let revision = d
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .cloned();
    let mut out = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            out.push(format!("{n}: {what}"));
        }
    };
    check(
        s.observed_generation == d.metadata.generation,
        format!(
            "observedGeneration {:?} of {:?}",
            s.observed_generation, d.metadata.generation
        ),
    );
    for (field, v) in [
        ("replicas", s.replicas),
        ("updatedReplicas", s.updated_replicas),
        ("readyReplicas", s.ready_replicas),
        ("availableReplicas", s.available_replicas),
    ] {
        check(
            v.unwrap_or(0) == want,
            format!("status.{field} {v:?}, want {want}"),
        );
    }
    check(
        s.unavailable_replicas.unwrap_or(0) == 0,
        format!("unavailableReplicas {:?}", s.unavailable_replicas),
    );
    let progressing = s.conditions.iter().flatten().find(|c| c.type_ == "Progressing");
    check(
        progressing
            .is_some_and(|c| c.status == "True" && c.reason.as_deref() == Some("NewReplicaSetAvailable")),
        format!("Progressing {:?}", progressing.map(|c| (&c.status, &c.reason))),
    );
    let mut names = BTreeSet::new();
    let mut new_rs = None;
    for rs in &rss {
        let rs_name = rs.metadata.name.clone().unwrap_or_default();
        let owned = crate::pods::controller_uid(&rs.metadata) == Some(uid.as_str());
        check(owned, format!("ReplicaSet {rs_name} not controlled by it"));
        let rs_rev = rs
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION))
            .cloned();
        let size = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let have = rs.status.as_ref().map_or(0, |s| s.replicas);
        if rs_rev == revision {
            check(
                new_rs.is_none(),
                format!("two ReplicaSets of revision {revision:?}"),
            );
            new_rs = rs.metadata.uid.clone();
            check(
                size == want && have == want,
                format!("new ReplicaSet {rs_name} at {size}/{have}, want {want}"),
            );
        } else {
            check(
                size == 0 && have == 0,
                format!("old ReplicaSet {rs_name} at {size}/{have}"),
            );
        }
        names.insert(rs_name);
    }
    check(
        new_rs.is_some(),
        format!("no ReplicaSet of revision {revision:?}"),
    );
    check(
        rss.len() <= 11,
        format!("{} ReplicaSets kept (revisionHistoryLimit 10)", rss.len()),
    );
    let active: Vec<&Pod> = pods.iter().filter(|p| is_active(p)).collect();
    check(
        active.len() == usize::try_from(want).unwrap_or(0),
        format!("{} active pods, want {want}", active.len()),
    );
    for p in active {
        let pod_name = p.metadata.name.clone().unwrap_or_default();
        check(
            crate::pods::controller_uid(&p.metadata) == new_rs.as_deref(),
            format!("pod {pod_name} not of the new ReplicaSet"),
        );
        names.insert(pod_name);
    }
    if out.is_empty() { Ok(names) } else { Err(out) }
}

/// Waits until every Deployment is fully rolled out and stays so for [`STABLE`]; returns how long
/// that took.
pub async fn wait_converged(ns: &TestNamespace, timeout: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    let mut first: Option<(BTreeSet<String>, Duration)> = None;
    loop {
        let mut all = Ok(BTreeSet::new());
        for i in 0..DEPLOYMENTS {
            match (problems(ns, i).await, &mut all) {
                (Ok(names), Ok(acc)) => acc.extend(names),
                (Err(p), Ok(_)) => all = Err(p),
                (Err(p), Err(acc)) => acc.extend(p),
                (Ok(_), Err(_)) => {}
            }
        }
        let problem = match (all, first.take()) {
            (Ok(names), Some((before, at))) if names == before => return Ok(at),
            (Ok(names), _) => {
                first = Some((names, start.elapsed()));
                "converged once, then its ReplicaSets or pods changed".to_owned()
            }
            (Err(p), _) => p.join("\n  "),
        };
        let grace = first.as_ref().map_or(Duration::ZERO, |_| STABLE * 2);
        if start.elapsed() >= timeout + grace {
            return Err(format!("after {:?}:\n  {problem}", start.elapsed()));
        }
        tokio::time::sleep(first.as_ref().map_or(Duration::from_secs(1), |_| STABLE)).await;
    }
}
