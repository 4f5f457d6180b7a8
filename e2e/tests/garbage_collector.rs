//! The garbage collector, differential, in three tests. Each scenario runs under upstream's collector
//! (reference mode), then under kcm-rs's with no kube-controller-manager at all (bare mode), and the
//! outcomes must match; kcm-rs runs as the shipped ServiceAccount with the roles of
//! `deploy/rbac.yaml`, `deploy/namespace-controller.yaml` and `deploy/garbage-collector-controller.yaml`, and
//! runs its namespace controller too, which deletes the test namespaces.
//!
//! - `kcm_rs_e2e::gc_scenarios::scenarios`: references written by hand among ConfigMaps, Secrets and
//!   Widgets, a custom resource whose CRD the test installs before either collector starts, and Roles
//!   whose names a request must escape.
//! - `kcm_rs_e2e::gc_scenarios::workload_scenarios`: Deployments and Jobs deleted while the workload
//!   controllers run; kcm-rs runs its own (`*`) and its ServiceAccount controller, whose `default`
//!   accounts the namespaces wait for before pods can be made (with the role of
//!   `deploy/serviceaccount-controller.yaml`).
//! - `kcm_rs_e2e::gc_scenarios::random`: seeded random programs over ConfigMaps, compared after
//!   every step, with the invariant whose breach is data loss checked on every watch event. Each
//!   failure prints its seed; `KCM_RS_RANDOM_SEED=<seed> KCM_RS_RANDOM_PROGRAMS=1` replays it.
//!
//! All restart kube-controller-manager and kube-scheduler (mode switches), so they are named
//! disruptive_* and their suite runs alone on its control plane, one test at a time (hack/e2e.sh).
//! `KCM_RS_SCENARIOS=a,b` runs only the scenarios named, of either fixed test, and no random
//! programs unless `KCM_RS_RANDOM_SEED` is set.

use kcm_rs_e2e::{
    Cluster, Mode,
    differential::{self, Scenario, assert_agree, diff, selected, under_both_in},
    gc_scenarios::{
        install_widgets,
        random::{Program, ProgramRun, config, programs, run_programs},
        run_scenarios, scenarios, workload_scenarios,
    },
};

const SUITE: &str = "garbage-collector-controller";

/// This test's scenarios that `KCM_RS_SCENARIOS` names, checked against both tests' lists: a name of
/// the other test's is no typo, it only leaves this test with nothing to run.
fn chosen(mine: Vec<Scenario>, theirs: Vec<Scenario>) -> Vec<Scenario> {
    let named = selected(mine.iter().chain(&theirs).copied().collect());
    mine.into_iter()
        .filter(|s| named.iter().any(|n| n.name == s.name))
        .collect()
}

/// The control plane, with the shipped ServiceAccount's roles and those of `deploy_files`; the
/// kubeconfig kcm-rs runs with, that ServiceAccount's.
async fn as_shipped(deploy_files: &[&str]) -> (Cluster, std::path::PathBuf) {
    let cluster = Cluster::connect().await;
    cluster.apply_shipped_rbac();
    for file in deploy_files {
        cluster.apply_deploy_file(file);
    }
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    (cluster, kubeconfig)
}

/// Both outcomes of each scenario, printed, then compared.
fn report(
    scenarios: &[Scenario],
    both: &differential::UnderBoth<Vec<Result<differential::Outcome, String>>>,
) {
    for (s, (a, b)) in scenarios.iter().zip(both.upstream.iter().zip(&both.kcm_rs)) {
        println!("[{}]\n  upstream: {a:?}\n  kcm-rs:   {b:?}", s.name);
    }
    assert_agree(SUITE, scenarios, both);
}

#[tokio::test]
async fn disruptive_garbage_collector_matches_upstream() {
    let scenarios = chosen(scenarios(), workload_scenarios());
    if scenarios.is_empty() {
        println!("KCM_RS_SCENARIOS names none of this test's scenarios");
        return;
    }
    let (cluster, kubeconfig) =
        as_shipped(&["namespace-controller.yaml", "garbage-collector-controller.yaml"]).await;
    install_widgets(&cluster).await;
    let both = under_both_in(
        &cluster,
        Mode::Bare,
        SUITE,
        &["--controllers=garbage-collector-controller,namespace-controller"],
        Some(kubeconfig),
        |actor| run_scenarios(&cluster, &scenarios, actor),
    )
    .await;
    report(&scenarios, &both);
}

#[tokio::test]
async fn disruptive_workloads_are_collected_as_upstream() {
    let scenarios = chosen(workload_scenarios(), scenarios());
    if scenarios.is_empty() {
        println!("KCM_RS_SCENARIOS names none of this test's scenarios");
        return;
    }
    let (cluster, kubeconfig) = as_shipped(&[
        "namespace-controller.yaml",
        "serviceaccount-controller.yaml",
        "garbage-collector-controller.yaml",
    ])
    .await;
    let both = under_both_in(
        &cluster,
        Mode::Bare,
        SUITE,
        &["--controllers=*,garbage-collector-controller,namespace-controller,serviceaccount-controller"],
        Some(kubeconfig),
        // The shared runner: its namespaces wait for their `default` ServiceAccount, which bare mode
        // has kcm-rs's ServiceAccount controller make.
        |actor| differential::run_scenarios(&cluster, &scenarios, actor),
    )
    .await;
    report(&scenarios, &both);
}

#[tokio::test]
async fn disruptive_random_programs_agree_with_upstream() {
    let named = std::env::var("KCM_RS_SCENARIOS").is_ok_and(|s| !s.trim().is_empty());
    if named && std::env::var("KCM_RS_RANDOM_SEED").is_err() {
        println!("KCM_RS_SCENARIOS names fixed scenarios and no KCM_RS_RANDOM_SEED is set");
        return;
    }
    let config = config();
    println!("random programs: {config:?}");
    let (cluster, kubeconfig) =
        as_shipped(&["namespace-controller.yaml", "garbage-collector-controller.yaml"]).await;
    let started = tokio::time::Instant::now();
    for round in 0.. {
        let programs = programs(&config, round);
        let seeds: Vec<u64> = programs.iter().map(|p| p.seed).collect();
        println!("round {round}: seeds {seeds:?}");
        let both = under_both_in(
            &cluster,
            Mode::Bare,
            SUITE,
            &["--controllers=garbage-collector-controller,namespace-controller"],
            Some(kubeconfig.clone()),
            |actor| run_programs(&cluster, &programs, actor),
        )
        .await;
        let report = compare(&programs, &both.upstream, &both.kcm_rs);
        assert!(
            report.is_empty(),
            "{SUITE}: random programs:{report}\n{}",
            both.log_tail
        );
        if config.duration.is_none_or(|d| started.elapsed() >= d) {
            break;
        }
    }
}

/// What differs between the two runs of each program, and kcm-rs's breaches of the invariant, each
/// with the command that replays its program; upstream's breaches are printed only.
fn compare(programs: &[Program], upstream: &[ProgramRun], kcm_rs: &[ProgramRun]) -> String {
    let mut report = String::new();
    for (p, (want, got)) in programs.iter().zip(upstream.iter().zip(kcm_rs)) {
        let replay = p.replay();
        match (want, got) {
            (Err(e), _) => report.push_str(&format!("\n[{replay}] failed under upstream: {e}\n")),
            (_, Err(e)) => report.push_str(&format!("\n[{replay}] failed under kcm-rs: {e}\n")),
            (Ok((want, upstream_breaches)), Ok((got, breaches))) => {
                for b in upstream_breaches {
                    println!("[{replay}] upstream broke the invariant (not a failure): {b}");
                }
                for b in breaches {
                    report.push_str(&format!("\n[{replay}] kcm-rs broke the invariant: {b}\n"));
                }
                if want != got {
                    report.push_str(&format!(
                        "\n[{replay}] differs:\n{}\nthe program: {p:?}\n",
                        diff(want, got)
                    ));
                }
            }
        }
    }
    report
}
