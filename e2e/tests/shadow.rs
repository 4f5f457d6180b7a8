//! Shadow mode beside upstream's controllers (reference mode), under the shipped read-only
//! ClusterRoles: no divergence on the ReplicaSet (and a sample of them on ReplicationControllers),
//! Deployment, Job, CronJob, TTL-after-finished, garbage collector and pod garbage collector
//! scenarios; for each controller a deliberate perturbation (or a setting upstream does not share)
//! is reported for the right object and field, counted and logged.

use std::{path::PathBuf, time::Duration};

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    core::v1::{ConfigMap, ReplicationController},
};
use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard, TestNamespace, cronjob_scenarios, deployment_scenarios,
    differential::Scenario,
    gc_scenarios, job_scenarios, podgc_scenarios,
    replicaset_scenarios::{self, Replicas},
    ttl_scenarios, wait_for, with_namespace,
};
use kube::api::PostParams;
use serde_json::json;

/// Settle time given to kcm-rs; the checks wait a multiple of it.
const SETTLE: &str = "--shadow-settle-time=3s";
/// How long a scenario's objects stay after it ends before the divergences are read.
const AFTER_SCENARIO: Duration = Duration::from_secs(8);

/// The cluster in reference mode, the shipped RBAC applied, and the shadow ServiceAccount's kubeconfig.
async fn reference_cluster() -> (Cluster, PathBuf) {
    let cluster = Cluster::connect().await;
    cluster.hack(&["mode", "reference"]);
    cluster.apply_shipped_rbac();
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs-shadow");
    (cluster, kubeconfig)
}

async fn start_shadow(cluster: &Cluster, name: &str, args: &[&str], kubeconfig: PathBuf) -> KcmRs {
    let shadow = KcmRs::spawn(cluster, name, args, Some(kubeconfig));
    shadow.wait_ready().await;
    shadow
}

/// Runs the scenarios (the heavy ones left out) concurrently under upstream's controllers; after each,
/// nothing may stand against its namespace.
async fn assert_no_divergence(cluster: &Cluster, shadow: &KcmRs, scenarios: Vec<Scenario>) {
    futures::future::join_all(scenarios.iter().filter(|s| !s.solo).map(|s| {
        let cluster = cluster.clone();
        async move {
            with_namespace(cluster, &format!("shadow-{}", s.name), |ns| async move {
                (s.run)(ns.clone()).await;
                tokio::time::sleep(AFTER_SCENARIO).await;
                let (code, body) = shadow.http_get("/debug/shadow");
                assert_eq!(code, 200, "{body}");
                let prefix = format!("\"{}/", ns.name);
                assert!(
                    !body.contains(&prefix),
                    "[{}] shadow mode disagreed with upstream: {body}",
                    s.name
                );
            })
            .await;
        }
    }))
    .await;
    let (_, metrics) = shadow.http_get("/metrics");
    assert!(
        !metrics.contains("kcm_rs_shadow_divergences_total{"),
        "no divergence counted:\n{metrics}"
    );
}

/// A kcm-rs running `controller` made wrong on purpose (`--shadow-perturb=<perturbation>`) reports
/// each of `lines` for the object `name` that `create` makes ([`assert_reported`]), under the
/// controller's events component (`controller` but for the ReplicationController controller's
/// `replication-controller`).
async fn assert_perturbation_reported<F, Fut>(
    cluster: &Cluster,
    kubeconfig: PathBuf,
    controller: &str,
    perturbation: &str,
    object: (&str, F),
    lines: &[&str],
) where
    F: FnOnce(TestNamespace) -> Fut,
    Fut: Future<Output = ()>,
{
    let component = match controller {
        "replicationcontroller-controller" => "replication-controller",
        c => c,
    };
    let report = Report {
        label: &format!("shadow-{perturbation}"),
        args: &[
            &format!("--controllers={controller}"),
            "--shadow",
            SETTLE,
            &format!("--shadow-perturb={perturbation}"),
        ],
        component,
        lines,
        within: Duration::from_secs(60),
    };
    assert_reported(cluster, kubeconfig, report, object).await;
}

/// A shadow instance, and what it must report.
struct Report<'a> {
    /// Names its log and its namespace.
    label: &'a str,
    args: &'a [&'a str],
    /// The events component the divergence is counted under.
    component: &'a str,
    /// Each a part of what `/debug/shadow` says of the object.
    lines: &'a [&'a str],
    within: Duration,
}

/// A kcm-rs started in shadow mode with `report.args` reports each of `report.lines` for the object
/// `name` that `create` makes, within `report.within`; counts it under `report.component` and logs
/// the object's key.
async fn assert_reported<F, Fut>(
    cluster: &Cluster,
    kubeconfig: PathBuf,
    report: Report<'_>,
    (name, create): (&str, F),
) where
    F: FnOnce(TestNamespace) -> Fut,
    Fut: Future<Output = ()>,
{
    let shadow = start_shadow(cluster, report.label, report.args, kubeconfig).await;
    let shadow = &shadow;
    let report = &report;
    with_namespace(cluster.clone(), report.label, |ns| async move {
        create(ns.clone()).await;
        let key = format!("{}/{name}", ns.name);
        let body = wait_for("the divergence to be reported", report.within, || async {
            let (_, body) = shadow.http_get("/debug/shadow");
            if body.contains(&key) { Ok(body) } else { Err(body) }
        })
        .await;
        for line in report.lines {
            assert!(body.contains(line), "field-level diff {line:?}: {body}");
        }
        let (_, metrics) = shadow.http_get("/metrics");
        let series = format!(
            "kcm_rs_shadow_divergences_total{{controller=\"{}\"}} ",
            report.component
        );
        let counted = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|n| n.trim().parse::<f64>().ok());
        assert!(
            counted.is_some_and(|n| n >= 1.0),
            "the divergence is counted:\n{metrics}"
        );
        assert!(shadow.log_text().contains(&key), "and logged with the object key");
    })
    .await;
}

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

/// The same beside upstream's garbage collector and pod garbage collector, under the read-only
/// roles of `deploy/garbage-collector-controller.yaml` and `deploy/pod-garbage-collector-controller.yaml`:
/// no divergence in either's scenarios. Then each reports what upstream leaves undone: with
/// upstream's collector switched off (`--enable-garbage-collector=false`), a ConfigMap whose owner
/// never existed; with kcm-rs's terminated-pod threshold at 1 against upstream's 12,500, the first
/// of two ended pods (the older, or on a tie of creation seconds the first by name, as upstream
/// orders them).
#[tokio::test]
async fn disruptive_shadow_garbage_collectors_agree_with_upstream() {
    let (cluster, kubeconfig) = reference_cluster().await;
    cluster.apply_deploy_file("garbage-collector-controller.yaml");
    cluster.apply_deploy_file("pod-garbage-collector-controller.yaml");
    gc_scenarios::install_widgets(&cluster).await;
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
        within: Duration::from_secs(90),
    };
    assert_reported(&cluster, kubeconfig, report, ("a", ended)).await;
}
