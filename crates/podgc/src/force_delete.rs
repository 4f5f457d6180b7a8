//! How a collected pod goes (upstream `markFailedAndDeletePodWithCondition`): first its phase is
//! set to Failed, unless it already ended, since a pod of a deleted node has no kubelet left to
//! say so and the Job controller counts it from that phase; then it is deleted with no grace
//! period.

use controller::{CompactPod as Pod, ControlError};
use k8s_openapi::{api::core::v1::Pod as FullPod, jiff::Timestamp};
use kube::{
    Client, Resource as _,
    api::{DeleteParams, Patch, PatchParams},
    core::Request,
};
use serde_json::{Value, json};

use crate::decide::needs_failed_phase;

/// The condition an orphan gets, saying why it was deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disruption {
    pub reason: &'static str,
    pub message: &'static str,
}

/// What an orphan is told (upstream `gcOrphaned`).
pub const NODE_GONE: Disruption = Disruption {
    reason: "DeletionByPodGC",
    message: "PodGC: node no longer exists",
};

/// The status patch that makes `pod` Failed at `now`, with `condition` as a `DisruptionTarget`;
/// `None` when it already ended. The patch names the pod's UID, so that it fails on another pod
/// of the same name (upstream `PatchPodStatus`). Its observed generation is the pod's, as the
/// GA `PodObservedGenerationTracking` gives it; an existing `DisruptionTarget` of the same status
/// keeps its transition time (upstream `UpdatePodCondition`).
pub fn failed_status(pod: &Pod, condition: Option<Disruption>, now: Timestamp) -> Option<Value> {
    if !needs_failed_phase(pod) {
        return None;
    }
    let generation = pod.metadata.generation.unwrap_or(0);
    let mut status = json!({"phase": "Failed", "observedGeneration": generation});
    if let Some(c) = condition {
        // Already true: its transition time stays, even none; else it is now.
        let since = match pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"))
            .filter(|c| c.status == "True")
        {
            Some(held) => held.last_transition_time.as_ref().map(|t| t.0),
            None => Some(now),
        };
        status["conditions"] = json!([{
            "type": "DisruptionTarget",
            "status": "True",
            "reason": c.reason,
            "message": c.message,
            "observedGeneration": generation,
            // Upstream's new condition has no probe time, which clears an earlier one.
            "lastProbeTime": null,
            "lastTransitionTime": since.map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        }]);
    }
    Some(json!({"metadata": {"uid": pod.metadata.uid}, "status": status}))
}

/// Makes `pod` Failed if it has not ended (see [`failed_status`]), then deletes it with a grace
/// period of 0.
pub async fn force_delete(
    client: &Client,
    pod: &Pod,
    condition: Option<Disruption>,
    now: Timestamp,
) -> Result<(), ControlError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let key = format!("{ns}/{name}");
    let request = Request::new(FullPod::url_path(&(), Some(ns)));
    if let Some(patch) = failed_status(pod, condition, now) {
        let built = request
            .patch_subresource("status", name, &PatchParams::default(), &Patch::Strategic(patch))
            .map_err(|e| ControlError::api("patch pod status", key.clone(), kube::Error::BuildRequest(e)))?;
        client
            .request_text(built)
            .await
            .map_err(|e| ControlError::api("patch pod status", key.clone(), e))?;
    }
    let built = request
        .delete(name, &DeleteParams::default().grace_period(0))
        .map_err(|e| ControlError::api("delete pod", key.clone(), kube::Error::BuildRequest(e)))?;
    client
        .request_text(built)
        .await
        .map(drop)
        .map_err(|e| ControlError::api("delete pod", key, e))
}

#[cfg(test)]
mod tests {
    use controller::compact_pod::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use serde_json::Value;

    use super::*;

    fn pod(phase: &'static str, conditions: Vec<PodCondition>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                uid: Some("u1".into()),
                generation: Some(3),
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(conditions),
                ..PodStatus::default()
            }),
        }
    }

    #[test]
    fn an_orphan_is_failed_with_its_reason_and_an_ended_pod_is_only_deleted() {
        let now: Timestamp = "2026-11-30T07:00:00Z".parse().unwrap();
        let patch = failed_status(&pod("Running", vec![]), Some(NODE_GONE), now).unwrap();
        assert_eq!(
            patch,
            json!({"metadata": {"uid": "u1"}, "status": {
                "phase": "Failed", "observedGeneration": 3,
                "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists", "observedGeneration": 3,
                    "lastProbeTime": null, "lastTransitionTime": "2026-11-30T07:00:00Z"}]}})
        );
        assert_eq!(
            failed_status(&pod("Pending", vec![]), None, now).unwrap()["status"],
            json!({"phase": "Failed", "observedGeneration": 3})
        );
        assert!(failed_status(&pod("Succeeded", vec![]), Some(NODE_GONE), now).is_none());
        assert!(failed_status(&pod("Failed", vec![]), None, now).is_none());
    }

    #[test]
    fn a_disruption_already_true_keeps_its_transition_time() {
        let now: Timestamp = "2026-11-30T07:00:00Z".parse().unwrap();
        let before: Timestamp = "2026-11-30T06:00:00Z".parse().unwrap();
        let held = PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            last_transition_time: Some(Time(before)),
        };
        let patch = failed_status(&pod("Running", vec![held.clone()]), Some(NODE_GONE), now).unwrap();
        assert_eq!(
            patch["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-30T06:00:00Z"
        );
        let untimed = PodCondition {
            last_transition_time: None,
            ..held.clone()
        };
        let patch = failed_status(&pod("Running", vec![untimed]), Some(NODE_GONE), now).unwrap();
        assert_eq!(
            patch["status"]["conditions"][0]["lastTransitionTime"],
            Value::Null
        );
        let turned = PodCondition {
            status: "False".into(),
            ..held
        };
        let patch = failed_status(&pod("Running", vec![turned]), Some(NODE_GONE), now).unwrap();
        assert_eq!(
            patch["status"]["conditions"][0]["lastTransitionTime"], "2026-11-30T07:00:00Z",
            "a condition that turns true starts now"
        );
    }

    /// What reaches the API server: the status patch on the status subresource, then a DELETE
    /// with no grace period (which the API server would also impose on a Failed pod, so the e2e
    /// suite cannot tell it from a default one).
    #[tokio::test]
    async fn the_writes_are_a_status_patch_then_a_delete_with_no_grace_period() {
        let server = testing::ApiServer::new();
        let full: FullPod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"nodeName": "gone", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"},
        }))
        .unwrap();
        server.insert(&full);
        let mut cached = pod("Running", vec![]);
        cached.metadata.namespace = Some("ns".into());
        let now: Timestamp = "2026-11-30T07:00:00Z".parse().unwrap();
        force_delete(&server.client(), &cached, Some(NODE_GONE), now)
            .await
            .unwrap();
        let writes: Vec<_> = server
            .requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .collect();
        assert_eq!(writes.len(), 2, "{writes:#?}");
        assert_eq!(writes[0].summary(), "patch p/status");
        assert_eq!(
            writes[0].content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
        assert_eq!(writes[0].body["status"]["phase"], "Failed");
        assert_eq!(writes[1].summary(), "delete p");
        assert_eq!(writes[1].body["gracePeriodSeconds"], 0);
    }
}
