//! The status a ReplicaSet should have (upstream `calculateStatus`) and whether writing it is needed
//! (upstream `updateReplicaSetStatus`'s skip test).

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::pod_util::{is_available, is_ready, until_available};
use k8s_openapi::{
    api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};

/// The only ReplicaSet condition type.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";
pub const REASON_FAILED_CREATE: &str = "FailedCreate";
pub const REASON_FAILED_DELETE: &str = "FailedDelete";

/// The new status from the claimed active pods, the number of claimed terminating pods and the
/// outcome of scaling (`manage_error`: the error's message). `observedGeneration` is left as it was;
/// the writer sets it.
pub fn calculate_status(
    rs: &ReplicaSet,
    active: &[Arc<Pod>],
    terminating: Option<usize>,
    manage_error: Option<&str>,
    now: Timestamp,
) -> ReplicaSetStatus {
    let mut status = rs.status.clone().unwrap_or_default();
    let spec = rs.spec.as_ref();
    let template_labels = spec
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    let min_ready = spec.and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let (mut fully_labeled, mut ready, mut available) = (0, 0, 0);
    for pod in active {
        let labels = pod.metadata.labels.as_ref();
        if template_labels.is_none_or(|t| t.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))) {
            fully_labeled += 1;
        }
        if is_ready(pod) {
            ready += 1;
            if is_available(pod, min_ready, now) {
                available += 1;
            }
        }
    }
    let has_failure = condition(&status, REPLICA_FAILURE).is_some();
    match manage_error {
        Some(message) if !has_failure => {
            let desired = spec.and_then(|s| s.replicas).unwrap_or(1);
            let reason = match len_i32(active.len()).cmp(&desired) {
                std::cmp::Ordering::Less => REASON_FAILED_CREATE,
                std::cmp::Ordering::Greater => REASON_FAILED_DELETE,
                std::cmp::Ordering::Equal => "",
            };
            let c = ReplicaSetCondition {
                type_: REPLICA_FAILURE.into(),
                status: "True".into(),
                reason: Some(reason.into()),
                message: Some(message.into()),
                last_transition_time: Some(Time(now)),
            };
            status.conditions.get_or_insert_with(Vec::new).push(c);
        }
        None if has_failure => {
            status.conditions = status
                .conditions
                .take()
                .map(|cs| cs.into_iter().filter(|c| c.type_ != REPLICA_FAILURE).collect());
        }
        _ => {}
    }
    status.replicas = len_i32(active.len());
    status.fully_labeled_replicas = Some(fully_labeled);
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.terminating_replicas = terminating.map(len_i32);
    status
}

/// When to sync again because a ready pod will become available (minReadySeconds), given the
/// `status` computed at `evaluated_at` (upstream `syncReplicaSet` with
/// `FindMinNextPodAvailabilityCheck`): the pod due first as of `evaluated_at`, re-measured from
/// `now` (later: the status write took time), at once if it is due already. With no such pod while
/// ready and available counts differ, minReadySeconds, so availability is always counted again.
pub fn availability_requeue(
    rs: &ReplicaSet,
    active: &[Arc<Pod>],
    status: &ReplicaSetStatus,
    evaluated_at: Timestamp,
    now: Timestamp,
) -> Option<Duration> {
    let min_ready = rs.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
    if min_ready <= 0 || status.ready_replicas.unwrap_or(0) == status.available_replicas.unwrap_or(0) {
        return None;
    }
    let first = active
        .iter()
        .filter_map(|p| until_available(p, min_ready, evaluated_at).map(|d| (d, p)))
        .min_by_key(|(d, _)| *d);
    Some(match first {
        Some((_, pod)) => until_available(pod, min_ready, now).unwrap_or(Duration::ZERO),
        None => Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)),
    })
}

/// Whether `new` differs from what the ReplicaSet shows, counting a stale observedGeneration as a
/// difference. Zero and absent counts are the same (the API server omits zeros).
pub fn needs_write(rs: &ReplicaSet, new: &ReplicaSetStatus) -> bool {
    let old = rs.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let conditions = |s: &ReplicaSetStatus| s.conditions.clone().unwrap_or_default();
    old.replicas != new.replicas
        || n(old.fully_labeled_replicas) != n(new.fully_labeled_replicas)
        || n(old.ready_replicas) != n(new.ready_replicas)
        || n(old.available_replicas) != n(new.available_replicas)
        || old.terminating_replicas != new.terminating_replicas
        || rs.metadata.generation != old.observed_generation
        || conditions(&old) != conditions(new)
}

pub fn condition<'a>(status: &'a ReplicaSetStatus, type_: &str) -> Option<&'a ReplicaSetCondition> {
    status.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
