//! Pod predicates shared by the controllers (upstream `pkg/api/v1/pod` and `controller_utils.go`).

use crate::compact_pod::{Pod, PodCondition};
use std::time::Duration;

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
    jiff::Timestamp,
};

/// The annotation a user sets to steer which pods a ReplicaSet removes first (lower goes first).
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

pub fn is_deleting(meta: &ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
}

/// Counts toward replicas: not Succeeded or Failed, and not being deleted.
pub fn is_active(pod: &Pod) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !is_deleting(&pod.metadata)
}

/// Being deleted but not yet in a terminal phase.
pub fn is_terminating(pod: &Pod) -> bool {
    is_deleting(&pod.metadata) && !matches!(phase(pod), "Succeeded" | "Failed")
}

pub fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

pub fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// When the pod last became Ready, if it is Ready.
pub fn ready_since(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// Ready, and (with `min_ready_seconds` > 0) Ready since strictly more than that long before `now`
/// (upstream `IsPodAvailable`).
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    if !is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    let Some(since) = ready_since(pod) else {
        return false;
    };
    since.as_millisecond() + i64::from(min_ready_seconds) * 1000 < now.as_millisecond()
}

/// For a pod that is Ready but not yet available, how long until it becomes available.
pub fn until_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> Option<Duration> {
    if min_ready_seconds <= 0 || !is_ready(pod) || is_available(pod, min_ready_seconds, now) {
        return None;
    }
    let since = ready_since(pod)?;
    let at = since.as_millisecond() + i64::from(min_ready_seconds) * 1000;
    // Available once strictly past `at`: wake just after it.
    let wait_ms = (at - now.as_millisecond()).max(0) + 1;
    Some(Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0)))
}

/// The most restarts of any regular container, from 0 as upstream's `maxContainerRestarts`: a
/// negative restartCount (the API server does not validate it) counts as none.
pub fn max_container_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |cs| cs.iter().map(|c| c.restart_count).fold(0, i32::max))
}

/// Whether the init container `name` is a sidecar (`restartPolicy: Always`, GA `SidecarContainers`).
pub fn is_sidecar(pod: &Pod, name: &str) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_ref())
        .is_some_and(|init| {
            init.iter()
                .any(|c| c.name == name && c.restart_policy.as_deref() == Some("Always"))
        })
}

/// The most restarts of any sidecar, the second key of upstream's restart tier
/// (`compareMaxContainerRestarts`): it decides only where regular containers tie.
pub fn max_sidecar_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref())
        .map_or(0, |cs| {
            cs.iter()
                .filter(|c| is_sidecar(pod, &c.name))
                .map(|c| c.restart_count)
                .fold(0, i32::max)
        })
}

/// The pod-deletion-cost annotation; 0 when missing or invalid (a leading '+' or leading zeros are
/// invalid, as upstream).
pub fn deletion_cost(pod: &Pod) -> i32 {
    let Some(v) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST_ANNOTATION))
    else {
        return 0;
    };
    let first_ok = match v.as_bytes().first() {
        Some(b'-') => true,
        Some(b'0') => v == "0",
        Some(b'1'..=b'9') => true,
        _ => false,
    };
    if !first_ok {
        return 0;
    }
    v.parse::<i32>().unwrap_or(0)
}

/// The owner reference with `controller: true`, if any.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

pub fn is_controlled_by(meta: &ObjectMeta, owner_uid: &str) -> bool {
    controller_of(meta).is_some_and(|r| r.uid == owner_uid)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::testing::pod;

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    /// The deletion ranking reads this annotation from cached pods, so the projection must keep it.
    #[test]
    fn the_cached_pod_keeps_the_deletion_cost_annotation() {
        assert!(crate::compact_pod::KEPT_ANNOTATIONS.contains(&POD_DELETION_COST_ANNOTATION));
        let p = pod("a").annotation(POD_DELETION_COST_ANNOTATION, "-7").build();
        assert_eq!(deletion_cost(&p), -7);
    }

    #[test]
    fn availability_needs_strictly_more_than_min_ready_seconds() {
        let mut p = pod("a").ready_at(ts(100)).build();
        assert!(is_available(&p, 0, ts(100)));
        assert!(
            !is_available(&p, 10, ts(110)),
            "exactly minReadySeconds is not enough"
        );
        assert!(is_available(&p, 10, ts(111)));
        assert_eq!(
            until_available(&p, 10, ts(105)),
            Some(Duration::from_millis(5001))
        );
        // A Ready condition without a transition time never becomes available.
        p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time = None;
        assert!(!is_available(&p, 10, ts(1000)));
        let _ = Time(ts(0));
    }

    #[test]
    fn deletion_cost_parsing_follows_upstream() {
        let cost = |v: &str| deletion_cost(&pod("a").annotation(POD_DELETION_COST_ANNOTATION, v).build());
        assert_eq!(cost("-5"), -5);
        assert_eq!(cost("100"), 100);
        assert_eq!(cost("0"), 0);
        assert_eq!(cost("+5"), 0);
        assert_eq!(cost("007"), 0);
        assert_eq!(cost("99999999999"), 0);
        assert_eq!(cost("x"), 0);
        assert_eq!(deletion_cost(&pod("a").build()), 0);
    }

    #[test]
    fn active_and_terminating() {
        assert!(is_active(&pod("a").phase("Running").build()));
        assert!(!is_active(&pod("a").phase("Failed").build()));
        assert!(!is_active(&pod("a").phase("Running").deleting().build()));
        assert!(is_terminating(&pod("a").phase("Running").deleting().build()));
        assert!(!is_terminating(&pod("a").phase("Succeeded").deleting().build()));
    }
}
