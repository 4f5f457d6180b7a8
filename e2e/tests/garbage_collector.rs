//! The garbage collector, differential, in two tests. Each scenario runs under upstream's collector
//! (reference mode), then under kcm-rs's with no kube-controller-manager at all (bare mode), and the
//! outcomes must match; kcm-rs runs as the shipped ServiceAccount with the roles of
//! `deploy/rbac.yaml`, `deploy/namespace-controller.yaml` and `deploy/garbage-collector-controller.yaml`, and
//! runs its namespace controller too, which deletes the test namespaces.
//!
//! - `kcm_rs_e2e::gc_scenarios::scenarios`: references written by hand among ConfigMaps, Secrets and
//!   Widgets, a custom resource whose CRD the test installs before either collector starts.
//! - `kcm_rs_e2e::gc_scenarios::workload_scenarios`: Deployments and Jobs deleted while the workload
//!   controllers run; kcm-rs runs its own (`*`) and its ServiceAccount controller, whose `default`
//!   accounts the namespaces wait for before pods can be made (with the role of
//!   `deploy/serviceaccount-controller.yaml`).
//!
//! Both restart kube-controller-manager and kube-scheduler (mode switches), so they are named
//! disruptive_* and their suite runs alone on its control plane, one test at a time (hack/e2e.sh).
//! `KCM_RS_SCENARIOS=a,b` runs only the scenarios named, of either test.

use kcm_rs_e2e::{
    Cluster, Mode,
    differential::{self, Scenario, assert_agree, selected, under_both_in},
    gc_scenarios::{install_widgets, run_scenarios, scenarios, workload_scenarios},
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

#[tokio::test]
async fn disruptive_garbage_collector_matches_upstream() {
    let scenarios = chosen(scenarios(), workload_scenarios());
    if scenarios.is_empty() {
        println!("KCM_RS_SCENARIOS names none of this test's scenarios");
        return;
    }
    let cluster = Cluster::connect().await;
    cluster.apply_shipped_rbac();
    cluster.apply_deploy_file("namespace-controller.yaml");
    cluster.apply_deploy_file("garbage-collector-controller.yaml");
    install_widgets(&cluster).await;
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    let both = under_both_in(
        &cluster,
        Mode::Bare,
        SUITE,
        &["--controllers=garbage-collector-controller,namespace-controller"],
        Some(kubeconfig),
        |actor| run_scenarios(&cluster, &scenarios, actor),
    )
    .await;
    for (s, (a, b)) in scenarios.iter().zip(both.upstream.iter().zip(&both.kcm_rs)) {
        println!("[{}]\n  upstream: {a:?}\n  kcm-rs:   {b:?}", s.name);
    }
    assert_agree(SUITE, &scenarios, &both);
}

#[tokio::test]
async fn disruptive_workloads_are_collected_as_upstream() {
    let scenarios = chosen(workload_scenarios(), scenarios());
    if scenarios.is_empty() {
        println!("KCM_RS_SCENARIOS names none of this test's scenarios");
        return;
    }
    let cluster = Cluster::connect().await;
    cluster.apply_shipped_rbac();
    cluster.apply_deploy_file("namespace-controller.yaml");
    cluster.apply_deploy_file("serviceaccount-controller.yaml");
    cluster.apply_deploy_file("garbage-collector-controller.yaml");
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
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
    for (s, (a, b)) in scenarios.iter().zip(both.upstream.iter().zip(&both.kcm_rs)) {
        println!("[{}]\n  upstream: {a:?}\n  kcm-rs:   {b:?}", s.name);
    }
    assert_agree(SUITE, &scenarios, &both);
}
