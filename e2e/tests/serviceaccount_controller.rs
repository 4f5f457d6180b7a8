//! The ServiceAccount controller, differential: each scenario (`kcm_rs_e2e::serviceaccount_scenarios`)
//! runs under upstream's controller (reference mode), then under kcm-rs's with no
//! kube-controller-manager at all (bare mode), as the shipped ServiceAccount with the roles of
//! `deploy/rbac.yaml`, `deploy/namespace-controller.yaml` and `deploy/serviceaccount-controller.yaml`;
//! kcm-rs also runs its namespace controller, which deletes the test namespaces. Restarts
//! kube-controller-manager and kube-scheduler (mode switches), so the test is named disruptive_*
//! and its suite runs alone on its control plane (hack/e2e.sh). `KCM_RS_SCENARIOS=a,b` runs only
//! the scenarios named.

use kcm_rs_e2e::{
    Cluster, Mode,
    differential::{assert_agree, run_scenarios, selected, under_both_in},
    serviceaccount_scenarios::scenarios,
};

#[tokio::test]
async fn disruptive_serviceaccount_controller_matches_upstream() {
    let cluster = Cluster::connect().await;
    let scenarios = selected(scenarios());
    cluster.apply_shipped_rbac();
    cluster.apply_deploy_file("namespace-controller.yaml");
    cluster.apply_deploy_file("serviceaccount-controller.yaml");
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    let both = under_both_in(
        &cluster,
        Mode::Bare,
        "serviceaccount-controller",
        &["--controllers=serviceaccount-controller,namespace-controller"],
        Some(kubeconfig),
        |actor| run_scenarios(&cluster, &scenarios, actor),
    )
    .await;
    assert_agree("serviceaccount-controller", &scenarios, &both);
}
