//! The Job scenarios the differential suite runs (the behaviours listed when the Job controller was
//! specified: completion modes, failure policies, suspension, deadlines, deletion): each returns the
//! normalized outcome it observed. What a pod does comes from its container command, read by the
//! KWOK stages as upstream's e2e Jobs encode it (hack/README.md, "Simulated pod behaviour").

mod backoff_beside_ready;
pub mod crash;
mod helpers;

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::api::{DeleteParams, Patch, PatchParams, PropagationPolicy};
use serde_json::json;

use helpers::*;
/// The container commands KWOK's stages read (hack/README.md, "Simulated pod behaviour").
pub(crate) use helpers::{FAIL_ODD_INDEXES, FOREVER, SUCCEED};
pub use helpers::{has_condition, job_manifest, wait_job_for};

use crate::{
    TestNamespace,
    differential::{Outcome, Scenario},
    wait_for,
};

pub(super) use crate::differential::ScenarioFuture as Run;

/// Liveness bound for the backoff scenarios (re-creation delays of 10 s and 20 s) and the big Job.
const LONG_WAIT: Duration = Duration::from_secs(240);

fn completions_and_parallelism(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "job", SUCCEED, json!({"completions": 5, "parallelism": 2})).await;
        wait_finished(&ns, "job", "Complete", "CompletionsReached").await;
        wait_pods_settled(&ns).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// completions unset: done once a pod succeeded and none is left running.
fn work_queue(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "job", SUCCEED, json!({"parallelism": 3})).await;
        wait_finished(&ns, "job", "Complete", "CompletionsReached").await;
        wait_pods_settled(&ns).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

fn indexed(ns: TestNamespace) -> Run {
    async move {
        let spec = json!({"completions": 5, "parallelism": 5, "completionMode": "Indexed"});
        create(&ns, "job", SUCCEED, spec).await;
        wait_finished(&ns, "job", "Complete", "CompletionsReached").await;
        wait_pods_settled(&ns).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// Pods exiting 1, backoffLimit 2: three pods (10 s, then 20 s apart), then BackoffLimitExceeded.
fn backoff_limit(ns: TestNamespace) -> Run {
    async move {
        let cmd = fail_with(1);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        create(&ns, "job", &cmd, json!({"backoffLimit": 2})).await;
        wait_job_for(&ns, "job", "Failed (BackoffLimitExceeded)", LONG_WAIT, |j| {
            has_condition(j, "Failed", "BackoffLimitExceeded")
        })
        .await;
        wait_pods_settled(&ns).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// restartPolicy OnFailure: restarts in place count against backoffLimit.
fn on_failure_restarts(ns: TestNamespace) -> Run {
    async move {
        let cmd = fail_with(1);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let spec = json!({"backoffLimit": 2, "template": {"spec": {"restartPolicy": "OnFailure"}}});
        create(&ns, "job", &cmd, spec).await;
        wait_finished(&ns, "job", "Failed", "BackoffLimitExceeded").await;
        wait_pods(&ns, "the restarting pod gone or terminal", |p| {
            p.iter().all(|p| {
                p.metadata.deletion_timestamp.is_none() && matches!(phase(p), "Succeeded" | "Failed")
            }) && p.iter().all(|p| !tracked(p))
        })
        .await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// podFailurePolicy FailJob on exit code 42: the first failure fails the Job.
fn fail_job_on_exit_code(ns: TestNamespace) -> Run {
    async move {
        let cmd = fail_with(42);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let spec = json!({"backoffLimit": 6, "podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}
        ]}});
        create(&ns, "job", &cmd, spec).await;
        wait_finished(&ns, "job", "Failed", "PodFailurePolicy").await;
        wait_pods_settled(&ns).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// podFailurePolicy Ignore on DisruptionTarget: a disrupted pod is replaced and not counted.
fn ignore_disruption(ns: TestNamespace) -> Run {
    async move {
        let spec = json!({"backoffLimit": 0, "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
        ]}});
        create(&ns, "job", FOREVER, spec).await;
        let first = wait_pods(&ns, "one running pod", |p| {
            p.len() == 1 && phase(&p[0]) == "Running"
        })
        .await;
        let victim = first[0].metadata.name.clone().unwrap();
        let disrupt = json!({
            "metadata": {
                "labels": {"kcm-rs.test/outcome": "fail", "kcm-rs.test/condition": "DisruptionTarget"},
                "annotations": {"kcm-rs.test/terminal": "true", "kcm-rs.test/exit-code": "137",
                                "kcm-rs.test/after": "200ms"}
            }
        });
        ns.api::<Pod>()
            .patch(&victim, &PatchParams::default(), &Patch::Merge(&disrupt))
            .await
            .unwrap();
        wait_pods(
            &ns,
            "the disrupted pod failed, untracked, and a replacement running",
            |p| {
                p.len() == 2
                    && p.iter().any(|p| phase(p) == "Failed" && !tracked(p))
                    && p.iter().any(|p| phase(p) == "Running")
            },
        )
        .await;
        wait_job(&ns, "job", "one active, one ready", |j| {
            let s = j.status.clone().unwrap_or_default();
            s.active == Some(1) && s.ready == Some(1)
        })
        .await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// Indexed, odd indexes fail: FailIndex with backoffLimitPerIndex 1 and maxFailedIndexes 2 → the Job
/// fails with FailedIndexes once every index is done, "0,2" completed and "1,3" failed.
fn fail_index(ns: TestNamespace) -> Run {
    async move {
        let spec = json!({
            "completions": 4, "parallelism": 4, "completionMode": "Indexed",
            "backoffLimitPerIndex": 1, "maxFailedIndexes": 2,
            "podFailurePolicy": {"rules": [
                {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}
            ]}
        });
        create(&ns, "job", FAIL_ODD_INDEXES, spec).await;
        wait_finished(&ns, "job", "Failed", "FailedIndexes").await;
        wait_pods_settled(&ns).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// successPolicy on indexes "0,2" while index 1 keeps failing and restarting: SuccessCriteriaMet, the
/// remaining pod terminated, then Complete with the same reason.
fn success_policy(ns: TestNamespace) -> Run {
    async move {
        let spec = json!({
            "completions": 3, "parallelism": 3, "completionMode": "Indexed", "backoffLimit": 1000,
            "successPolicy": {"rules": [{"succeededIndexes": "0,2"}]},
            "template": {"spec": {"restartPolicy": "OnFailure"}}
        });
        create(&ns, "job", FAIL_ODD_INDEXES, spec).await;
        wait_finished(&ns, "job", "Complete", "SuccessPolicy").await;
        wait_pods(&ns, "no pod deleting or tracked", |p| {
            p.iter()
                .all(|p| p.metadata.deletion_timestamp.is_none() && !tracked(p))
        })
        .await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// Created suspended (no pod), resumed, suspended again mid-run (pods deleted).
fn suspend_resume(ns: TestNamespace) -> Run {
    async move {
        create(
            &ns,
            "job",
            FOREVER,
            json!({"suspend": true, "completions": 2, "parallelism": 2}),
        )
        .await;
        wait_job(&ns, "job", "Suspended", |j| {
            has_condition(j, "Suspended", "JobSuspended")
        })
        .await;
        let mut o = Outcome::new();
        for (k, v) in outcome(&ns, "job").await {
            o.insert(format!("created suspended: {k}"), v);
        }
        patch(&ns, "job", json!({"spec": {"suspend": false}})).await;
        wait_pods(&ns, "two running pods", |p| {
            p.len() == 2 && p.iter().all(|p| phase(p) == "Running")
        })
        .await;
        wait_job(&ns, "job", "resumed", |j| {
            j.status.as_ref().and_then(|s| s.ready) == Some(2)
        })
        .await;
        for (k, v) in outcome(&ns, "job").await {
            o.insert(format!("resumed: {k}"), v);
        }
        patch(&ns, "job", json!({"spec": {"suspend": true}})).await;
        wait_job(&ns, "job", "suspended again", |j| {
            has_condition(j, "Suspended", "JobSuspended")
                && j.status.as_ref().and_then(|s| s.active).unwrap_or(0) == 0
        })
        .await;
        // Until the deleted pods are gone, not only untracked: a snapshot between the finalizer's
        // removal and the pod's deletion differs by timing alone (seen once, sharded).
        wait_pods_settled(&ns).await;
        wait_job(&ns, "job", "no terminating pod", |j| {
            j.status.as_ref().and_then(|s| s.terminating).unwrap_or(0) == 0
        })
        .await;
        o.extend(outcome(&ns, "job").await);
        o
    }
    .boxed()
}

fn active_deadline(ns: TestNamespace) -> Run {
    async move {
        create(
            &ns,
            "job",
            FOREVER,
            json!({"activeDeadlineSeconds": 5, "parallelism": 2, "completions": 2}),
        )
        .await;
        wait_finished(&ns, "job", "Failed", "DeadlineExceeded").await;
        wait_pods_settled(&ns).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// podReplacementPolicy Failed: a deleted pod that takes 5 s to terminate is replaced only once it
/// has failed.
fn replacement_after_failure(ns: TestNamespace) -> Run {
    async move {
        create(
            &ns,
            "job",
            TRAP_SIGTERM,
            json!({"podReplacementPolicy": "Failed"}),
        )
        .await;
        let first = wait_pods(&ns, "one running pod", |p| {
            p.len() == 1 && phase(&p[0]) == "Running"
        })
        .await;
        let victim = first[0].metadata.name.clone().unwrap();
        ns.api::<Pod>()
            .delete(&victim, &DeleteParams::default())
            .await
            .unwrap();
        wait_job(&ns, "job", "one terminating, none active", |j| {
            let s = j.status.clone().unwrap_or_default();
            s.terminating == Some(1) && s.active.unwrap_or(0) == 0
        })
        .await;
        let mut o = Outcome::new();
        o.insert(
            "while the deleted pod terminates: pods".into(),
            pods(&ns).await.len().to_string(),
        );
        wait_pods(&ns, "the replacement running, the deleted pod gone", |p| {
            p.len() == 1 && phase(&p[0]) == "Running" && p[0].metadata.name.as_deref() != Some(&victim)
        })
        .await;
        wait_job(&ns, "job", "one active, one failed", |j| {
            let s = j.status.clone().unwrap_or_default();
            s.active == Some(1) && s.failed == Some(1) && s.ready == Some(1)
        })
        .await;
        o.extend(outcome(&ns, "job").await);
        o
    }
    .boxed()
}

/// spec.managedBy another controller: neither pods nor status.
fn managed_by_another(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "job", SUCCEED, json!({"managedBy": "example.com/other"})).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// A running pod deleted: replaced, counted as failed, its finalizer removed.
fn delete_running_pod(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "job", FOREVER, json!({})).await;
        let first = wait_pods(&ns, "one running pod", |p| {
            p.len() == 1 && phase(&p[0]) == "Running"
        })
        .await;
        let victim = first[0].metadata.name.clone().unwrap();
        ns.api::<Pod>()
            .delete(&victim, &DeleteParams::default())
            .await
            .unwrap();
        wait_pods(&ns, "the replacement running, the deleted pod gone", |p| {
            p.len() == 1 && phase(&p[0]) == "Running" && p[0].metadata.name.as_deref() != Some(&victim)
        })
        .await;
        wait_job(&ns, "job", "one active and ready, one failed", |j| {
            let s = j.status.clone().unwrap_or_default();
            s.active == Some(1) && s.failed == Some(1) && s.ready == Some(1)
        })
        .await;
        outcome(&ns, "job").await
    }
    .boxed()
}

/// The Job deleted mid-run with `policy`: no pod may keep the tracking finalizer.
async fn delete_mid_run(ns: TestNamespace, policy: PropagationPolicy) -> Outcome {
    create(&ns, "job", FOREVER, json!({"parallelism": 3, "completions": 3})).await;
    wait_pods(&ns, "three running pods", |p| {
        p.len() == 3 && p.iter().all(|p| phase(p) == "Running")
    })
    .await;
    let params = DeleteParams {
        propagation_policy: Some(policy.clone()),
        ..DeleteParams::default()
    };
    ns.api::<Job>().delete("job", &params).await.unwrap();
    wait_for("the Job gone", crate::DEFAULT_WAIT, || async {
        match ns.api::<Job>().get_opt("job").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let orphan = matches!(policy, PropagationPolicy::Orphan);
    let left = wait_pods(&ns, "no pod with the tracking finalizer", |p| {
        p.iter().all(|p| !tracked(p)) && (orphan || p.is_empty())
    })
    .await;
    let mut o = Outcome::new();
    o.insert("pods left".into(), left.len().to_string());
    o.insert(
        "pods left tracked".into(),
        left.iter().filter(|p| tracked(p)).count().to_string(),
    );
    o
}

fn delete_foreground(ns: TestNamespace) -> Run {
    delete_mid_run(ns, PropagationPolicy::Foreground).boxed()
}

fn delete_background(ns: TestNamespace) -> Run {
    delete_mid_run(ns, PropagationPolicy::Background).boxed()
}

fn delete_orphan(ns: TestNamespace) -> Run {
    delete_mid_run(ns, PropagationPolicy::Orphan).boxed()
}

/// 300 completions at parallelism 50 (counts only).
fn big(ns: TestNamespace) -> Run {
    async move {
        create(
            &ns,
            "big",
            SUCCEED,
            json!({"completions": 300, "parallelism": 50}),
        )
        .await;
        wait_job_for(&ns, "big", "Complete", LONG_WAIT, |j| {
            has_condition(j, "Complete", "CompletionsReached")
        })
        .await;
        let o = outcome(&ns, "big").await;
        o.into_iter().filter(|(k, _)| k.starts_with("status.")).collect()
    }
    .boxed()
}

/// Every Job scenario, in the order the specification listed them.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("completions-5-parallelism-2", completions_and_parallelism),
        Scenario::new("work-queue", work_queue),
        Scenario::new("indexed-5", indexed),
        Scenario::new("backoff-limit", backoff_limit),
        Scenario::new("on-failure-restarts", on_failure_restarts),
        Scenario::new("fail-job-exit-42", fail_job_on_exit_code),
        Scenario::new("ignore-disruption", ignore_disruption),
        Scenario::new("fail-index", fail_index),
        Scenario::new("success-policy", success_policy),
        Scenario::new("suspend-resume", suspend_resume),
        Scenario::new("active-deadline", active_deadline),
        Scenario::new("replacement-failed", replacement_after_failure),
        Scenario::new("managed-by-other", managed_by_another),
        Scenario::new("delete-running-pod", delete_running_pod),
        Scenario::new("deleted-foreground", delete_foreground),
        Scenario::new("deleted-background", delete_background),
        Scenario::new("deleted-orphan", delete_orphan),
        Scenario::new("backoff-beside-a-ready-pod", backoff_beside_ready::global_backoff),
        Scenario::new(
            "per-index-backoff-beside-a-ready-index",
            backoff_beside_ready::per_index_backoff,
        ),
        Scenario::solo("completions-300", big),
    ]
}
