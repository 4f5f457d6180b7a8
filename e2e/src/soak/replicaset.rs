//! The randomized soak of a ReplicaSet controller, and the convergence checks it ends with.
//!
//! Fixed scenarios only reach the orders of events their authors thought of; the scale-down ranking
//! panic (Rust's sort on upstream's comparator, which is not a total order) showed up only under
//! random scaling, with pods created in the same and in nearby seconds.
//! The soak drives [`REPLICASETS`] ReplicaSets with random operations from a seeded RNG, then stops
//! and requires every ReplicaSet to converge. The seed fixes the sequence of operations, targets and
//! sizes; which pod an operation picks depends on the cluster's state, so a replay is close, not exact.
//!
//! Everything here polls with LIST and GET (no watch to re-establish after a "watcher close").

use std::{collections::BTreeSet, time::Duration};

use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use rand::{Rng as _, SeedableRng as _, rngs::StdRng, seq::IndexedRandom as _};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{NOT_READY, STABLE, Tally, Ticks, is_active, merge, pick};
use crate::TestNamespace;

/// How many ReplicaSets the soak drives, and their largest random size (the sizes the soak was
/// specified with).
pub const REPLICASETS: usize = 8;
pub const MAX_REPLICAS: i32 = 25;
/// The `app` label a relabelled pod gets: it matches no ReplicaSet's selector.
const RELEASED: &str = "released";

/// One kind of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// `spec.replicas` to a random size in 0..=MAX_REPLICAS.
    Scale,
    /// Delete one of the ReplicaSet's pods: it must be replaced.
    DeletePod,
    /// Change a pod's `app` label: it must be released and replaced.
    Relabel,
    /// Remove a pod's ownerReferences: it must be adopted again.
    Orphan,
    /// Change the pod template (an annotation or an extra label); ReplicaSets do not roll pods.
    Template,
    /// A random `minReadySeconds` in 0..=10.
    MinReadySeconds,
    /// Add or remove `kcm-rs.test/ready: never` in the template: new pods run but never become Ready.
    NotReady,
}

/// Scaling dominates, as it is what reaches the scale-down ranking.
const WEIGHTS: &[(Op, u32)] = &[
    (Op::Scale, 40),
    (Op::DeletePod, 14),
    (Op::Relabel, 10),
    (Op::Orphan, 10),
    (Op::Template, 10),
    (Op::MinReadySeconds, 8),
    (Op::NotReady, 8),
];

pub fn rs_name(i: usize) -> String {
    format!("soak-{i}")
}

fn controller_uids(p: &Pod) -> Vec<&str> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
        .collect()
}

/// Whether the ReplicaSet's selector (matchLabels; the ReplicaSets here use nothing else) selects `p`.
fn selects(rs: &ReplicaSet, p: &Pod) -> bool {
    let want = rs.spec.as_ref().and_then(|s| s.selector.match_labels.as_ref());
    let have = p.metadata.labels.as_ref();
    want.is_some_and(|w| w.iter().all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v)))
}

/// What keeps `rs` from having converged: generation observed, `status.replicas` and the number of
/// active pods it controls both equal to `spec.replicas`. Empty when converged.
pub fn rs_problems(rs: &ReplicaSet, pods: &[Pod]) -> Vec<String> {
    let name = rs.metadata.name.as_deref().unwrap_or("?");
    let uid = rs.metadata.uid.as_deref().unwrap_or("?");
    let want = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = rs.status.clone().unwrap_or_default();
    let active = pods
        .iter()
        .filter(|p| is_active(p) && controller_uids(p).contains(&uid))
        .count();
    let mut problems = Vec::new();
    if status.observed_generation != rs.metadata.generation {
        problems.push(format!(
            "{name}: observedGeneration {:?} != generation {:?}",
            status.observed_generation, rs.metadata.generation
        ));
    }
    if status.replicas != want {
        problems.push(format!(
            "{name}: status.replicas {} != spec {want}",
            status.replicas
        ));
    }
    if i32::try_from(active).ok() != Some(want) {
        problems.push(format!("{name}: {active} active pods controlled != spec {want}"));
    }
    problems
}

/// Every ReplicaSet's [`rs_problems`], and the pods' own: controlled twice, controlled but no longer
/// selected (not released), selected but not controlled (an orphan not adopted). When there is none,
/// the UIDs of the active pods, to tell a settled namespace from one that churns.
pub async fn converged(ns: &TestNamespace) -> Result<BTreeSet<String>, Vec<String>> {
    let lp = ListParams::default();
    let (rss, pods) = match (
        ns.api::<ReplicaSet>().list(&lp).await,
        ns.api::<Pod>().list(&lp).await,
    ) {
        (Ok(r), Ok(p)) => (r.items, p.items),
        (Err(e), _) | (_, Err(e)) => return Err(vec![format!("listing: {e}")]),
    };
    let mut problems: Vec<String> = rss.iter().flat_map(|rs| rs_problems(rs, &pods)).collect();
    for p in pods.iter().filter(|p| is_active(p)) {
        let name = p.metadata.name.as_deref().unwrap_or("?");
        let owners = controller_uids(p);
        let selecting: Vec<&ReplicaSet> = rss.iter().filter(|rs| selects(rs, p)).collect();
        match owners.as_slice() {
            [] if !selecting.is_empty() => problems.push(format!("pod {name}: an orphan, not adopted")),
            [] => {}
            [uid] => {
                let owner = rss.iter().find(|rs| rs.metadata.uid.as_deref() == Some(*uid));
                if owner.is_some_and(|rs| !selects(rs, p)) {
                    problems.push(format!("pod {name}: no longer selected, not released"));
                }
            }
            more => problems.push(format!("pod {name}: {} controllers", more.len())),
        }
    }
    if problems.is_empty() {
        Ok(pods
            .iter()
            .filter(|p| is_active(p))
            .filter_map(|p| p.metadata.uid.clone())
            .collect())
    } else {
        Err(problems)
    }
}

/// Waits, at most `timeout`, until [`converged`] holds twice [`STABLE`] apart with the same active
/// pods: one good snapshot could catch a controller that still creates and deletes in a loop. Returns
/// when the first of the two was taken, or the problems last seen.
pub async fn wait_converged(ns: &TestNamespace, timeout: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    let mut first: Option<(BTreeSet<String>, Duration)> = None;
    loop {
        let problem = match (converged(ns).await, first.take()) {
            (Ok(pods), Some((before, at))) if pods == before => return Ok(at),
            (Ok(pods), _) => {
                first = Some((pods, start.elapsed()));
                "converged once, then the active pods changed".to_owned()
            }
            (Err(problems), _) => problems.join("\n  "),
        };
        // A snapshot found by the deadline still gets its confirmation.
        let grace = first.as_ref().map_or(Duration::ZERO, |_| STABLE * 2);
        if start.elapsed() >= timeout + grace {
            return Err(format!("after {:?}:\n  {problem}", start.elapsed()));
        }
        let pause = first.as_ref().map_or(Duration::from_secs(1), |_| STABLE);
        tokio::time::sleep(pause).await;
    }
}

/// The soak's state: the namespace, the seeded RNG and what it did so far.
#[derive(Debug)]
pub struct ReplicaSetSoak {
    ns: TestNamespace,
    rng: StdRng,
    pub seed: u64,
    pub tally: Tally,
    revision: u64,
}

impl ReplicaSetSoak {
    pub fn new(ns: TestNamespace, seed: u64) -> ReplicaSetSoak {
        ReplicaSetSoak {
            ns,
            rng: StdRng::seed_from_u64(seed),
            seed,
            tally: Tally::default(),
            revision: 0,
        }
    }

    /// Creates the ReplicaSets with 10 replicas each; every other one's pods never become Ready, so
    /// both the ready-time and the creation-time tiers of the scale-down ranking are exercised.
    pub async fn create_replicasets(&self) {
        for i in 0..REPLICASETS {
            let mut rs = crate::replicaset_scenarios::rs_manifest(&rs_name(i), 10, 0);
            if i % 2 == 0 {
                let labels = rs.spec.as_mut().and_then(|s| s.template.as_mut());
                let labels = labels
                    .and_then(|t| t.metadata.as_mut())
                    .and_then(|m| m.labels.as_mut());
                labels
                    .expect("rs_manifest has template labels")
                    .insert(NOT_READY.into(), "never".into());
            }
            self.ns
                .api::<ReplicaSet>()
                .create(&PostParams::default(), &rs)
                .await
                .unwrap_or_else(|e| panic!("creating ReplicaSet {}: {e}", rs_name(i)));
        }
    }

    /// Applies a random operation every [`super::OP_INTERVAL`] for `duration`.
    pub async fn run(&mut self, duration: Duration) {
        let mut ticks = Ticks::new(duration);
        while ticks.next().await {
            let op = pick(&mut self.rng, WEIGHTS);
            let i = self.rng.random_range(0..REPLICASETS);
            let result = self.apply(op, i).await;
            self.tally.record(op, &rs_name(i), result);
        }
    }

    /// Applies `op` to ReplicaSet `i` or one of its pods; `false` when there was nothing to act on.
    async fn apply(&mut self, op: Op, i: usize) -> Result<bool, kube::Error> {
        let name = rs_name(i);
        let template = |metadata: Value| json!({"spec": {"template": {"metadata": metadata}}});
        let spec = match op {
            Op::Scale => json!({"spec": {"replicas": self.rng.random_range(0..=MAX_REPLICAS)}}),
            Op::MinReadySeconds => json!({"spec": {"minReadySeconds": self.rng.random_range(0..=10)}}),
            Op::Template => {
                self.revision += 1;
                let rev = self.revision.to_string();
                if self.rng.random_bool(0.5) {
                    template(json!({"annotations": {"kcm-rs.test/soak-revision": rev}}))
                } else {
                    template(json!({"labels": {"soak-revision": rev}}))
                }
            }
            Op::NotReady => {
                let never = if self.rng.random_bool(0.5) {
                    json!("never")
                } else {
                    Value::Null
                };
                template(json!({"labels": {NOT_READY: never}}))
            }
            Op::DeletePod | Op::Relabel | Op::Orphan => return self.apply_to_pod(op, &name).await,
        };
        merge(&self.ns.api::<ReplicaSet>(), &name, &spec).await?;
        Ok(true)
    }

    async fn apply_to_pod(&mut self, op: Op, rs: &str) -> Result<bool, kube::Error> {
        let pods = self.ns.api::<Pod>();
        let lp = ListParams::default().labels(&format!("app={rs}"));
        let mut candidates: Vec<Pod> = pods.list(&lp).await?.items;
        candidates.retain(|p| is_active(p) && (op != Op::Orphan || !controller_uids(p).is_empty()));
        // LIST order is by name already; sorting keeps the choice independent of that detail.
        candidates.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let Some(pod) = candidates.choose(&mut self.rng) else {
            return Ok(false);
        };
        let pod = pod.metadata.name.clone().expect("pod name");
        match op {
            Op::DeletePod => {
                pods.delete(&pod, &DeleteParams::default()).await?;
            }
            Op::Relabel => merge(&pods, &pod, &json!({"metadata": {"labels": {"app": RELEASED}}})).await?,
            _ => merge(&pods, &pod, &json!({"metadata": {"ownerReferences": null}})).await?,
        }
        Ok(true)
    }

    /// Operations by kind: applied and skipped.
    pub fn summary(&self) -> String {
        self.tally.summary(self.seed)
    }
}
