//! Smoke tests of the local control plane in reference mode: upstream's controllers, the scheduler and
//! the KWOK stages together behave like a cluster. If these fail, no other e2e result means anything.

use std::collections::BTreeMap;

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    core::v1::Pod,
};
use kcm_rs_e2e::{Cluster, DEFAULT_WAIT, Mode, TestNamespace, wait_for, with_namespace};
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::json;

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}
            }
        }
    }))
    .expect("valid Deployment")
}

async fn pods_with(ns: &TestNamespace, selector: &str) -> Vec<Pod> {
    ns.api::<Pod>()
        .list(&ListParams::default().labels(selector))
        .await
        .expect("list pods")
        .items
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[tokio::test]
async fn deployment_gets_three_ready_pods() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-deploy", |ns| async move {
        ns.api::<Deployment>()
            .create(&PostParams::default(), &deployment("web", 3))
            .await
            .unwrap();
        wait_for(
            "Deployment web to report 3 ready replicas",
            DEFAULT_WAIT,
            || async {
                let d = ns
                    .api::<Deployment>()
                    .get("web")
                    .await
                    .map_err(|e| e.to_string())?;
                let status = d.status.unwrap_or_default();
                if status.ready_replicas == Some(3) {
                    Ok(())
                } else {
                    Err(format!("{status:?}"))
                }
            },
        )
        .await;
        let pods = pods_with(&ns, "app=web").await;
        assert_eq!(pods.len(), 3, "pods: {pods:#?}");
        assert!(pods.iter().all(is_ready), "every pod is Ready: {pods:#?}");
        assert!(
            pods.iter()
                .all(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        );
    })
    .await;
}

#[tokio::test]
async fn job_with_two_completions_completes() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-job", |ns| async move {
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "pi"},
            "spec": {
                "completions": 2,
                "parallelism": 1,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "pi", "image": "perl:5.34"}]
                }}
            }
        }))
        .unwrap();
        ns.api::<Job>()
            .create(&PostParams::default(), &job)
            .await
            .unwrap();
        let status = wait_for("Job pi to complete", DEFAULT_WAIT, || async {
            let j = ns.api::<Job>().get("pi").await.map_err(|e| e.to_string())?;
            let status = j.status.unwrap_or_default();
            let complete = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Complete" && c.status == "True");
            if complete {
                Ok(status)
            } else {
                Err(format!("{status:?}"))
            }
        })
        .await;
        assert_eq!(status.succeeded, Some(2));
        assert_eq!(status.failed.unwrap_or(0), 0);
    })
    .await;
}

#[tokio::test]
async fn pod_labelled_to_fail_exits_with_the_requested_code() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-fail", |ns| async move {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": "doomed",
                "labels": {"kcm-rs.test/outcome": "fail"},
                "annotations": {"kcm-rs.test/exit-code": "42", "kcm-rs.test/after": "500ms"}
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]
            }
        }))
        .unwrap();
        ns.api::<Pod>()
            .create(&PostParams::default(), &pod)
            .await
            .unwrap();
        let pod = wait_for("pod doomed to fail", DEFAULT_WAIT, || async {
            let p = ns.api::<Pod>().get("doomed").await.map_err(|e| e.to_string())?;
            let phase = p.status.as_ref().and_then(|s| s.phase.clone());
            if phase.as_deref() == Some("Failed") {
                Ok(p)
            } else {
                Err(format!("phase {phase:?}"))
            }
        })
        .await;
        let statuses = pod.status.and_then(|s| s.container_statuses).unwrap_or_default();
        let code = statuses
            .first()
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code);
        assert_eq!(code, Some(42), "container statuses: {statuses:#?}");
    })
    .await;
}

#[tokio::test]
async fn deleting_a_deployment_collects_its_replicaset_and_pods() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-gc", |ns| async move {
        ns.api::<Deployment>()
            .create(&PostParams::default(), &deployment("gone", 2))
            .await
            .unwrap();
        wait_for("2 pods of Deployment gone", DEFAULT_WAIT, || async {
            let n = pods_with(&ns, "app=gone").await.len();
            if n == 2 { Ok(()) } else { Err(n) }
        })
        .await;
        let owners: BTreeMap<String, usize> = ns
            .api::<ReplicaSet>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .fold(BTreeMap::new(), |mut m, rs| {
                let owner = rs
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|o| o.name.clone())
                    .collect();
                *m.entry(owner).or_default() += 1;
                m
            });
        assert_eq!(
            owners,
            BTreeMap::from([("gone".to_owned(), 1)]),
            "one ReplicaSet owned by the Deployment"
        );

        ns.api::<Deployment>()
            .delete("gone", &DeleteParams::background())
            .await
            .unwrap();
        wait_for(
            "the garbage collector to remove the ReplicaSet and pods",
            DEFAULT_WAIT,
            || async {
                let rs = ns
                    .api::<ReplicaSet>()
                    .list(&ListParams::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let pods = pods_with(&ns, "app=gone").await;
                if rs.items.is_empty() && pods.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "{} ReplicaSets, {} pods left",
                        rs.items.len(),
                        pods.len()
                    ))
                }
            },
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn a_deleted_pod_without_labels_goes_away() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-bare", |ns| async move {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "bare"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}
        }))
        .unwrap();
        ns.api::<Pod>()
            .create(&PostParams::default(), &pod)
            .await
            .unwrap();
        wait_for("pod bare to run", DEFAULT_WAIT, || async {
            let p = ns.api::<Pod>().get("bare").await.map_err(|e| e.to_string())?;
            let phase = p.status.and_then(|s| s.phase);
            if phase.as_deref() == Some("Running") {
                Ok(())
            } else {
                Err(format!("{phase:?}"))
            }
        })
        .await;
        ns.api::<Pod>()
            .delete("bare", &DeleteParams::default())
            .await
            .unwrap();
        wait_for(
            "the simulated kubelet to finish deleting it",
            DEFAULT_WAIT,
            || async {
                match ns.api::<Pod>().get_opt("bare").await.map_err(|e| e.to_string())? {
                    None => Ok(()),
                    Some(p) => Err(format!("{:?}", p.status.and_then(|s| s.phase))),
                }
            },
        )
        .await;
    })
    .await;
}
