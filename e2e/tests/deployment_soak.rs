//! The Deployment controller under random operations (`kcm_rs_e2e::soak::deployment`), with kcm-rs
//! running the Deployment and ReplicaSet controllers and upstream's disabled: zero panics, every
//! Deployment fully rolled out at the end. `KCM_RS_SOAK_SECONDS` sets the length (60 s by default;
//! `make soak`: 600), `KCM_RS_SOAK_SEED` replays a run. Switches upstream KCM to replace mode, so the
//! test is named disruptive_*.

use std::time::Duration;

use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    soak::{
        self,
        deployment::{self, DeploymentSoak},
    },
    with_namespace,
};

const SOAK_DEFAULT: Duration = Duration::from_secs(60);
/// A liveness bound: the last rollouts, at most 12 pods each, with minReadySeconds up to 3 s.
const CONVERGE_WAIT: Duration = Duration::from_secs(180);
/// kcm-rs's log filter unless `KCM_RS_LOG` says otherwise: the Deployment controller's plans too.
const DEBUG_LOG: &str = "info,deployment=debug";
/// kcm-rs's log lines shown per Deployment left behind.
const LOG_LINES: usize = 40;

#[tokio::test]
async fn disruptive_deployment_randomized_soak() {
    let seed = soak::seed_from_env();
    let duration = soak::duration_from_env(SOAK_DEFAULT);
    println!("soak: seed {seed} (replay: KCM_RS_SOAK_SEED={seed}), {duration:?} of operations");
    let cluster = Cluster::connect().await;
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let args = ["--controllers=deployment-controller,replicaset-controller"];
    // Each Deployment sync's plan, so that a Deployment left behind shows what kcm-rs last decided.
    let log = std::env::var("KCM_RS_LOG").unwrap_or_else(|_| DEBUG_LOG.into());
    let mut kcm = KcmRs::start_env(&cluster, "deployment-soak", &args, &[("RUST_LOG", &log)]).await;
    let kcm_mut = &mut kcm;
    with_namespace(cluster.clone(), "deployment-soak", |ns| async move {
        let mut soak = DeploymentSoak::new(ns.clone(), seed);
        soak.create().await;
        soak.run(duration).await;
        let converged = deployment::wait_converged(&ns, CONVERGE_WAIT).await;
        println!("{}", soak.tally.summary(seed));
        let mut failures = soak::failures(kcm_mut, &soak.tally.errors);
        match converged {
            Ok(took) => println!("converged {took:?} after the last operation"),
            Err(e) => {
                let stuck: std::collections::BTreeSet<&str> = e
                    .lines()
                    .filter_map(|l| l.trim().split_once(':'))
                    .map(|(d, _)| d)
                    .collect();
                let mut report = format!("not converged {e}");
                for d in stuck.into_iter().filter(|d| d.starts_with("web-")) {
                    let lines = kcm_mut.log_lines_with(&format!("{}/{d}", ns.name), LOG_LINES);
                    report.push_str(&format!("\n--- kcm-rs's last lines about {d} ---\n{lines}"));
                }
                failures.push(report);
            }
        }
        soak::assert_passed(&failures, seed, duration);
    })
    .await;
}
