//! The Job controller's three waits: the pod-failure backoff's first step and its cap, and the batch
//! period that gathers pod events into one sync. The defaults are upstream's, and nothing but a
//! test should change them: upstream's own integration tests do (`test/integration/job` sets
//! `DefaultJobPodFailureBackOff`, `MaxJobPodFailureBackOff` and `SyncJobBatchPeriod` to 100 ms), so
//! that a Job whose pods keep failing reaches `BackoffLimitExceeded` in seconds instead of minutes.
//! kcm-rs offers the same to its users' tests; KCM has no flag for them.

use std::time::Duration;

use thiserror::Error;

/// The first re-creation delay after a failure (upstream `DefaultJobPodFailureBackOff`).
pub const DEFAULT_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// The longest re-creation delay (upstream `MaxJobPodFailureBackOff`).
pub const MAX_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10 * 60);
/// How long pod events for one Job are gathered before it syncs, and the least wait before a sync
/// that waits out a backoff (upstream `SyncJobBatchPeriod`).
pub const SYNC_JOB_BATCH_PERIOD: Duration = Duration::from_secs(1);

/// The Job controller's waits, upstream's unless a test asks otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobDelays {
    pod_failure_backoff: Duration,
    /// At least `pod_failure_backoff`, so that the delay only ever grows with the failures.
    max_pod_failure_backoff: Duration,
    sync_batch_period: Duration,
}

/// A combination of waits that would make the backoff shrink as failures add up.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("the pod failure backoff's cap ({max:?}) is shorter than its first step ({first:?})")]
pub struct JobDelaysError {
    pub first: Duration,
    pub max: Duration,
}

impl Default for JobDelays {
    fn default() -> Self {
        Self::UPSTREAM
    }
}

impl JobDelays {
    /// Upstream's waits, the default.
    pub const UPSTREAM: Self = Self {
        pod_failure_backoff: DEFAULT_POD_FAILURE_BACKOFF,
        max_pod_failure_backoff: MAX_POD_FAILURE_BACKOFF,
        sync_batch_period: SYNC_JOB_BATCH_PERIOD,
    };

    /// Other waits than upstream's, for tests. Zero is allowed for each: no backoff, no batching.
    pub fn new(
        pod_failure_backoff: Duration,
        max_pod_failure_backoff: Duration,
        sync_batch_period: Duration,
    ) -> Result<Self, JobDelaysError> {
        if max_pod_failure_backoff < pod_failure_backoff {
            return Err(JobDelaysError {
                first: pod_failure_backoff,
                max: max_pod_failure_backoff,
            });
        }
        Ok(Self {
            pod_failure_backoff,
            max_pod_failure_backoff,
            sync_batch_period,
        })
    }

    /// Whether these are upstream's waits; shadow mode, which judges kcm-rs against upstream's
    /// controller, runs only on those.
    pub fn is_upstream(&self) -> bool {
        *self == Self::UPSTREAM
    }

    pub fn pod_failure_backoff(&self) -> Duration {
        self.pod_failure_backoff
    }

    pub fn max_pod_failure_backoff(&self) -> Duration {
        self.max_pod_failure_backoff
    }

    pub fn sync_batch_period(&self) -> Duration {
        self.sync_batch_period
    }

    /// The wait after `failures` consecutive failures: the first step doubled per failure after
    /// the first, capped (upstream `getRemainingTimeForFailuresCount`, before the time already
    /// passed is taken off).
    pub(crate) fn backoff_after(&self, failures: i32) -> Duration {
        let mut delay = self.pod_failure_backoff;
        if delay.is_zero() {
            // Doubling nothing stays nothing; a failure count near i32::MAX (the per-index count is a
            // user-editable annotation) would otherwise loop that many times.
            return delay;
        }
        for _ in 1..failures {
            delay = delay.saturating_mul(2);
            if delay >= self.max_pod_failure_backoff {
                return self.max_pod_failure_backoff;
            }
        }
        delay
    }
}
