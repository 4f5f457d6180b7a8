//! kcm-rs's ReplicaSet controller under load that fixed scenarios do not reach (random operations,
//! scale-downs that tie on every ranking tier), in replace mode (kcm-rs is the only ReplicaSet
//! controller):
//! * `disruptive_single_node_scale_down`: 100 never-Ready pods on one node, scaled 100 → 5 → 100
//!   five times. Every pod ties in the node, readiness and restart tiers of the scale-down ranking, so
//!   creation time decides: upstream's comparator calls pods created in the same second equal and
//!   pods of different seconds in one log2 age bucket ordered by UID, which is not a total order, and
//!   Rust's sort panicked on it, leaving the ReplicaSet at 100 pods for good. Measured on the old
//!   ranking (sorting 100 such pods): with pods of 2 distinct creation seconds the sort panicked ~5%
//!   of the time, with 4 to 6 seconds in one bucket 90-99%. So kcm-rs runs at KCM's default client
//!   limits (20 QPS, burst 30), which spreads a scale-up's creates over 4-5 s, and each scale-down
//!   waits [`AGE`] first, so that most pods share a bucket.
//! * `disruptive_randomized_soak`: 8 ReplicaSets under random scaling, pod deletes, relabels,
//!   orphanings, template and minReadySeconds changes for `KCM_RS_SOAK_SECONDS` (60 by default, as
//!   the other soaks; a proper soak runs at least ten minutes: `make soak`, or on a running cluster
//!   `KCM_RS_SOAK_SECONDS=600 cargo test -p kcm-rs-e2e --test replicaset_soak`), then everything
//!   must converge, with no panic in kcm-rs's log and kcm-rs still serving. The seed is printed;
//!   `KCM_RS_SOAK_SEED` replays it.
//!
//! Both switch kube-controller-manager's mode, so they are named disruptive_* (kept out of hack/e2e.sh's
//! `parallel` item: the suite runs alone on its lane's control plane), restoring reference mode when done.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard, TestNamespace,
    replicaset_scenarios::rs_manifest,
    soak::{
        self, NOT_READY,
        replicaset::{self as rs_soak, ReplicaSetSoak},
    },
    with_namespace,
};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const CONTROLLERS: &str = "--controllers=replicaset-controller";
/// KCM's default client limits (the harness raises them to 100/200).
const KCM_DEFAULT_QPS: [&str; 2] = ["--kube-api-qps=20", "--kube-api-burst=30"];
/// How long the pods age before a scale-down: past 4.3 s (2^32 ns) the buckets are seconds wide.
const AGE: Duration = Duration::from_secs(5);
/// One of the fake nodes `hack/cluster.sh` registers (label `kubernetes.io/hostname`).
const NODE: &str = "kwok-node-0";
const ROUNDS: usize = 5;
const BIG: i32 = 100;
const SMALL: i32 = 5;
/// Liveness bounds: one scaling step, and the soak's final convergence.
const STEP_WAIT: Duration = Duration::from_secs(120);
const CONVERGE_WAIT: Duration = Duration::from_secs(120);
const SOAK_DEFAULT: Duration = Duration::from_secs(60);

/// A ReplicaSet of never-Ready pods that the scheduler must place on [`NODE`].
fn single_node_rs(name: &str) -> ReplicaSet {
    let mut rs = rs_manifest(name, BIG, 0);
    let template = rs
        .spec
        .as_mut()
        .and_then(|s| s.template.as_mut())
        .expect("rs_manifest has a template");
    let labels = template.metadata.as_mut().and_then(|m| m.labels.as_mut());
    labels
        .expect("rs_manifest has template labels")
        .insert(NOT_READY.into(), "never".into());
    let spec = template.spec.as_mut().expect("rs_manifest has a pod spec");
    spec.node_selector = Some([("kubernetes.io/hostname".to_owned(), NODE.to_owned())].into());
    rs
}

/// Waits until ReplicaSet `name` has settled at `n`: generation observed, `status.replicas` and the
/// active pods it controls both `n`, and the namespace holding exactly `n` pods, all Running on
/// [`NODE`] (so the next scale-down ranks a full set of equal pods). Fails with kcm-rs's panics.
async fn wait_settled(ns: &TestNamespace, kcm: &KcmRs, name: &str, n: i32) -> Duration {
    let step = soak::poll(STEP_WAIT, || async {
        // A panic fails the test anyway: no need to wait out the bound.
        let panics = soak::panics(kcm);
        assert!(
            panics.is_empty(),
            "kcm-rs panicked while {name} scaled to {n}: {panics:#?}"
        );
        let rs = ns
            .api::<ReplicaSet>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        let pods = ns
            .api::<Pod>()
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items;
        let mut problems = rs_soak::rs_problems(&rs, &pods);
        let running = pods
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        if pods.len() != running || i32::try_from(pods.len()).ok() != Some(n) {
            problems.push(format!("{} pods, {running} of them Running", pods.len()));
        }
        if let Some(p) = pods.iter().find(|p| {
            let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
            node.is_some_and(|node| node != NODE)
        }) {
            panic!(
                "pod {:?} was placed off {NODE}: the nodeSelector did not pin it",
                p.metadata.name
            );
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    })
    .await;
    match step {
        Ok(((), took)) => took,
        Err(e) => panic!(
            "ReplicaSet {name} did not settle at {n} pods: {e}\nkcm-rs's panics: {:#?}",
            soak::panics(kcm)
        ),
    }
}

async fn scale(ns: &TestNamespace, name: &str, n: i32) {
    let patch = json!({"spec": {"replicas": n}});
    ns.api::<ReplicaSet>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("scaling {name} to {n}: {e}"));
}

#[tokio::test]
async fn disruptive_single_node_scale_down() {
    let cluster = Cluster::connect().await;
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let args = [CONTROLLERS, KCM_DEFAULT_QPS[0], KCM_DEFAULT_QPS[1]];
    let kcm = KcmRs::start(&cluster, "single-node", &args).await;
    let kcm_ref = &kcm;
    with_namespace(cluster.clone(), "single-node", |ns| async move {
        let name = "single";
        ns.api::<ReplicaSet>()
            .create(&PostParams::default(), &single_node_rs(name))
            .await
            .expect("creating the ReplicaSet");
        let took = wait_settled(&ns, kcm_ref, name, BIG).await;
        println!("{BIG} pods running on {NODE} after {took:?}");
        for round in 1..=ROUNDS {
            tokio::time::sleep(AGE).await;
            scale(&ns, name, SMALL).await;
            let down = wait_settled(&ns, kcm_ref, name, SMALL).await;
            scale(&ns, name, BIG).await;
            let up = wait_settled(&ns, kcm_ref, name, BIG).await;
            println!("round {round}: {BIG} -> {SMALL} in {down:?}, {SMALL} -> {BIG} in {up:?}");
        }
    })
    .await;
    let panics = soak::panics(&kcm);
    assert!(panics.is_empty(), "kcm-rs panicked: {panics:#?}");
}

#[tokio::test]
async fn disruptive_randomized_soak() {
    let seed = soak::seed_from_env();
    let duration = soak::duration_from_env(SOAK_DEFAULT);
    println!("soak: seed {seed} (replay: KCM_RS_SOAK_SEED={seed}), {duration:?} of operations");
    let cluster = Cluster::connect().await;
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let mut kcm = KcmRs::start(&cluster, "soak", &[CONTROLLERS]).await;
    let kcm_mut = &mut kcm;
    with_namespace(cluster.clone(), "soak", |ns| async move {
        let mut soak = ReplicaSetSoak::new(ns.clone(), seed);
        soak.create_replicasets().await;
        soak.run(duration).await;
        let converged = rs_soak::wait_converged(&ns, CONVERGE_WAIT).await;
        let pods = ns
            .api::<Pod>()
            .list(&ListParams::default())
            .await
            .map(|l| l.items.len());
        println!("{}", soak.summary());
        match &converged {
            Ok(took) => println!("converged {took:?} after the last operation; {pods:?} pods"),
            Err(e) => println!("did not converge: {e}"),
        }

        let mut failures = soak::failures(kcm_mut, &soak.tally.errors);
        if let Err(e) = converged {
            failures.push(format!("not converged {e}"));
        }
        soak::assert_passed(&failures, seed, duration);
    })
    .await;
}
