//! The Deployment scenarios the differential suite runs (the behaviours listed when the Deployment
//! controller was specified: rollouts, scaling, pause, rollback, progress, history): each returns
//! the normalized outcome it observed. Pods become Ready at once on KWOK unless labelled
//! `kcm-rs.test/ready=never`; an image tagged `:404` never pulls, which is how a rollout is made to
//! stick.

mod helpers;
mod recreate_scaled;

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::ResourceQuota,
};
use kube::api::PostParams;
use serde_json::json;

pub use helpers::deployment_manifest;
use helpers::*;

use crate::{
    TestNamespace,
    differential::{Scenario, ScenarioFuture as Run},
};

const GOOD: &str = "nginx:1";
const GOOD_2: &str = "nginx:2";
const STUCK: &str = "nginx:404";

fn create_three(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 3, GOOD, json!({})).await;
        wait_complete(&ns, "web", 3).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

/// An image update with the default 25%/25% strategy.
fn rolling_update(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 4, GOOD, json!({})).await;
        wait_complete(&ns, "web", 4).await;
        set_image(&ns, "web", GOOD_2).await;
        wait_complete(&ns, "web", 4).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

/// maxSurge 1 / maxUnavailable 0: one pod at a time, every step deterministic.
fn surge_one(ns: TestNamespace) -> Run {
    async move {
        let strategy = json!({"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}});
        create(&ns, "web", 3, GOOD, strategy).await;
        wait_complete(&ns, "web", 3).await;
        let steps = SizeSteps::start(&ns).await;
        set_image(&ns, "web", GOOD_2).await;
        wait_complete(&ns, "web", 3).await;
        let mut o = outcome(&ns, "web").await;
        o.insert("size steps".into(), steps.stop(&ns).await);
        o
    }
    .boxed()
}

/// Recreate: the old ReplicaSet to 0, its pods gone, then the new one at full size.
fn recreate(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 3, GOOD, json!({"strategy": {"type": "Recreate"}})).await;
        wait_complete(&ns, "web", 3).await;
        let steps = SizeSteps::start(&ns).await;
        set_image(&ns, "web", GOOD_2).await;
        wait_complete(&ns, "web", 3).await;
        let mut o = outcome(&ns, "web").await;
        o.insert("size steps".into(), steps.stop(&ns).await);
        o
    }
    .boxed()
}

/// Upstream's proportional-scaling figure: 10 replicas, maxSurge 3, maxUnavailable 2, a new template
/// that never becomes Ready → 8 + 5; scaled to 30 → 20 + 13.
fn proportional_scaling(ns: TestNamespace) -> Run {
    async move {
        let strategy = json!({"strategy": {"rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}});
        create(&ns, "web", 10, GOOD, strategy).await;
        wait_complete(&ns, "web", 10).await;
        set_image(&ns, "web", STUCK).await;
        wait_sizes(&ns, &[(1, 8), (2, 5)]).await;
        patch(&ns, "web", json!({"spec": {"replicas": 30}})).await;
        wait_sizes(&ns, &[(1, 20), (2, 13)]).await;
        // Settled: the old ReplicaSet's 20 pods Ready (9 of them just created), the new 13 stuck.
        ns.wait_observed::<Deployment>(
            "web",
            "33 pods, the 20 old ones available",
            Duration::from_secs(90),
            |d| {
                let s = d.status.clone().unwrap_or_default();
                s.replicas == Some(33) && s.ready_replicas == Some(20) && s.available_replicas == Some(20)
            },
        )
        .await;
        outcome(&ns, "web").await
    }
    .boxed()
}

/// Paused, two template changes, resumed: one new ReplicaSet, for the last template.
fn pause_resume(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 3, GOOD, json!({})).await;
        wait_complete(&ns, "web", 3).await;
        kubectl(&ns, &["rollout", "pause", "deployment/web"]);
        ns.wait_observed::<Deployment>("web", "paused", Duration::from_secs(90), |d| {
            condition(d, "Progressing").as_deref() == Some("Unknown (DeploymentPaused)")
        })
        .await;
        set_image(&ns, "web", GOOD_2).await;
        set_image(&ns, "web", "nginx:3").await;
        ns.wait_observed::<Deployment>(
            "web",
            "the second change observed",
            Duration::from_secs(90),
            |_| true,
        )
        .await;
        let paused = outcome(&ns, "web").await;
        kubectl(&ns, &["rollout", "resume", "deployment/web"]);
        wait_complete(&ns, "web", 3).await;
        let mut o = outcome(&ns, "web").await;
        for (k, v) in paused {
            o.insert(format!("while paused: {k}"), v);
        }
        o
    }
    .boxed()
}

/// `kubectl rollout undo` (client-side: the old template written back, its ReplicaSet reused with a
/// new revision), then the deprecated rollback annotation to a revision that does not exist.
fn rollback(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 2, GOOD, json!({})).await;
        wait_complete(&ns, "web", 2).await;
        set_image(&ns, "web", GOOD_2).await;
        wait_complete(&ns, "web", 2).await;
        kubectl(&ns, &["rollout", "undo", "deployment/web"]);
        ns.wait_observed::<Deployment>("web", "revision 3", Duration::from_secs(90), |d| {
            d.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("deployment.kubernetes.io/revision"))
                == Some(&"3".to_owned())
        })
        .await;
        wait_complete(&ns, "web", 2).await;
        patch(
            &ns,
            "web",
            json!({"metadata": {"annotations": {"deprecated.deployment.rollback.to": "99"}}}),
        )
        .await;
        ns.wait_observed::<Deployment>(
            "web",
            "the rollback annotation cleared",
            Duration::from_secs(90),
            |d| {
                !d.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("deprecated.deployment.rollback.to"))
            },
        )
        .await;
        let mut o = outcome(&ns, "web").await;
        o.insert(
            "rollout history".into(),
            kubectl(&ns, &["rollout", "history", "deployment/web"]),
        );
        o
    }
    .boxed()
}

/// progressDeadlineSeconds 10 with pods that never become Ready.
fn progress_deadline(ns: TestNamespace) -> Run {
    async move {
        let spec = json!({
            "progressDeadlineSeconds": 10,
            "template": {"metadata": {"labels": {"kcm-rs.test/ready": "never"}}}
        });
        create(&ns, "web", 2, GOOD, spec).await;
        ns.wait_observed::<Deployment>("web", "ProgressDeadlineExceeded", Duration::from_secs(90), |d| {
            condition(d, "Progressing").as_deref() == Some("False (ProgressDeadlineExceeded)")
        })
        .await;
        // The deadline passes whether or not KWOK has started the pods yet (on a loaded plane it
        // may not have); the outcome counts pods by phase, so it waits for both to run.
        wait_pods(&ns, "two running pods", |p| {
            p.len() == 2 && p.iter().all(|p| phase(p) == "Running")
        })
        .await;
        outcome(&ns, "web").await
    }
    .boxed()
}

/// revisionHistoryLimit 2 after 5 updates: the new ReplicaSet and the two newest old ones remain.
fn history_limit(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 1, "nginx:0", json!({"revisionHistoryLimit": 2})).await;
        wait_complete(&ns, "web", 1).await;
        for i in 1..=5 {
            set_image(&ns, "web", &format!("nginx:{i}")).await;
            wait_complete(&ns, "web", 1).await;
        }
        wait_for_replica_sets(&ns, 3).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

async fn wait_for_replica_sets(ns: &TestNamespace, n: usize) {
    crate::wait_for(&format!("{n} ReplicaSets"), crate::DEFAULT_WAIT, || async {
        let got = replica_sets(ns).await.len();
        if got == n { Ok(()) } else { Err(got) }
    })
    .await;
}

/// An update while the previous rollout is stuck: the middle ReplicaSet is scaled to 0.
fn rollover(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 4, GOOD, json!({})).await;
        wait_complete(&ns, "web", 4).await;
        set_image(&ns, "web", STUCK).await;
        wait_sizes(&ns, &[(1, 3), (2, 2)]).await;
        set_image(&ns, "web", GOOD_2).await;
        wait_complete(&ns, "web", 4).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

/// An orphan ReplicaSet whose labels match the selector (apps/v1 does not default a ReplicaSet's
/// labels from its template: without them nobody adopts it), with the Deployment's template (as after `kubectl
/// apply` of a Deployment over a ReplicaSet it used to be): adopted as the new ReplicaSet (template
/// equality ignores the hash label), given revision 1 and scaled to the Deployment's size.
fn adopt_orphan(ns: TestNamespace) -> Run {
    async move {
        let orphan: ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": "orphan", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": GOOD}]}
                }
            }
        }))
        .unwrap();
        ns.api::<ReplicaSet>()
            .create(&PostParams::default(), &orphan)
            .await
            .unwrap();
        wait_pods(&ns, "the orphan's pods", |p| p.len() == 2).await;
        create(&ns, "web", 3, GOOD, json!({})).await;
        wait_complete(&ns, "web", 3).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

fn min_ready_seconds(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 2, GOOD, json!({"minReadySeconds": 3})).await;
        wait_complete(&ns, "web", 2).await;
        set_image(&ns, "web", GOOD_2).await;
        wait_complete(&ns, "web", 2).await;
        outcome(&ns, "web").await
    }
    .boxed()
}

/// A quota of 2 pods under a Deployment of 3: ReplicaFailure surfaces on the Deployment.
fn quota(ns: TestNamespace) -> Run {
    async move {
        let q: ResourceQuota =
            serde_json::from_value(json!({"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "2"}}}))
                .unwrap();
        ns.api::<ResourceQuota>()
            .create(&PostParams::default(), &q)
            .await
            .unwrap();
        crate::wait_for("the quota's status", crate::DEFAULT_WAIT, || async {
            let q = ns
                .api::<ResourceQuota>()
                .get("pods")
                .await
                .map_err(|e| e.to_string())?;
            q.status
                .and_then(|s| s.hard)
                .map(|_| ())
                .ok_or("no status yet".to_owned())
        })
        .await;
        create(&ns, "web", 3, GOOD, json!({})).await;
        ns.wait_observed::<Deployment>("web", "ReplicaFailure", Duration::from_secs(90), |d| {
            condition(d, "ReplicaFailure").as_deref() == Some("True (FailedCreate)")
                && d.status.as_ref().and_then(|s| s.available_replicas) == Some(2)
        })
        .await;
        outcome(&ns, "web").await
    }
    .boxed()
}

/// `kubectl rollout restart`: a new ReplicaSet for the restartedAt annotation.
fn rollout_restart(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "web", 2, GOOD, json!({})).await;
        wait_complete(&ns, "web", 2).await;
        kubectl(&ns, &["rollout", "restart", "deployment/web"]);
        ns.wait_observed::<Deployment>("web", "revision 2", Duration::from_secs(90), |d| {
            d.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("deployment.kubernetes.io/revision"))
                == Some(&"2".to_owned())
        })
        .await;
        wait_complete(&ns, "web", 2).await;
        let mut o = outcome(&ns, "web").await;
        let status = kubectl(&ns, &["rollout", "status", "deployment/web", "--timeout=60s"]);
        o.insert("rollout status".into(), status);
        o
    }
    .boxed()
}

/// A 100-replica rolling update (counts only).
fn hundred_rolling(ns: TestNamespace) -> Run {
    async move {
        create(&ns, "big", 100, GOOD, json!({})).await;
        wait_complete_for(&ns, "big", 100, BIG_WAIT).await;
        set_image(&ns, "big", GOOD_2).await;
        wait_complete_for(&ns, "big", 100, BIG_WAIT).await;
        let o = outcome(&ns, "big").await;
        o.into_iter()
            .filter(|(k, _)| k.starts_with("status.") || k == "deployment revision" || k == "pods")
            .collect()
    }
    .boxed()
}

/// The longest object name: a DNS-1123 subdomain (apimachinery `DNS1123SubdomainMaxLength`).
const MAX_NAME_LEN: usize = 253;

/// A Deployment named with 250 characters: its ReplicaSet's name keeps only as much of it as fits
/// before `-<hash>` in [`MAX_NAME_LEN`] characters. Its label value is short: label values stop
/// at 63.
fn long_name(ns: TestNamespace) -> Run {
    async move {
        let name = "a".repeat(250);
        let labels = json!({"app": "long"});
        let spec = json!({
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}}
        });
        create(&ns, &name, 2, GOOD, spec).await;
        wait_complete(&ns, &name, 2).await;
        let mut o = outcome(&ns, &name).await;
        let named: Vec<String> = replica_sets(&ns)
            .await
            .iter()
            .map(|rs| {
                let rs_name = rs.metadata.name.clone().unwrap_or_default();
                let hash = rs
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("pod-template-hash"))
                    .cloned()
                    .unwrap_or_default();
                let kept = name.len().min(MAX_NAME_LEN - 1 - hash.len());
                (rs_name == format!("{}-{hash}", &name[..kept])).to_string()
            })
            .collect();
        o.insert(
            "replicaset named <deployment, cut to fit>-<hash>".into(),
            named.join(", "),
        );
        o
    }
    .boxed()
}

/// Every Deployment scenario, in the order the specification listed them.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("create-3", create_three),
        Scenario::new("rolling-25-25", rolling_update),
        Scenario::new("surge-1-unavailable-0", surge_one),
        Scenario::new("recreate", recreate),
        Scenario::new("proportional", proportional_scaling),
        Scenario::new("pause-resume", pause_resume),
        Scenario::new("rollback", rollback),
        Scenario::new("progress-deadline", progress_deadline),
        Scenario::new("history-limit", history_limit),
        Scenario::new("rollover", rollover),
        Scenario::new("adopt-orphan", adopt_orphan),
        Scenario::new("min-ready", min_ready_seconds),
        Scenario::new("quota", quota),
        Scenario::new("rollout-restart", rollout_restart),
        Scenario::new(
            "recreate-scaled-mid-rollout",
            recreate_scaled::recreate_scaled_mid_rollout,
        ),
        // Kebab-case like the others: the name prefixes the scenario's namespace, a DNS label.
        Scenario::new("long-name", long_name),
        Scenario::solo("rolling-100", hundred_rolling),
    ]
}
