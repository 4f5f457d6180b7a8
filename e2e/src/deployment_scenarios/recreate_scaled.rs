//! A dead end upstream has and kcm-rs keeps: a rolling update that cannot finish is paused, switched
//! to Recreate, scaled and given a new image, then resumed. The size change is a scaling event, which
//! upstream's `scale` leaves to proportional scaling when two ReplicaSets are active and none has the
//! template, and proportional scaling is for rolling Deployments only: nothing is written, every
//! later sync is the same scaling event, and the Deployment stays where it is (both ReplicaSets at
//! their sizes, no new one) until its strategy or size changes again. The randomized soak found it.

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::json;

use super::{GOOD, Run, STUCK, helpers::*};
use crate::TestNamespace;

/// How long the Deployment is watched doing nothing after it is resumed.
const STILL_FOR: Duration = Duration::from_secs(5);

pub(super) fn recreate_scaled_mid_rollout(ns: TestNamespace) -> Run {
    async move {
        let rolling = json!({"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}});
        create(&ns, "web", 4, GOOD, rolling).await;
        wait_complete(&ns, "web", 4).await;
        // The new ReplicaSet's pod never becomes Ready: both ReplicaSets stay active.
        set_image(&ns, "web", STUCK).await;
        wait_sizes(&ns, &[(1, 4), (2, 1)]).await;
        kubectl(&ns, &["rollout", "pause", "deployment/web"]);
        // Each state seen by the controller before the next, so both runs go through the same ones.
        ns.wait_observed::<Deployment>("web", "paused", Duration::from_secs(90), |d| {
            condition(d, "Progressing").as_deref() == Some("Unknown (DeploymentPaused)")
        })
        .await;
        let recreate = json!({"spec": {"replicas": 3,
            "strategy": {"type": "Recreate", "rollingUpdate": null}}});
        patch(&ns, "web", recreate).await;
        set_image(&ns, "web", "nginx:3").await;
        ns.wait_observed::<Deployment>("web", "the changes observed", Duration::from_secs(90), |_| true)
            .await;
        kubectl(&ns, &["rollout", "resume", "deployment/web"]);
        ns.wait_observed::<Deployment>("web", "resumed", Duration::from_secs(90), |d| {
            condition(d, "Progressing").as_deref() == Some("Unknown (DeploymentResumed)")
        })
        .await;
        tokio::time::sleep(STILL_FOR).await;
        outcome(&ns, "web").await
    }
    .boxed()
}
