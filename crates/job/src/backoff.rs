//! The delay before re-creating pods after failures (upstream `backoff_utils.go`): 10 s doubled per
//! consecutive failure since the last success, at most 10 minutes ([`JobDelays`] for tests), counted
//! from the last failure's finish time. Kept in memory per Job, as upstream: a restart forgets it.

use controller::compact_pod::{ContainerStatus, Pod};
use std::{collections::HashMap, sync::Arc, time::Duration};

use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;

use crate::{delays::JobDelays, spec::index_absolute_failure_count};

/// Failures since the last success, and when the last of them finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    pub(crate) failures_after_last_success: i32,
    pub(crate) last_failure_time: Option<Timestamp>,
}

impl BackoffRecord {
    /// The record after newly finished pods (upstream `newBackoffRecord`): failures add up while
    /// nothing succeeds; a success resets the count to the failures that finished after it.
    #[must_use]
    pub(crate) fn with_finished(self, succeeded: &[Arc<Pod>], failed: &[Arc<Pod>]) -> Self {
        let times = |pods: &[Arc<Pod>]| pods.iter().map(|p| finished_time(p)).collect::<Vec<_>>();
        self.with_finish_times(&times(succeeded), &times(failed))
    }

    /// [`Self::with_finished`] on the pods' finish times.
    #[must_use]
    pub(crate) fn with_finish_times(self, succeeded: &[Timestamp], failed: &[Timestamp]) -> Self {
        let last_success = succeeded.iter().max().copied();
        let mut failed_times = failed.to_vec();
        failed_times.sort_unstable();
        match last_success {
            None if failed_times.is_empty() => self,
            None => BackoffRecord {
                failures_after_last_success: self
                    .failures_after_last_success
                    .saturating_add(crate::spec::len_i32(failed_times.len())),
                last_failure_time: failed_times.last().copied(),
            },
            Some(success) => {
                let after: Vec<Timestamp> = failed_times.into_iter().filter(|t| *t > success).collect();
                BackoffRecord {
                    failures_after_last_success: crate::spec::len_i32(after.len()),
                    last_failure_time: after.last().copied(),
                }
            }
        }
    }

    /// How long to wait before creating pods again.
    pub(crate) fn remaining(&self, delays: &JobDelays, now: Timestamp) -> Duration {
        remaining_for_failures(
            delays,
            self.failures_after_last_success,
            self.last_failure_time,
            now,
        )
    }
}

/// The delay for an index whose last failed pod is `last_failed` (upstream
/// `getRemainingTimePerIndex`): that pod's failures so far plus its own.
pub(crate) fn remaining_for_index(delays: &JobDelays, last_failed: Option<&Pod>, now: Timestamp) -> Duration {
    let Some(p) = last_failed else {
        return Duration::ZERO;
    };
    let failures = index_absolute_failure_count(p).saturating_add(1);
    remaining_for_failures(delays, failures, Some(finished_time(p)), now)
}

/// `first × 2^(failures−1)`, capped, minus the time since the last failure; zero once past.
pub(crate) fn remaining_for_failures(
    delays: &JobDelays,
    failures: i32,
    last_failure: Option<Timestamp>,
    now: Timestamp,
) -> Duration {
    if failures <= 0 {
        return Duration::ZERO;
    }
    let delay = delays.backoff_after(failures);
    let Some(last) = last_failure else {
        return delay;
    };
    let elapsed_ms = now.as_millisecond() - last.as_millisecond();
    let elapsed = Duration::from_millis(u64::try_from(elapsed_ms).unwrap_or(0));
    if elapsed_ms < 0 {
        // A finish time in the future (clock skew): the whole delay is still ahead.
        return delay;
    }
    delay.saturating_sub(elapsed)
}

/// When a pod finished: the latest termination of its containers and sidecars (restartable init
/// containers stop after the main ones, so their end is the pod's) if all of them terminated, else
/// the Ready=False transition, else the deletion time minus its grace period, else its creation
/// (upstream `getFinishedTime`). As upstream's, the sidecars' step starts from nothing when a main
/// container never terminated: if every sidecar did, the last of them is the pod's end.
pub(crate) fn finished_time(p: &Pod) -> Timestamp {
    let status = p.status.as_ref();
    let containers = status.and_then(|s| s.container_statuses.as_deref());
    let sidecars = status
        .and_then(|s| s.init_container_statuses.as_deref())
        .into_iter()
        .flatten()
        .filter(|c| controller::pod_util::is_sidecar(p, &c.name));
    let main = latest_finish(None, containers.into_iter().flatten()).flatten();
    if let Some(t) = latest_finish(main, sidecars).flatten() {
        return t;
    }
    let ready_false = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .filter(|c| c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
        .filter(|t| *t != Timestamp::UNIX_EPOCH);
    if let Some(t) = ready_false {
        return t;
    }
    if let Some(d) = &p.metadata.deletion_timestamp {
        let grace = p.metadata.deletion_grace_period_seconds.unwrap_or(0);
        return d
            .0
            .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(grace))
            .unwrap_or(d.0);
    }
    p.metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0)
}

/// The backoff records of every Job, by key.
#[derive(Debug, Default)]
pub(crate) struct BackoffStore {
    records: Mutex<HashMap<String, BackoffRecord>>,
}

impl BackoffStore {
    pub(crate) fn get(&self, key: &str) -> BackoffRecord {
        self.records.lock().get(key).copied().unwrap_or_default()
    }

    pub(crate) fn update(&self, key: &str, record: BackoffRecord) {
        self.records.lock().insert(key.to_owned(), record);
    }

    pub(crate) fn remove(&self, key: &str) {
        self.records.lock().remove(key);
    }
}

/// The latest finish time over `statuses`, starting from `latest`: `None` (no time at all) once one
/// of them has not terminated or has no finish time, as upstream's `latestFinishTime`; `Some(None)`
/// when there is no status to read.
fn latest_finish<'a>(
    mut latest: Option<Timestamp>,
    statuses: impl IntoIterator<Item = &'a ContainerStatus>,
) -> Option<Option<Timestamp>> {
    for c in statuses {
        let t = c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref()?.0;
        if t == Timestamp::UNIX_EPOCH {
            return None;
        }
        latest = Some(latest.map_or(t, |l| l.max(t)));
    }
    Some(latest)
}

#[cfg(test)]
#[path = "backoff_tests.rs"]
mod tests;
