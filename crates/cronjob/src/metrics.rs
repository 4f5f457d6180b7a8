//! The controller's own metric, recorded through a sink the binary supplies.

/// Where the controller records its figures (the binary's Prometheus registry, or nowhere).
pub trait CronJobMetrics: Send + Sync + 'static {
    /// `cronjob_controller_job_creation_skew_duration_seconds`: from a slot's scheduled time to the
    /// creation time the API server gave its Job, for each Job the controller created.
    fn job_creation_skew(&self, seconds: f64) {
        let _ = seconds;
    }
}

/// Discards the figure (shadow mode, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCronJobMetrics;

impl CronJobMetrics for NoCronJobMetrics {}
