//! The status at the end of a rollout step, with the Progressing condition estimated and the
//! ReplicaSets' failures surfaced, and when to look again for a stuck rollout (upstream
//! `progress.go`: `syncRolloutStatus`, `getReplicaFailures`, `requeueStuckDeployment`).

use std::time::Duration;

use k8s_openapi::{
    api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus},
    jiff::Timestamp,
};

use crate::{
    conditions::{self, FALSE, PROGRESSING, REPLICA_FAILURE, TRUE},
    replica_sets as rsu, spec,
    status::{self, deployment_complete},
    work::Work,
};

/// Added to the wait before a progress check, so the check does not land a hair before the
/// deadline (upstream adds the same second, kubernetes/kubernetes#39785).
pub const PROGRESS_CHECK_SLACK: Duration = Duration::from_secs(1);

impl Work<'_> {
    /// With a deadline, pausing sets Progressing=Unknown DeploymentPaused and resuming
    /// DeploymentResumed, so the time spent paused never counts against the deadline; a recorded
    /// timeout is left alone (upstream `checkPausedConditions`).
    pub fn check_paused_conditions(&mut self) {
        if spec::progress_deadline(&self.d).is_none() {
            return;
        }
        let status = self.d.status.get_or_insert_with(Default::default);
        let reason = conditions::get(status, PROGRESSING).map(|c| conditions::reason(c).to_owned());
        if reason.as_deref() == Some(conditions::TIMED_OUT) {
            return;
        }
        let paused_recorded = reason.as_deref() == Some(conditions::PAUSED);
        let c = match (spec::paused(&self.d), paused_recorded) {
            (true, false) => (conditions::PAUSED, conditions::MSG_PAUSED),
            (false, true) => (conditions::RESUMED, conditions::MSG_RESUMED),
            _ => return,
        };
        let c = conditions::new(PROGRESSING, conditions::UNKNOWN, c.0, c.1, self.now);
        conditions::set(self.d.status.get_or_insert_with(Default::default), c);
    }

    /// Upstream `syncRolloutStatus`: the status, Progressing estimated when there is a deadline and
    /// the rollout is not already recorded complete, ReplicaFailure copied from the ReplicaSets.
    /// When nothing changes, a stuck rollout is looked at again at its deadline.
    pub fn sync_rollout_status(&mut self) {
        let d = &self.d;
        let mut new = self.calculate_status();
        let deadline = spec::progress_deadline(d);
        if deadline.is_none() {
            conditions::remove(&mut new, PROGRESSING);
        }
        let current = d
            .status
            .as_ref()
            .and_then(|s| conditions::get(s, PROGRESSING))
            .cloned();
        let recorded_complete = new.replicas == new.updated_replicas
            && current
                .as_ref()
                .is_some_and(|c| conditions::reason(c) == conditions::NEW_RS_AVAILABLE);
        if deadline.is_some() && !recorded_complete {
            let subject = conditions::subject(self.name(), self.new_rs().map(rsu::name));
            if deployment_complete(d, Some(&new)) {
                let c = conditions::new(
                    PROGRESSING,
                    TRUE,
                    conditions::NEW_RS_AVAILABLE,
                    format!("{subject} has successfully progressed."),
                    self.now,
                );
                conditions::set(&mut new, c);
            } else if status::deployment_progressing(d, &new) {
                // Progress refreshes lastUpdateTime even when the reason stays the same, which
                // plain `set` would not do.
                let mut c = conditions::new(
                    PROGRESSING,
                    TRUE,
                    conditions::REPLICA_SET_UPDATED,
                    format!("{subject} is progressing."),
                    self.now,
                );
                if let Some(cur) = &current {
                    if cur.status == TRUE {
                        c.last_transition_time = cur.last_transition_time.clone();
                    }
                    conditions::remove(&mut new, PROGRESSING);
                }
                conditions::set(&mut new, c);
            } else if status::timed_out(d, &new, self.now) {
                let c = conditions::new(
                    PROGRESSING,
                    FALSE,
                    conditions::TIMED_OUT,
                    format!("{subject} has timed out progressing."),
                    self.now,
                );
                conditions::set(&mut new, c);
            }
        }
        match self.replica_failure() {
            Some(c) => conditions::set(&mut new, c),
            None => conditions::remove(&mut new, REPLICA_FAILURE),
        }
        if status::same_status(d.status.as_ref(), Some(&new)) {
            self.requeue_after = requeue_stuck(d, &new, self.now);
        }
        self.d.status = Some(new);
    }

    /// The new ReplicaSet's ReplicaFailure condition, else the oldest old one's.
    fn replica_failure(&self) -> Option<DeploymentCondition> {
        let failure = |i: usize| {
            self.rs(i)
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == REPLICA_FAILURE))
                .map(conditions::from_replica_set)
        };
        self.new
            .and_then(failure)
            .or_else(|| self.olds_then_new().find_map(failure))
    }
}

/// When to sync a rollout that shows no progress again, so that it times out on time rather than at
/// the next resync (kubernetes/kubernetes#34458): its Progressing condition's lastUpdateTime plus the
/// deadline, plus [`PROGRESS_CHECK_SLACK`]. `None` without a deadline or condition, or once complete
/// or timed out. Upstream requeues with the rate limiter when less than a second is left, which
/// repeats the sync every few milliseconds until the deadline; waiting out the deadline instead
/// decides the same one sync later at most.
pub fn requeue_stuck(d: &Deployment, new: &DeploymentStatus, now: Timestamp) -> Option<Duration> {
    let deadline = spec::progress_deadline(d)?;
    let current = d.status.as_ref().and_then(|s| conditions::get(s, PROGRESSING))?;
    if deployment_complete(d, Some(new)) || conditions::reason(current) == conditions::TIMED_OUT {
        return None;
    }
    let from = current
        .last_update_time
        .as_ref()
        .map_or(0, |t| t.0.as_millisecond());
    let after_ms = (from + i64::from(deadline) * 1000 - now.as_millisecond()).max(0);
    Some(Duration::from_millis(u64::try_from(after_ms).unwrap_or(0)) + PROGRESS_CHECK_SLACK)
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
