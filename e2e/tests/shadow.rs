//! Shadow mode beside upstream's controllers (reference mode), under the shipped read-only role
//! (`kcm_rs_e2e::shadow`): no divergence on the ReplicaSet (and a sample of them on
//! ReplicationControllers), Deployment, Job, CronJob and TTL-after-finished scenarios; for each
//! controller a deliberate perturbation is reported for the right object and field, counted and
//! logged. The two garbage collectors: `shadow_collectors`.

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    core::v1::ReplicationController,
};
use kcm_rs_e2e::{
    TestNamespace, cronjob_scenarios, deployment_scenarios, job_scenarios,
    replicaset_scenarios::{self, Replicas},
    shadow::{SETTLE, assert_no_divergence, assert_perturbation_reported, reference_cluster, start_shadow},
    ttl_scenarios,
};
use kube::api::PostParams;
use serde_json::json;

#[tokio::test]
async fn disruptive_shadow_mode_agrees_with_upstream_and_reports_a_perturbation() {
    let (cluster, kubeconfig) = reference_cluster().await;
    let args = [
        "--controllers=replicaset-controller,replicationcontroller-controller",
        "--shadow",
        SETTLE,
    ];
    let shadow = start_shadow(&cluster, "shadow", &args, kubeconfig.clone()).await;
    assert_no_divergence(&cluster, &shadow, replicaset_scenarios::scenarios()).await;
    // The ReplicationController controller's status, through its ReplicaSet view and back.
    let rc_sample = ["rc-create-3", "rc-scale-3-10-2", "rc-min-ready", "rc-quota"];
    let rc_scenarios = replicaset_scenarios::replication_controller_scenarios()
        .into_iter()
        .filter(|s| rc_sample.contains(&s.name))
        .collect();
    assert_no_divergence(&cluster, &shadow, rc_scenarios).await;
    assert!(shadow.stop().success());

    // Deliberately wrong: kcm-rs ignores minReadySeconds, so it counts ready pods as available.
    let create = |ns: TestNamespace| async move {
        let rs = replicaset_scenarios::rs_manifest("slow", 2, 120);
        ns.api::<ReplicaSet>()
            .create(&PostParams::default(), &rs)
            .await
            .unwrap();
    };
    assert_perturbation_reported(
        &cluster,
        kubeconfig.clone(),
        "replicaset-controller",
        "ignore-min-ready-seconds",
        ("slow", create),
        &["status.availableReplicas: upstream 0, kcm-rs 2"],
    )
    .await;

    // The same perturbation through the ReplicationController controller.
    let create_rc = |ns: TestNamespace| async move {
        let rc = <ReplicationController as Replicas>::manifest("slow", 2, 120);
        ns.api::<ReplicationController>()
            .create(&PostParams::default(), &rc)
            .await
            .unwrap();
    };
    assert_perturbation_reported(
        &cluster,
        kubeconfig,
        "replicationcontroller-controller",
        "ignore-min-ready-seconds",
        ("slow", create_rc),
        &["status.availableReplicas: upstream 0, kcm-rs 2"],
    )
    .await;
}

/// The same beside upstream's Deployment and Job controllers: kcm-rs's, in shadow mode, disagree
/// with nothing upstream does in the Deployment scenarios, then the Job scenarios (among them the
/// re-creation backoffs, a deleted running pod and suspend/resume, which upstream's timing alone
/// decides); each reports its perturbation.
#[tokio::test]
async fn disruptive_shadow_deployment_and_job_controllers_agree_with_upstream() {
    let (cluster, kubeconfig) = reference_cluster().await;
    let args = [
        "--controllers=deployment-controller,job-controller",
        "--shadow",
        SETTLE,
    ];
    let shadow = start_shadow(&cluster, "shadow-deploy-job", &args, kubeconfig.clone()).await;
    assert_no_divergence(&cluster, &shadow, deployment_scenarios::scenarios()).await;
    assert_no_divergence(&cluster, &shadow, job_scenarios::scenarios()).await;
    assert!(shadow.stop().success());

    // Deliberately wrong: kcm-rs rolls out a paused Deployment.
    let paused = |ns: TestNamespace| async move {
        let d = deployment_scenarios::deployment_manifest("web", 2, "nginx:1", json!({"paused": true}));
        ns.api::<Deployment>()
            .create(&PostParams::default(), &d)
            .await
            .unwrap();
    };
    assert_perturbation_reported(
        &cluster,
        kubeconfig.clone(),
        "deployment-controller",
        "ignore-paused",
        ("web", paused),
        &[
            "replicasets: kcm-rs would create one with 2 replicas",
            "status.conditions: upstream Available=False (MinimumReplicasUnavailable), Progressing=Unknown (DeploymentPaused), kcm-rs ",
        ],
    )
    .await;

    // Deliberately wrong: kcm-rs runs a suspended Job.
    let suspended = |ns: TestNamespace| async move {
        let j = job_scenarios::job_manifest(
            "batch",
            &["sleep", "1000000"],
            json!({"parallelism": 2, "completions": 4, "suspend": true}),
        );
        ns.api::<Job>().create(&PostParams::default(), &j).await.unwrap();
    };
    assert_perturbation_reported(
        &cluster,
        kubeconfig,
        "job-controller",
        "ignore-suspend",
        ("batch", suspended),
        &[
            "pods: kcm-rs would create 2",
            "status.active: upstream 0, kcm-rs 2",
        ],
    )
    .await;
}

/// The same beside upstream's CronJob and TTL-after-finished controllers (and its Job controller,
/// which both read): no divergence in their scenarios; each reports its perturbation.
#[tokio::test]
async fn disruptive_shadow_cronjob_and_ttl_controllers_agree_with_upstream() {
    let (cluster, kubeconfig) = reference_cluster().await;
    let args = [
        "--controllers=cronjob-controller,ttl-after-finished-controller",
        "--shadow",
        SETTLE,
    ];
    let shadow = start_shadow(&cluster, "shadow-cron-ttl", &args, kubeconfig.clone()).await;
    let mut scenarios = cronjob_scenarios::scenarios();
    scenarios.extend(ttl_scenarios::scenarios());
    assert_no_divergence(&cluster, &shadow, scenarios).await;
    assert!(shadow.stop().success());

    // Deliberately wrong: kcm-rs starts a suspended CronJob's Jobs.
    let suspended = |ns: TestNamespace| async move {
        let cj: CronJob = serde_json::from_value(json!({
            "metadata": {"name": "nightly"},
            "spec": {"schedule": "@every 5s", "suspend": true, "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}
        }))
        .unwrap();
        ns.api::<CronJob>()
            .create(&PostParams::default(), &cj)
            .await
            .unwrap();
    };
    assert_perturbation_reported(
        &cluster,
        kubeconfig.clone(),
        "cronjob-controller",
        "ignore-suspend",
        ("nightly", suspended),
        &["jobs: kcm-rs would create nightly-"],
    )
    .await;

    // Deliberately wrong: kcm-rs deletes a finished Job 10 minutes early.
    let finished = |ns: TestNamespace| async move {
        let j = job_scenarios::job_manifest(
            "done",
            &["sh", "-c", "exit 0"],
            json!({"ttlSecondsAfterFinished": 600}),
        );
        ns.api::<Job>().create(&PostParams::default(), &j).await.unwrap();
    };
    assert_perturbation_reported(
        &cluster,
        kubeconfig,
        "ttl-after-finished-controller",
        "ignore-ttl-seconds",
        ("done", finished),
        &["job: kcm-rs would delete it (its TTL after finishing ran out at "],
    )
    .await;
}
