//! The pod garbage collector, differential: each scenario (`kcm_rs_e2e::podgc_scenarios`) runs
//! under upstream's collector (reference mode), then under kcm-rs's with no
//! kube-controller-manager at all (bare mode), as the shipped ServiceAccount with the roles of
//! `deploy/rbac.yaml`, `deploy/namespace-controller.yaml`, `deploy/serviceaccount-controller.yaml`
//! and `deploy/pod-garbage-collector-controller.yaml`; kcm-rs also runs its namespace and
//! ServiceAccount controllers, which a KCM-less plane needs for the test namespaces and their pods.
//! Both collectors run with `--terminated-pod-gc-threshold` lowered to `podgc_scenarios::THRESHOLD`.
//! Restarts kube-controller-manager and kube-scheduler (mode switches), so the test is named
//! disruptive_* and its suite runs alone on its control plane (hack/e2e.sh). `KCM_RS_SCENARIOS=a,b`
//! runs only the scenarios named.

use kcm_rs_e2e::{
    Cluster, Mode,
    differential::{assert_agree, run_scenarios, selected, under_both_flagged},
    podgc_scenarios::{THRESHOLD, scenarios},
};

#[tokio::test]
async fn disruptive_pod_garbage_collector_matches_upstream() {
    let cluster = Cluster::connect().await;
    let scenarios = selected(scenarios());
    cluster.apply_shipped_rbac();
    for file in [
        "namespace-controller.yaml",
        "serviceaccount-controller.yaml",
        "pod-garbage-collector-controller.yaml",
    ] {
        cluster.apply_deploy_file(file);
    }
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    let threshold = format!("--terminated-pod-gc-threshold={THRESHOLD}");
    let both = under_both_flagged(
        &cluster,
        &[&threshold],
        Mode::Bare,
        "pod-garbage-collector-controller",
        &[
            "--controllers=pod-garbage-collector-controller,serviceaccount-controller,namespace-controller",
            &threshold,
        ],
        Some(kubeconfig),
        |actor| run_scenarios(&cluster, &scenarios, actor),
    )
    .await;
    assert_agree("pod-garbage-collector-controller", &scenarios, &both);
    assert!(both.panics.is_empty(), "kcm-rs panicked: {:?}", both.panics);
}
