//! The shipped least-privilege RBAC: kcm-rs running as ServiceAccount kcm-rs, bound only to the
//! shipped ClusterRole (and the leader-election Role), with all six controllers, passes the
//! ReplicaSet differential suite, two of its scenarios on ReplicationControllers, and a Deployment,
//! Job, CronJob and TTL-after-finished sample of theirs (each write kind: creates, scaling,
//! rollback, status, pod finalizers, the owner references a Job's, a Deployment's and a CronJob's
//! children carry, Job deletions) on the RBAC-enforcing control plane; the shipped manifests (`deployment.yaml`,
//! the sharded `sharded.yaml`) pass server-side validation.

use kcm_rs_e2e::{
    Cluster, cronjob_scenarios, deployment_scenarios, differential::run_differential_as, job_scenarios,
    replicaset_scenarios, ttl_scenarios,
};

/// The Deployment, Job, CronJob and TTL-after-finished scenarios run here besides every ReplicaSet one.
///
/// The CronJob's is `cron-every-5s`: its Job comes five seconds after the CronJob, where a scenario on
/// a minute's schedule waits for up to two minute boundaries under each controller in turn, most of
/// this suite's time. What `cron-replace` and `cron-history` would add under RBAC, a CronJob's Job
/// read fresh and deleted, goes through the rules the Job controller's reads and the
/// TTL-after-finished controller's deletion (`ttl-complete`) exercise here: one ClusterRole holds
/// every controller's rules.
const SAMPLE: [&str; 8] = [
    "rolling-25-25",
    "rollback",
    "history-limit",
    "indexed-5",
    "backoff-limit",
    "deleted-background",
    "cron-every-5s",
    "ttl-complete",
];

#[tokio::test]
async fn disruptive_every_controller_passes_scenarios_with_the_shipped_cluster_role() {
    let sample: Vec<_> = deployment_scenarios::scenarios()
        .into_iter()
        .chain(job_scenarios::scenarios())
        .chain(cronjob_scenarios::scenarios())
        .chain(ttl_scenarios::scenarios())
        .filter(|s| SAMPLE.contains(&s.name))
        .collect();
    // A renamed scenario must fail here, not silently shrink the sample.
    let missing: Vec<&str> = SAMPLE
        .into_iter()
        .filter(|name| !sample.iter().any(|s| s.name == *name))
        .collect();
    assert!(
        missing.is_empty(),
        "SAMPLE names scenarios that do not exist: {missing:?}"
    );
    let cluster = Cluster::connect().await;
    cluster.apply_shipped_rbac();
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    let args = [
        "--controllers=*",
        "--leader-elect=true",
        "--leader-elect-resource-name=kcm-rs-rbac-e2e",
    ];
    let mut scenarios = replicaset_scenarios::scenarios();
    // The ReplicationController rules: reads, status writes, and pods with a blocking owner reference.
    scenarios.extend(
        replicaset_scenarios::replication_controller_scenarios()
            .into_iter()
            .filter(|s| ["rc-create-3", "rc-adopt-release"].contains(&s.name)),
    );
    scenarios.extend(sample);
    run_differential_as(&cluster, "rbac", &args, Some(kubeconfig), &scenarios).await;

    for manifest in ["deployment.yaml", "sharded.yaml"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../deploy")
            .join(manifest);
        cluster.kubectl(&["apply", "--dry-run=server", "-f", &path.display().to_string()]);
    }
}
