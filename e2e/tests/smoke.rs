//! Smoke tests of the local control plane in reference mode: upstream's controllers, the scheduler and
//! the KWOK stages together behave like a cluster. If these fail, no other e2e result means anything.

use std::collections::BTreeMap;

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    core::v1::Pod,
};
use kcm_rs_e2e::{
    Cluster, DEFAULT_WAIT, Mode, TestNamespace,
    pods::{is_ready, phase},
    wait_for, with_namespace,
};
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

// The stages that simulate upstream's e2e encodings (hack/kwok/stages.yaml, "Simulated pod behaviour" in
// hack/README.md): an image that cannot be pulled, and Job pods whose container command says what they do.

async fn pod_named(ns: &TestNamespace, name: &str) -> Result<Pod, String> {
    ns.api::<Pod>().get(name).await.map_err(|e| e.to_string())
}

fn first_container(pod: &Pod) -> Option<k8s_openapi::api::core::v1::ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first().cloned())
}

fn exit_code(pod: &Pod) -> Option<i32> {
    first_container(pod)
        .and_then(|c| c.state)
        .and_then(|s| s.terminated)
        .map(|t| t.exit_code)
}

/// A Job of one pod (no retries) whose container runs `command` + `args`.
fn command_job(name: &str, restart_policy: &str, command: &[&str], args: &[&str]) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": restart_policy,
                "containers": [{"name": "c", "image": "busybox", "command": command, "args": args}]
            }}
        }
    }))
    .expect("valid Job")
}

async fn job_pods(ns: &TestNamespace, job: &str) -> Vec<Pod> {
    pods_with(ns, &format!("job-name={job}")).await
}

#[tokio::test]
async fn an_image_that_cannot_be_pulled_keeps_the_pod_pending_and_never_ready() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-pull", |ns| async move {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "unpullable"},
            "spec": {"containers": [
                {"name": "web", "image": "webserver:404"},
                {"name": "side", "image": "busybox"}
            ]}
        }))
        .unwrap();
        ns.api::<Pod>()
            .create(&PostParams::default(), &pod)
            .await
            .unwrap();
        let pod = wait_for("the pull to back off", DEFAULT_WAIT, || async {
            let p = pod_named(&ns, "unpullable").await?;
            let reason = first_container(&p)
                .and_then(|c| c.state)
                .and_then(|s| s.waiting)
                .and_then(|w| w.reason);
            if reason.as_deref() == Some("ImagePullBackOff") {
                Ok(p)
            } else {
                Err(format!("phase {:?}, waiting reason {reason:?}", phase(&p)))
            }
        })
        .await;
        assert_eq!(phase(&pod), "Pending");
        assert!(!is_ready(&pod), "{pod:#?}");
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap();
        assert!(
            statuses[1]
                .state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .is_some(),
            "the pullable container runs: {statuses:#?}"
        );
        // It stays that way.
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let pod = pod_named(&ns, "unpullable").await.unwrap();
        assert_eq!(phase(&pod), "Pending");
        assert!(!is_ready(&pod), "{pod:#?}");
    })
    .await;
}

#[tokio::test]
async fn a_job_pod_whose_command_exits_non_zero_fails_with_that_code() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-exit", |ns| async move {
        let job = command_job("exit3", "Never", &["/bin/sh", "-c", "exit 3"], &[]);
        ns.api::<Job>()
            .create(&PostParams::default(), &job)
            .await
            .unwrap();
        let pod = wait_for("the pod to fail", DEFAULT_WAIT, || async {
            let pods = job_pods(&ns, "exit3").await;
            match pods.into_iter().find(|p| phase(p) == "Failed") {
                Some(p) => Ok(p),
                None => Err("no Failed pod yet"),
            }
        })
        .await;
        assert_eq!(exit_code(&pod), Some(3), "{pod:#?}");
    })
    .await;
}

#[tokio::test]
async fn a_fail_once_job_pod_restarts_in_place_then_succeeds() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-failonce", |ns| async move {
        // upstream's e2ejob "failOnce" encoding
        let script = "\n\t\t\tif [[ -r /data/foo ]]\n\t\t\tthen\n\t\t\t\texit 0\n\t\t\telse\n\t\t\t\ttouch /data/foo\n\t\t\t\texit 1\n\t\t\tfi\n\t\t";
        let job = command_job("once", "OnFailure", &["/bin/sh", "-c"], &[script]);
        ns.api::<Job>().create(&PostParams::default(), &job).await.unwrap();
        let pod = wait_for("the pod to succeed", DEFAULT_WAIT, || async {
            let pods = job_pods(&ns, "once").await;
            match pods.into_iter().find(|p| phase(p) == "Succeeded") {
                Some(p) => Ok(p),
                None => Err("no Succeeded pod yet"),
            }
        })
        .await;
        assert_eq!(first_container(&pod).map(|c| c.restart_count), Some(1), "{pod:#?}");
        assert_eq!(exit_code(&pod), Some(0));
        assert_eq!(job_pods(&ns, "once").await.len(), 1, "restarted in place, not replaced");
    })
    .await;
}

#[tokio::test]
async fn indexed_job_pods_of_fail_odd_succeed_even_fail_on_odd_indexes() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-oddeven", |ns| async move {
        let script = "\n\t\t\tif [ $(expr ${JOB_COMPLETION_INDEX} % 2) -ne 0 ]; then\n\t\t\t\texit 1\n\t\t\telse\n\t\t\t\texit 0\n\t\t\tfi\n\t\t\t";
        let mut job = command_job("oddeven", "Never", &["sh", "-c"], &[script]);
        let spec = job.spec.as_mut().unwrap();
        spec.completion_mode = Some("Indexed".into());
        spec.completions = Some(2);
        spec.parallelism = Some(2);
        spec.backoff_limit = None;
        spec.backoff_limit_per_index = Some(0);
        ns.api::<Job>().create(&PostParams::default(), &job).await.unwrap();
        let pods = wait_for("both pods to finish", DEFAULT_WAIT, || async {
            let pods = job_pods(&ns, "oddeven").await;
            let done = pods
                .iter()
                .filter(|p| matches!(phase(p), "Succeeded" | "Failed"))
                .count();
            if done == 2 { Ok(pods) } else { Err(format!("{done} of {} finished", pods.len())) }
        })
        .await;
        for pod in &pods {
            let index = pod
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
                .cloned();
            let want = if index.as_deref() == Some("1") { ("Failed", 1) } else { ("Succeeded", 0) };
            assert_eq!((phase(pod), exit_code(pod)), (want.0, Some(want.1)), "index {index:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_job_pod_that_does_not_terminate_keeps_running() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-forever", |ns| async move {
        // upstream's e2ejob "notTerminate": the pause image; "neverTerminate": sleep 1000000
        let mut pause = command_job("pause", "Never", &[], &[]);
        pause
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .image = Some("registry.k8s.io/pause:3.10.1".into());
        let sleep = command_job("sleep", "Never", &["sleep", "1000000"], &[]);
        for job in [pause, sleep] {
            ns.api::<Job>()
                .create(&PostParams::default(), &job)
                .await
                .unwrap();
        }
        for name in ["pause", "sleep"] {
            wait_for("the pod to run and be Ready", DEFAULT_WAIT, || async {
                let pods = job_pods(&ns, name).await;
                if pods.len() == 1 && is_ready(&pods[0]) {
                    Ok(())
                } else {
                    Err(format!("{} pods", pods.len()))
                }
            })
            .await;
        }
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        for name in ["pause", "sleep"] {
            let pods = job_pods(&ns, name).await;
            assert_eq!(pods.len(), 1);
            assert_eq!(phase(&pods[0]), "Running", "{name}: {:#?}", pods[0]);
            assert!(is_ready(&pods[0]));
        }
    })
    .await;
}

#[tokio::test]
async fn a_pod_trapping_sigterm_terminates_when_its_handler_exits() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-trap", |ns| async move {
        // upstream's pod replacement policy spec, with a 2 s handler; a finalizer of the test's own keeps
        // the terminal pod around to be inspected.
        let script =
            "_term(){\n\tsleep 2\n\texit 143\n}\ntrap _term SIGTERM\nwhile true; do\n\tsleep 1\ndone";
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "trap", "finalizers": ["kcm-rs.test/hold"]},
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["/bin/sh", "-c", script]}]}
        }))
        .unwrap();
        let api = ns.api::<Pod>();
        api.create(&PostParams::default(), &pod).await.unwrap();
        wait_for("the pod to run", DEFAULT_WAIT, || async {
            let p = pod_named(&ns, "trap").await?;
            if is_ready(&p) {
                Ok(())
            } else {
                Err(format!("{:?}", phase(&p)))
            }
        })
        .await;
        api.delete("trap", &DeleteParams::default()).await.unwrap();
        let deleted = tokio::time::Instant::now();
        tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
        let p = pod_named(&ns, "trap").await.unwrap();
        assert_eq!(phase(&p), "Running", "still terminating: {p:#?}");
        let p = wait_for("the handler to exit", DEFAULT_WAIT, || async {
            let p = pod_named(&ns, "trap").await?;
            if phase(&p) == "Failed" {
                Ok(p)
            } else {
                Err(format!("{:?}", phase(&p)))
            }
        })
        .await;
        assert!(
            deleted.elapsed() >= std::time::Duration::from_millis(1800),
            "{:?}",
            deleted.elapsed()
        );
        assert_eq!(exit_code(&p), Some(143), "{p:#?}");
        api.patch(
            "trap",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    })
    .await;
}

#[tokio::test]
async fn randomly_failing_job_pods_exit_zero_or_one_at_random() {
    let cluster = Cluster::connect_in(Mode::Reference).await;
    with_namespace(cluster, "smoke-random", |ns| async move {
        // Pods owned by a Job that upstream's controller leaves alone (spec.managedBy), so that neither
        // its backoff nor its replacements get in the way: each pod tosses its own coin once.
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "coin"},
            "spec": {
                "managedBy": "kcm-rs.test/nobody",
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}]
                }}
            }
        }))
        .unwrap();
        let job = ns
            .api::<Job>()
            .create(&PostParams::default(), &job)
            .await
            .unwrap();
        let uid = job.metadata.uid.clone().unwrap();
        const PODS: usize = 12;
        for i in 0..PODS {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {
                    "name": format!("coin-{i}"),
                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "coin", "uid": uid}]
                },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "command": ["/bin/sh", "-c", "exit $(( $RANDOM / 16384 ))"]}]
                }
            }))
            .unwrap();
            ns.api::<Pod>()
                .create(&PostParams::default(), &pod)
                .await
                .unwrap();
        }
        let pods = wait_for("every pod to finish", DEFAULT_WAIT, || async {
            let pods = ns
                .api::<Pod>()
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items;
            let done = pods
                .iter()
                .filter(|p| matches!(phase(p), "Succeeded" | "Failed"))
                .count();
            if done == PODS {
                Ok(pods)
            } else {
                Err(format!("{done} of {PODS} finished"))
            }
        })
        .await;
        let outcomes: Vec<_> = pods.iter().map(|p| (phase(p), exit_code(p))).collect();
        for outcome in &outcomes {
            assert!(
                matches!(outcome, ("Succeeded", Some(0)) | ("Failed", Some(1))),
                "{outcome:?}"
            );
        }
        // Both halves of the coin (all 12 alike: 1 chance in 2048).
        let failed = outcomes.iter().filter(|o| o.1 == Some(1)).count();
        assert!(0 < failed && failed < PODS, "{outcomes:?}");
        // The test's own Job never got a status from upstream's controller.
        let job = ns.api::<Job>().get("coin").await.unwrap();
        assert_eq!(job.status.and_then(|s| s.start_time), None);
    })
    .await;
}
