//! Deciding, last part: what the status becomes once the finalizer removals are done (upstream
//! `flushUncountedAndRemoveFinalizers`' counting and `enactJobFinished`), and the events of a
//! finished Job (`recordJobFinished`). A UID leaves `uncountedTerminatedPods` for its counter only
//! once its pod is known to have lost the finalizer, so a crash anywhere neither loses nor doubles it.

use std::collections::HashSet;

use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};

use crate::{
    conditions::*,
    spec::len_i32,
    tracking::{PlannedEvent, StatusPlan},
};

/// The status after the finalizer removals.
#[derive(Debug, Clone)]
pub struct AfterRemoval {
    pub status: JobStatus,
    /// A write is still needed.
    pub write: bool,
    /// The terminal condition was added: the Job is done (events and metrics).
    pub finished: Option<JobCondition>,
}

impl StatusPlan {
    /// The status once the finalizers of `removed` are gone (`removal_failed`: some removal failed
    /// with an error), and the terminal condition if the Job may finish now (upstream
    /// `flushUncountedAndRemoveFinalizers` and `enactJobFinished`).
    pub fn after_removal(
        &self,
        removed: &HashSet<String>,
        removal_failed: bool,
        now: k8s_openapi::jiff::Timestamp,
    ) -> AfterRemoval {
        let mut status = self.status.clone();
        let still: HashSet<String> = self.uids_with_finalizer.difference(removed).cloned().collect();
        let mut write = move_counted(&mut status, &still);
        if removal_failed {
            return AfterRemoval {
                status,
                write,
                finished: None,
            };
        }
        let mut finished = None;
        if let Some(c) = self.finished.as_ref().filter(|_| !self.reached_max_uncounted) {
            let uncounted = status.uncounted_terminated_pods.as_ref();
            let n = uncounted.map_or(0, |u| {
                u.succeeded.as_ref().map_or(0, Vec::len) + u.failed.as_ref().map_or(0, Vec::len)
            });
            if n == 0 && self.terminating == 0 {
                let conds = status.conditions.get_or_insert_with(Vec::new);
                ensure_condition_status(conds, &c.type_, &c.status, reason(c), message(c), now);
                if c.type_ == COMPLETE {
                    // The time the condition was prepared, before the removals; the condition
                    // written is stamped now (upstream `enactJobFinished`).
                    status.completion_time = c.last_transition_time.clone();
                }
                write = true;
                finished = Some(c.clone());
            }
        }
        AfterRemoval {
            status,
            write,
            finished,
        }
    }
}

/// Moves uncounted UIDs whose pods no longer carry the finalizer into the counters (upstream
/// `cleanUncountedPodsWithoutFinalizers`). Returns whether anything moved.
pub fn move_counted(status: &mut JobStatus, with_finalizer: &HashSet<String>) -> bool {
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    let mut changed = false;
    for (list, counter) in [
        (&mut uncounted.succeeded, &mut status.succeeded),
        (&mut uncounted.failed, &mut status.failed),
    ] {
        let Some(uids) = list.as_mut() else { continue };
        let before = uids.len();
        uids.retain(|u| with_finalizer.contains(u));
        let moved = before - uids.len();
        if moved > 0 {
            changed = true;
            *counter = Some(counter.unwrap_or(0) + len_i32(moved));
        }
        if uids.is_empty() {
            *list = None;
        }
    }
    changed
}

/// Events and metrics of a finished Job (upstream `recordJobFinished`).
pub fn finished_events(completions: Option<i32>, succeeded: i32, c: &JobCondition) -> Vec<PlannedEvent> {
    if c.type_ == COMPLETE {
        let mut out = Vec::new();
        if completions.is_some_and(|n| succeeded > n) {
            out.push(PlannedEvent {
                warning: true,
                reason: EVENT_TOO_MANY_SUCCEEDED.into(),
                message: EVENT_TOO_MANY_SUCCEEDED_MESSAGE.into(),
            });
        }
        out.push(normal(EVENT_COMPLETED, EVENT_COMPLETED_MESSAGE));
        out
    } else {
        vec![PlannedEvent {
            warning: true,
            reason: reason(c).into(),
            message: message(c).into(),
        }]
    }
}

pub(crate) fn normal(reason: &str, message: &str) -> PlannedEvent {
    PlannedEvent {
        warning: false,
        reason: reason.into(),
        message: message.into(),
    }
}

pub(crate) fn reason(c: &JobCondition) -> &str {
    c.reason.as_deref().unwrap_or("")
}

pub(crate) fn message(c: &JobCondition) -> &str {
    c.message.as_deref().unwrap_or("")
}
