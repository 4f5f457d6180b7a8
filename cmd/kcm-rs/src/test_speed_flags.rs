//! Flags KCM does not have, for users' tests: the Job controller's waits that upstream's own
//! integration tests shorten (`test/integration/job` sets the pod-failure backoff, its cap and the
//! batch period to 100 ms), so that a test of `backoffLimit` finishes in seconds rather than the
//! 10 s, 20 s, 40 s … upstream waits between failures. The defaults are upstream's, and shadow mode,
//! which judges kcm-rs against upstream's controller, refuses any other value.

use std::time::Duration;

use job::{JobDelays, JobDelaysError};
use thiserror::Error;

use crate::duration::go_duration;

/// The help heading that marks these flags as kcm-rs's own.
const HEADING: &str = "Test-speed flags (not KCM's; for tests, never with --shadow)";

#[derive(Debug, Clone, clap::Args)]
pub struct TestSpeedFlags {
    /// The Job controller's wait before re-creating pods after the first failure, doubled per
    /// further failure (upstream's DefaultJobPodFailureBackOff).
    #[arg(long, default_value = "10s", value_parser = go_duration, help_heading = HEADING)]
    pub job_pod_failure_backoff: Duration,

    /// The longest wait before re-creating a Job's pods after failures (upstream's
    /// MaxJobPodFailureBackOff). At least --job-pod-failure-backoff.
    #[arg(long, default_value = "10m", value_parser = go_duration, help_heading = HEADING)]
    pub job_max_pod_failure_backoff: Duration,

    /// How long the Job controller gathers a Job's pod events into one sync, and the least wait
    /// before a sync that waits out a backoff (upstream's SyncJobBatchPeriod).
    #[arg(long, default_value = "1s", value_parser = go_duration, help_heading = HEADING)]
    pub job_sync_batch_period: Duration,
}

/// Why the test-speed flags are refused.
#[derive(Debug, Error)]
pub enum TestSpeedError {
    #[error("--job-pod-failure-backoff, --job-max-pod-failure-backoff: {0}")]
    JobDelays(#[from] JobDelaysError),
    #[error(
        "--shadow judges kcm-rs against upstream's controllers, so it runs on upstream's waits only: \
         leave --job-pod-failure-backoff, --job-max-pod-failure-backoff and --job-sync-batch-period \
         at their defaults"
    )]
    WithShadow,
}

impl TestSpeedFlags {
    /// The Job controller's waits, checked: a cap below the first step is refused, and so is any
    /// value but upstream's in shadow mode. Parsing the flags calls it (`Args::job_delays`).
    pub fn check(&self, shadow: bool) -> Result<JobDelays, TestSpeedError> {
        let delays = self.job_delays()?;
        if shadow && !delays.is_upstream() {
            return Err(TestSpeedError::WithShadow);
        }
        Ok(delays)
    }

    /// The Job controller's waits, unchecked against `--shadow`.
    fn job_delays(&self) -> Result<JobDelays, JobDelaysError> {
        JobDelays::new(
            self.job_pod_failure_backoff,
            self.job_max_pod_failure_backoff,
            self.job_sync_batch_period,
        )
    }
}

#[cfg(test)]
#[path = "test_speed_flags_tests.rs"]
mod tests;
