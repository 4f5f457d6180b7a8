//! The status once the finalizer removals are done (upstream `flushUncountedAndRemoveFinalizers`'
//! counting and `enactJobFinished`), and the events of a finished Job (`recordJobFinished`). A UID
//! leaves `uncountedTerminatedPods` for its counter only once its pod is known to have lost the
//! finalizer, so a crash anywhere neither loses nor doubles it.

use std::collections::HashSet;

use k8s_openapi::{api::batch::v1::JobCondition, jiff::Timestamp};

use super::{
    state::{AfterRemoval, PlannedEvent, StatusPlan},
    tracking::move_counted,
};
use crate::conditions::*;

/// The status once the finalizers of `removed` are gone (`removal_failed`: some removal failed
/// with an error), with the terminal condition if the Job may finish now: nothing is left
/// uncounted and no pod terminates.
pub(crate) fn status_after_removal(
    plan: &StatusPlan,
    removed: &HashSet<String>,
    removal_failed: bool,
    now: Timestamp,
) -> AfterRemoval {
    let mut status = plan.status.clone();
    let still: HashSet<String> = plan.uids_with_finalizer.difference(removed).cloned().collect();
    let mut write = move_counted(&mut status, &still);
    if removal_failed {
        return AfterRemoval {
            status,
            write,
            finished: None,
        };
    }
    let mut finished = None;
    if let Some(c) = plan.finished.as_ref().filter(|_| !plan.reached_max_uncounted) {
        let uncounted = status.uncounted_terminated_pods.as_ref();
        let n = uncounted.map_or(0, |u| {
            u.succeeded.as_ref().map_or(0, Vec::len) + u.failed.as_ref().map_or(0, Vec::len)
        });
        if n == 0 && plan.terminating == 0 {
            let conds = status.conditions.get_or_insert_with(Vec::new);
            ensure_condition_status(conds, &c.type_, &c.status, reason_of(c), message_of(c), now);
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

/// The events of a finished Job (upstream `recordJobFinished`).
pub(crate) fn finished_events(
    completions: Option<i32>,
    succeeded: i32,
    c: &JobCondition,
) -> Vec<PlannedEvent> {
    if c.type_ == COMPLETE {
        let mut out = Vec::new();
        if completions.is_some_and(|n| succeeded > n) {
            out.push(PlannedEvent::warning(
                EVENT_TOO_MANY_SUCCEEDED,
                EVENT_TOO_MANY_SUCCEEDED_MESSAGE,
            ));
        }
        out.push(PlannedEvent::normal(EVENT_COMPLETED, EVENT_COMPLETED_MESSAGE));
        out
    } else {
        vec![PlannedEvent::warning(reason_of(c).to_owned(), message_of(c))]
    }
}
