//! Deployment conditions, their reasons and messages, and upstream's rules for setting them
//! (`deployment_util.go`: `SetDeploymentCondition`, `RemoveDeploymentCondition`,
//! `ReplicaSetToDeploymentCondition`).

use k8s_openapi::{
    api::apps::v1::{DeploymentCondition, DeploymentStatus, ReplicaSetCondition},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};

pub const AVAILABLE: &str = "Available";
pub const PROGRESSING: &str = "Progressing";
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

pub const TRUE: &str = "True";
pub const FALSE: &str = "False";
pub const UNKNOWN: &str = "Unknown";

// Progressing reasons.
pub const REPLICA_SET_UPDATED: &str = "ReplicaSetUpdated";
pub const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
pub const NEW_REPLICA_SET: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const PAUSED: &str = "DeploymentPaused";
pub const RESUMED: &str = "DeploymentResumed";
// Available reasons.
pub const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

pub const MSG_AVAILABLE: &str = "Deployment has minimum availability.";
pub const MSG_UNAVAILABLE: &str = "Deployment does not have minimum availability.";
pub const MSG_PAUSED: &str = "Deployment is paused";
pub const MSG_RESUMED: &str = "Deployment is resumed";

/// Go's `%q` for the names in messages: object names need no escaping.
pub fn quoted(name: &str) -> String {
    format!("\"{name}\"")
}

/// "ReplicaSet \"x\"" when there is a new ReplicaSet, else "Deployment \"d\"" (the subject of the
/// Progressing messages).
pub fn subject(deployment: &str, new_rs: Option<&str>) -> String {
    match new_rs {
        Some(rs) => format!("ReplicaSet {}", quoted(rs)),
        None => format!("Deployment {}", quoted(deployment)),
    }
}

/// Condition times are kept to the second, as the API server stores them, so that a status computed
/// here compares equal to the one read back.
pub fn now_time(now: Timestamp) -> Time {
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

pub fn new(
    type_: &str,
    status: &str,
    reason: &str,
    message: impl Into<String>,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.into()),
        last_update_time: Some(now_time(now)),
        last_transition_time: Some(now_time(now)),
    }
}

pub fn get<'a>(status: &'a DeploymentStatus, type_: &str) -> Option<&'a DeploymentCondition> {
    status.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

pub fn reason(c: &DeploymentCondition) -> &str {
    c.reason.as_deref().unwrap_or("")
}

/// Adds or replaces the condition of its type: nothing happens if one with the same status and
/// reason exists (its message and times stay); a status that does not change keeps its transition
/// time; the new condition goes to the end.
pub fn set(status: &mut DeploymentStatus, mut c: DeploymentCondition) {
    if let Some(current) = get(status, &c.type_) {
        if current.status == c.status && current.reason == c.reason {
            return;
        }
        if current.status == c.status {
            c.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove(status, &c.type_.clone());
    status.conditions.get_or_insert_with(Vec::new).push(c);
}

pub fn remove(status: &mut DeploymentStatus, type_: &str) {
    if let Some(cs) = status.conditions.as_mut() {
        cs.retain(|c| c.type_ != type_);
    }
}

/// A ReplicaSet's failure as a Deployment condition, both times its transition time.
pub fn from_replica_set(c: &ReplicaSetCondition) -> DeploymentCondition {
    DeploymentCondition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        last_transition_time: c.last_transition_time.clone(),
        last_update_time: c.last_transition_time.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::ts;

    #[test]
    fn set_keeps_same_status_and_reason_and_transition_times() {
        let mut s = DeploymentStatus::default();
        set(&mut s, new(PROGRESSING, TRUE, NEW_REPLICA_SET, "a", ts(1)));
        set(
            &mut s,
            new(AVAILABLE, TRUE, MINIMUM_REPLICAS_AVAILABLE, MSG_AVAILABLE, ts(1)),
        );
        // Same status and reason: untouched, message included.
        set(&mut s, new(PROGRESSING, TRUE, NEW_REPLICA_SET, "b", ts(5)));
        assert_eq!(get(&s, PROGRESSING).unwrap().message.as_deref(), Some("a"));
        // Same status, new reason: transition time kept, moved to the end.
        set(&mut s, new(PROGRESSING, TRUE, REPLICA_SET_UPDATED, "c", ts(9)));
        let p = get(&s, PROGRESSING).unwrap();
        assert_eq!(p.last_transition_time, Some(now_time(ts(1))));
        assert_eq!(p.last_update_time, Some(now_time(ts(9))));
        assert_eq!(s.conditions.as_ref().unwrap().last().unwrap().type_, PROGRESSING);
        // New status: new transition time.
        set(&mut s, new(PROGRESSING, FALSE, TIMED_OUT, "d", ts(20)));
        assert_eq!(
            get(&s, PROGRESSING).unwrap().last_transition_time,
            Some(now_time(ts(20)))
        );
        remove(&mut s, PROGRESSING);
        assert!(get(&s, PROGRESSING).is_none());
        assert_eq!(s.conditions.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn messages_name_the_new_replica_set_or_the_deployment() {
        assert_eq!(subject("d", Some("d-abc")), "ReplicaSet \"d-abc\"");
        assert_eq!(subject("d", None), "Deployment \"d\"");
    }
}
