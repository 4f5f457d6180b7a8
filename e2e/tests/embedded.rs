//! kcm-rs as a library: `kcm_rs::ControllerManager` started inside this test process on the test's
//! own client, with neither kube-controller-manager nor kube-scheduler running (`Mode::Bare`: etcd,
//! kube-apiserver and KWOK, as envtest plus KWOK). A Deployment must roll out and a Job complete;
//! their pods name a KWOK node, since no scheduler binds them. Then two embedded managers share one
//! Lease: only the holder acts, and the other takes over once the holder shuts down. The first
//! manager runs with a test's Job waits (`job_delays`): a failing Job's pod is replaced after them.
//! Prints the time from start to the rolled-out Deployment.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::Deployment, batch::v1::Job, coordination::v1::Lease};
use kcm_rs::{ControllerManager, JobDelays};
use kcm_rs_e2e::{
    Cluster, Mode, ModeGuard, TestNamespace,
    deployment_scenarios::deployment_manifest,
    job_scenarios::{has_condition, wait_job_for},
    pods::replacement_gaps,
    wait_for, with_namespace,
};
use kube::{Api, api::PostParams};
use serde_json::json;

/// A node hack/cluster.sh registers (KWOK keeps it Ready).
const NODE: &str = "kwok-node-0";
const WAIT: Duration = Duration::from_secs(60);

async fn create_deployment(ns: &TestNamespace, name: &str, replicas: i32) {
    // No scheduler runs: the pods name their node.
    let template = json!({"template": {"spec": {"nodeName": NODE}}});
    ns.api::<Deployment>()
        .create(
            &PostParams::default(),
            &deployment_manifest(name, replicas, "registry.k8s.io/pause:3.10", template),
        )
        .await
        .expect("creating the Deployment");
}

/// A Job whose pods fail, backoffLimit 1: under the manager's `job_delays` its one replacement
/// comes after the test's 1 s, where upstream's controller waits 10 s.
async fn failing_job_waits(ns: &TestNamespace, jobs: &Api<Job>) {
    let job: Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "fails"},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "metadata": {"labels": {"app": "fails"}},
                "spec": {
                    "nodeName": NODE,
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "exit 1"]}]
                }
            }
        }
    }))
    .expect("a Job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("creating the Job");
    let failed = |j: &Job| has_condition(j, "Failed", "BackoffLimitExceeded");
    wait_job_for(ns, "fails", "failed", WAIT, failed).await;
    let gaps = replacement_gaps(ns, "app=fails").await;
    println!("embedded, with job_delays: a failed pod replaced after {gaps:?} s");
    assert!(
        gaps.len() == 1 && (1..10).contains(&gaps[0]),
        "replaced after the manager's 1 s, not upstream's 10 s: {gaps:?}"
    );
}

#[tokio::test]
async fn disruptive_embedded_controllers_run_without_kube_controller_manager() {
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "embedded", |ns| async move {
        // After the namespace exists: its `default` ServiceAccount comes from KCM.
        let _bare = ModeGuard::enter(&ns.cluster, Mode::Bare);
        let t0 = tokio::time::Instant::now();
        // A test's shorter Job waits, as upstream's integration tests set them (checked below).
        let delays = JobDelays::new(
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_millis(100),
        )
        .expect("the cap is above the first step");
        let running = ControllerManager::new(ns.cluster.client.clone())
            .namespace(&ns.name)
            .job_delays(delays)
            .start()
            .await
            .expect("starting the embedded controllers");
        assert_eq!(
            running.controllers(),
            [
                "cronjob-controller",
                "deployment-controller",
                "job-controller",
                "replicaset-controller",
                "replicationcontroller-controller",
                "ttl-after-finished-controller"
            ]
        );
        tokio::time::timeout(WAIT, running.wait_synced())
            .await
            .expect("caches synced");
        println!("embedded start to synced: {} ms", t0.elapsed().as_millis());

        create_deployment(&ns, "web", 2).await;
        ns.deployment_rolled_out("web", 2, WAIT).await;
        println!(
            "embedded start to a rolled-out Deployment: {} ms",
            t0.elapsed().as_millis()
        );

        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "work"},
            "spec": {
                "completions": 2,
                "template": {"spec": {
                    "nodeName": NODE,
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]
                }}
            }
        }))
        .expect("a Job");
        let jobs = ns.api::<Job>();
        jobs.create(&PostParams::default(), &job)
            .await
            .expect("creating the Job");
        wait_for("the Job to complete", WAIT, || {
            let jobs = jobs.clone();
            async move {
                let j = jobs.get("work").await.map_err(|e| e.to_string())?;
                let conditions = j.status.and_then(|s| s.conditions).unwrap_or_default();
                let complete = conditions
                    .iter()
                    .any(|c| c.type_ == "Complete" && c.status == "True");
                if complete {
                    Ok(())
                } else {
                    Err(format!("{conditions:?}"))
                }
            }
        })
        .await;
        println!(
            "embedded start to a completed Job: {} ms",
            t0.elapsed().as_millis()
        );
        failing_job_waits(&ns, &jobs).await;
        running.shutdown().await;

        // Two managers, one Lease: the second waits, then takes over when the first shuts down.
        let lease = format!("embedded-{}", ns.name);
        let manager = |id: &str| {
            ControllerManager::new(ns.cluster.client.clone())
                .namespace(&ns.name)
                .controllers(["deployment-controller", "replicaset-controller"])
                .leader_election(&ns.name, &lease)
                .identity(id)
        };
        let first = manager("first").start().await.expect("the first manager");
        let second = tokio::spawn(manager("second").start());
        create_deployment(&ns, "led", 1).await;
        ns.deployment_rolled_out("led", 1, WAIT).await;
        let holder = |leases: Api<Lease>, lease: String| async move {
            leases
                .get(&lease)
                .await
                .ok()
                .and_then(|l| l.spec?.holder_identity)
        };
        let leases: Api<Lease> = ns.api();
        assert_eq!(
            holder(leases.clone(), lease.clone()).await.as_deref(),
            Some("first")
        );
        assert!(
            !second.is_finished(),
            "the second manager started while the first held the Lease"
        );
        first.shutdown().await;
        let second = tokio::time::timeout(WAIT, second)
            .await
            .expect("the second manager to win the released Lease")
            .expect("the task")
            .expect("the second manager");
        assert_eq!(
            holder(leases.clone(), lease.clone()).await.as_deref(),
            Some("second")
        );
        ns.api::<Deployment>()
            .patch(
                "led",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 2}})),
            )
            .await
            .expect("scaling the Deployment");
        ns.deployment_rolled_out("led", 2, WAIT).await;
        second.shutdown().await;
    })
    .await;
}
