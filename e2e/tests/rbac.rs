//! The shipped least-privilege RBAC: kcm-rs running as ServiceAccount kcm-rs, bound only to the
//! shipped ClusterRole (and the leader-election Role), passes the ReplicaSet differential suite on
//! the RBAC-enforcing control plane; the shipped Deployment manifest passes server-side validation.

use kcm_rs_e2e::{Cluster, differential::run_differential_as, replicaset_scenarios::scenarios};

#[tokio::test]
async fn disruptive_replicaset_suite_passes_with_the_shipped_cluster_role() {
    let cluster = Cluster::connect().await;
    cluster.apply_shipped_rbac();
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    let args = [
        "--controllers=replicaset-controller",
        "--leader-elect=true",
        "--leader-elect-resource-name=kcm-rs-rbac-e2e",
    ];
    run_differential_as(&cluster, "rbac", &args, Some(kubeconfig), &scenarios()).await;

    let deployment = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/deployment.yaml");
    cluster.kubectl(&[
        "apply",
        "--dry-run=server",
        "-f",
        &deployment.display().to_string(),
    ]);
}
