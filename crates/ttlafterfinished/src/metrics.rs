//! The controller's own metric, recorded through a sink the binary supplies.

/// Where the controller records its figures (the binary's Prometheus registry, or nowhere).
pub trait TtlMetrics: Send + Sync + 'static {
    /// `ttl_after_finished_controller_job_deletion_duration_seconds`: from the moment a Job's TTL
    /// ran out to its deletion.
    fn job_deletion_duration(&self, seconds: f64) {
        let _ = seconds;
    }
}

/// Discards the figure (shadow mode, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTtlMetrics;

impl TtlMetrics for NoTtlMetrics {}
