//! The namespace controller, differential: each scenario (`kcm_rs_e2e::namespace_scenarios`) runs
//! under upstream's controller (reference mode), then under kcm-rs's with no kube-controller-manager
//! at all (bare mode, as under envtest), and the outcomes must match. Restarts kube-controller-manager
//! and kube-scheduler (mode switches), so the test is named disruptive_* and its suite runs alone on
//! its control plane (hack/e2e.sh). kcm-rs runs as the shipped ServiceAccount, with the roles of
//! `deploy/rbac.yaml` and `deploy/namespace-controller.yaml` and nothing else. `KCM_RS_SCENARIOS=a,b`
//! runs only the scenarios named.

use kcm_rs_e2e::{
    Cluster, Mode,
    differential::{assert_agree, selected, under_both_in},
    namespace_scenarios::{run_scenarios, scenarios},
};

#[tokio::test]
async fn disruptive_namespace_controller_matches_upstream() {
    let cluster = Cluster::connect().await;
    let scenarios = selected(scenarios());
    cluster.apply_shipped_rbac();
    cluster.apply_deploy_file("namespace-controller.yaml");
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    let both = under_both_in(
        &cluster,
        Mode::Bare,
        "namespace-controller",
        &["--controllers=namespace-controller"],
        Some(kubeconfig),
        |actor| run_scenarios(&cluster, &scenarios, actor),
    )
    .await;
    for (s, (a, b)) in scenarios.iter().zip(both.upstream.iter().zip(&both.kcm_rs)) {
        println!("[{}]\n  upstream: {a:?}\n  kcm-rs:   {b:?}", s.name);
    }
    assert_agree("namespace-controller", &scenarios, &both);
}

/// The legacy discovery documents, which API servers before 1.26 answer, find the namespaced kinds
/// the aggregated ones do, each in the same version with the same verbs.
#[tokio::test]
async fn legacy_and_aggregated_discovery_find_the_same_kinds() {
    let cluster = Cluster::connect().await;
    let aggregated =
        controller::discovery::discover_as(&cluster.client, controller::discovery::Format::Preferred)
            .await
            .expect("aggregated discovery");
    let legacy = controller::discovery::discover_as(&cluster.client, controller::discovery::Format::Legacy)
        .await
        .expect("legacy discovery");
    assert!(aggregated.resources.iter().any(|r| r.is_pods()), "{aggregated:?}");
    assert_eq!(legacy, aggregated);
}
