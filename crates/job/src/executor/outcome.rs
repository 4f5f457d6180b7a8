//! What the pod writes achieved, as the status and the metrics count it.

use controller::compact_pod::Pod;
use std::sync::Arc;

use controller::ControlError;

use crate::{metrics, plan::ManageOutcome};

/// What one create call came to, short of an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempt {
    Created,
    /// Refused because the namespace is terminating: counted as created (no event will come, and
    /// no create will ever succeed there), as upstream does.
    NamespaceTerminating,
}

/// A delete counts unless it failed with an error other than NotFound. A ready pod leaves the
/// `ready` count once its DELETE was sent, whatever the answer, as upstream counts it (only a
/// failed finalizer removal, which stops before the DELETE, keeps it). `results` holds each pod's
/// result and whether its DELETE was sent.
pub(super) fn deletion_outcome(
    pods: &[Arc<Pod>],
    results: Vec<(Result<(), ControlError>, bool)>,
) -> (ManageOutcome, Option<ControlError>) {
    let mut out = ManageOutcome {
        all_deleted: true,
        ..ManageOutcome::default()
    };
    let mut first = None;
    for (p, (r, sent)) in pods.iter().zip(results) {
        if sent && controller::pod_util::is_ready(p) {
            out.deleted_ready += 1;
        }
        match r {
            Err(e) if !e.is_not_found() => {
                out.all_deleted = false;
                first.get_or_insert(e);
            }
            _ => out.deleted += 1,
        }
    }
    (out, first)
}

/// Counted as upstream's `job_pods_creation_total` counts: every attempt the namespace did not
/// refuse for terminating is "succeeded", failed ones included; "failed" counts failures.
pub(super) fn record_creations(m: &dyn metrics::JobMetrics, reason: &str, attempts: &[Attempt], failed: u64) {
    let created = attempts.iter().filter(|a| **a == Attempt::Created).count() as u64;
    let attempted = created + failed;
    if attempted > 0 {
        m.pods_created(reason, metrics::SUCCEEDED, attempted);
    }
    if failed > 0 {
        m.pods_created(reason, metrics::FAILED, failed);
    }
}
