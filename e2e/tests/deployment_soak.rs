//! The Deployment controller under random operations (`kcm_rs_e2e::deployment_soak`), with kcm-rs
//! running the Deployment and ReplicaSet controllers and upstream's disabled: zero panics, every
//! Deployment fully rolled out at the end. `KCM_RS_SOAK_SECONDS` sets the length (60 s by default;
//! `make soak`: 600), `KCM_RS_SOAK_SEED` replays a run. Switches upstream KCM to replace mode, so the
//! test is named disruptive_*.

use std::time::Duration;

use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    deployment_soak::{self, DeploymentSoak},
    soak, with_namespace,
};

const SOAK_DEFAULT: Duration = Duration::from_secs(60);
/// A liveness bound: the last rollouts, at most 12 pods each, with minReadySeconds up to 3 s.
const CONVERGE_WAIT: Duration = Duration::from_secs(180);

#[tokio::test]
async fn disruptive_deployment_randomized_soak() {
    let seed = soak::seed_from_env();
    let duration = soak::duration_from_env(SOAK_DEFAULT);
    println!("soak: seed {seed} (replay: KCM_RS_SOAK_SEED={seed}), {duration:?} of operations");
    let cluster = Cluster::connect().await;
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let args = ["--controllers=deployment-controller,replicaset-controller"];
    let mut kcm = KcmRs::start(&cluster, "deployment-soak", &args).await;
    let kcm_mut = &mut kcm;
    with_namespace(cluster.clone(), "deployment-soak", |ns| async move {
        let mut soak = DeploymentSoak::new(ns.clone(), seed);
        soak.create().await;
        soak.run(duration).await;
        let converged = deployment_soak::wait_converged(&ns, CONVERGE_WAIT).await;
        println!("{}", soak.tally.summary(seed));
        let mut failures = soak::failures(kcm_mut, &soak.tally.errors);
        match converged {
            Ok(took) => println!("converged {took:?} after the last operation"),
            Err(e) => failures.push(format!("not converged {e}")),
        }
        soak::assert_passed(&failures, seed, duration);
    })
    .await;
}
