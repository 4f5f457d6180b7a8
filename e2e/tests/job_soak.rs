//! The Job controller under random operations (`kcm_rs_e2e::soak::job`), with kcm-rs running it and
//! upstream's disabled: zero panics; at the end every Job finished and counted exactly, and no pod
//! keeps the tracking finalizer. `KCM_RS_SOAK_SECONDS` sets the length (60 s by default; `make
//! soak`: 600), `KCM_RS_SOAK_SEED` replays a run. Switches upstream KCM to replace mode, so the test
//! is named disruptive_*.

use std::time::Duration;

use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    soak::{
        self,
        job::{self, JobSoak},
    },
    with_namespace,
};

const SOAK_DEFAULT: Duration = Duration::from_secs(60);
/// A liveness bound: the re-creation backoffs of a Job at its backoffLimit of 3 add up to 70 s.
const CONVERGE_WAIT: Duration = Duration::from_secs(240);

#[tokio::test]
async fn disruptive_job_randomized_soak() {
    let seed = soak::seed_from_env();
    let duration = soak::duration_from_env(SOAK_DEFAULT);
    println!("soak: seed {seed} (replay: KCM_RS_SOAK_SEED={seed}), {duration:?} of operations");
    let cluster = Cluster::connect().await;
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let mut kcm = KcmRs::start(&cluster, "job-soak", &["--controllers=job-controller"]).await;
    let kcm_mut = &mut kcm;
    with_namespace(cluster.clone(), "job-soak", |ns| async move {
        let mut soak = JobSoak::new(ns.clone(), seed);
        soak.run(duration).await;
        let converged = job::wait_converged(&ns, CONVERGE_WAIT).await;
        println!("{}", soak.tally.summary(seed));
        let mut failures = soak::failures(kcm_mut, &soak.tally.errors);
        match converged {
            Ok((jobs, took)) => println!("{jobs} Jobs finished {took:?} after the last operation"),
            Err(e) => failures.push(format!("not converged {e}")),
        }
        soak::assert_passed(&failures, seed, duration);
    })
    .await;
}
