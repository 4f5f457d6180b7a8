//! Shadow mode for the two garbage collectors beside upstream's (reference mode), under the read-only
//! roles their deploy files bind to the shipped shadow ServiceAccount; the harness is
//! `kcm_rs_e2e::shadow`'s, as for the workload controllers (`shadow`).

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kcm_rs_e2e::{
    Cluster, Mode, ModeGuard, TestNamespace, gc_scenarios, podgc_scenarios,
    shadow::{Report, SETTLE, assert_no_divergence, assert_reported, reference_cluster, start_shadow},
};
use kube::api::PostParams;
use serde_json::json;

/// kcm-rs's garbage collector and pod garbage collector beside upstream's, under the read-only roles
/// of `deploy/garbage-collector-controller.yaml` and `deploy/pod-garbage-collector-controller.yaml`:
/// no divergence in either's scenarios. Then each reports what upstream leaves undone: with
/// upstream's collector switched off (`--enable-garbage-collector=false`), a ConfigMap whose owner
/// never existed; with kcm-rs's terminated-pod threshold at 1 against upstream's 12,500, the first
/// of two ended pods (the older, or on a tie of creation seconds the first by name, as upstream
/// orders them).
#[tokio::test]
async fn disruptive_shadow_garbage_collectors_agree_with_upstream() {
    // The Widgets first: the switch to reference mode then restarts upstream's collector, which
    // watches them from its start as kcm-rs's does. Installed after it, they would wait for its next
    // discovery (every 30 s), and kcm-rs would decide on them first: a disagreement of timing.
    gc_scenarios::install_widgets(&Cluster::connect().await).await;
    let (cluster, kubeconfig) = reference_cluster().await;
    cluster.apply_deploy_file("garbage-collector-controller.yaml");
    cluster.apply_deploy_file("pod-garbage-collector-controller.yaml");
    let both = "--controllers=garbage-collector-controller,pod-garbage-collector-controller";
    let shadow = start_shadow(
        &cluster,
        "shadow-gc",
        &[both, "--shadow", SETTLE],
        kubeconfig.clone(),
    )
    .await;
    let mut scenarios = gc_scenarios::scenarios();
    scenarios.extend(podgc_scenarios::scenarios());
    assert_no_divergence(&cluster, &shadow, scenarios).await;
    assert!(shadow.stop().success());

    let dangling = |ns: TestNamespace| async move {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "a", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "missing",
            "uid": "00000000-0000-0000-0000-000000000001"}]}}))
        .unwrap();
        ns.api::<ConfigMap>()
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    };
    {
        let _no_collector =
            ModeGuard::enter_flagged(&cluster, Mode::Reference, &["--enable-garbage-collector=false"]);
        let report = Report {
            label: "shadow-gc-off",
            args: &["--controllers=garbage-collector-controller", "--shadow", SETTLE],
            component: "garbage-collector-controller",
            lines: &["kcm-rs would delete it (background propagation): no owner holds it"],
            unreported: &[],
            within: Duration::from_secs(60),
        };
        assert_reported(
            &cluster,
            kubeconfig.clone(),
            report,
            ("a (v1 ConfigMap)", dangling),
        )
        .await;
    }

    let ended = |ns: TestNamespace| async move {
        podgc_scenarios::ended_pods(&ns, &[("a", "Succeeded", None), ("b", "Failed", None)]).await;
    };
    // Reported after the settle time and a pass period of lag, at kcm-rs's third pass at most.
    let report = Report {
        label: "shadow-podgc-threshold",
        args: &[
            "--controllers=pod-garbage-collector-controller",
            "--shadow",
            SETTLE,
            "--terminated-pod-gc-threshold=1",
        ],
        component: "pod-garbage-collector-controller",
        lines: &["pod: kcm-rs would force-delete it (terminated)"],
        unreported: &["b"],
        within: Duration::from_secs(90),
    };
    assert_reported(&cluster, kubeconfig, report, ("a", ended)).await;
}
