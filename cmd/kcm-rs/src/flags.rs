//! Command-line flags, with kube-controller-manager's names and defaults.

use std::{net::IpAddr, path::PathBuf, time::Duration};

use clap::{ArgAction, Parser, ValueEnum};

use crate::controllers::DEFAULT_CONTROLLERS;

/// KCM's `--concurrent-*-syncs` default.
pub const DEFAULT_CONCURRENT_SYNCS: usize = 5;
/// KCM's `--kube-api-qps` default (controller-manager specific; client-go's is 5).
pub const DEFAULT_KUBE_API_QPS: f64 = 20.0;
/// KCM's `--kube-api-burst` default.
pub const DEFAULT_KUBE_API_BURST: u32 = 30;
/// KCM's `--secure-port` default.
pub const DEFAULT_SECURE_PORT: u16 = 10257;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoggingFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LeaderElectMode {
    /// client-go's leader election with a Lease that the leader renews; fails over when it expires.
    Lease,
    /// The lock is owned by the leader's Pod and is garbage-collected with it; no failover by time.
    ForLife,
}

/// Deliberate errors for testing shadow mode (not for production use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShadowPerturbation {
    /// Plan as if every ReplicaSet had minReadySeconds 0.
    IgnoreMinReadySeconds,
}

/// The Kubernetes controller manager for the workload controllers (Deployment, ReplicaSet, Job),
/// in Rust. It runs the controllers that are enabled and implemented, behind one leader election,
/// and serves /healthz, /livez, /readyz and /metrics.
#[derive(Debug, Parser)]
#[command(name = "kcm-rs", version, about, long_about = None, max_term_width = 110, args_override_self = true)]
pub struct Args {
    /// Path to kubeconfig file with authorization and master location information. Without it:
    /// in-cluster configuration, then $KUBECONFIG, then ~/.kube/config.
    #[arg(long, value_name = "PATH", help_heading = "Generic flags")]
    pub kubeconfig: Option<PathBuf>,

    /// The address of the Kubernetes API server (overrides any value in kubeconfig).
    #[arg(long, value_name = "URL", help_heading = "Generic flags")]
    pub master: Option<String>,

    /// A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the
    /// controller named 'foo', '-foo' disables the controller named 'foo'. The first item for a
    /// particular name wins. All controllers: deployment-controller, job-controller,
    /// replicaset-controller (aliases deployment, job, replicaset).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_CONTROLLERS, help_heading = "Generic flags")]
    pub controllers: Vec<String>,

    /// QPS to use while talking with the Kubernetes API server.
    #[arg(long, default_value_t = DEFAULT_KUBE_API_QPS, value_parser = positive_f64, help_heading = "Generic flags")]
    pub kube_api_qps: f64,

    /// Burst to use while talking with the Kubernetes API server.
    #[arg(long, default_value_t = DEFAULT_KUBE_API_BURST, value_parser = at_least_one_u32, help_heading = "Generic flags")]
    pub kube_api_burst: u32,

    /// Limit every informer to this namespace (repeatable). Default: all namespaces.
    #[arg(long = "namespace", value_name = "NAMESPACE", help_heading = "Generic flags")]
    pub namespaces: Vec<String>,

    /// The number of deployment objects that are allowed to sync concurrently.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = at_least_one, help_heading = "Controller flags")]
    pub concurrent_deployment_syncs: usize,

    /// The number of replica sets that are allowed to sync concurrently. Larger number = more
    /// responsive replica management, but more CPU (and network) load.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = at_least_one, help_heading = "Controller flags")]
    pub concurrent_replicaset_syncs: usize,

    /// The number of job objects that are allowed to sync concurrently.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = at_least_one, help_heading = "Controller flags")]
    pub concurrent_job_syncs: usize,

    /// The IP address on which to serve /healthz, /livez, /readyz and /metrics.
    #[arg(long, default_value = "0.0.0.0", help_heading = "Serving flags")]
    pub bind_address: IpAddr,

    /// The port on which to serve those endpoints (plain HTTP: kcm-rs does not terminate TLS yet). 0 disables serving.
    #[arg(long, default_value_t = DEFAULT_SECURE_PORT, help_heading = "Serving flags")]
    pub secure_port: u16,

    /// Start a leader election client and gain leadership before executing the main loop.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", help_heading = "Leader election flags")]
    pub leader_elect: bool,

    /// How non-leader candidates wait after observing a leadership renewal before trying to take over.
    #[arg(long, default_value = "15s", value_parser = go_duration, help_heading = "Leader election flags")]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps trying to renew its leadership before it stops leading.
    #[arg(long, default_value = "10s", value_parser = go_duration, help_heading = "Leader election flags")]
    pub leader_elect_renew_deadline: Duration,

    /// How long clients wait between attempts to acquire and renew leadership.
    #[arg(long, default_value = "2s", value_parser = go_duration, help_heading = "Leader election flags")]
    pub leader_elect_retry_period: Duration,

    /// The name of the Lease object used for locking.
    #[arg(long, default_value = "kcm-rs", help_heading = "Leader election flags")]
    pub leader_elect_resource_name: String,

    /// The namespace of the Lease object used for locking.
    #[arg(long, default_value = "kube-system", help_heading = "Leader election flags")]
    pub leader_elect_resource_namespace: String,

    /// Release the lease on SIGTERM/SIGINT so that another replica takes over at once. On by
    /// default in kcm-rs (kube-controller-manager's default is false).
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", help_heading = "Leader election flags")]
    pub leader_elect_release_on_cancel: bool,

    /// lease: client-go's renewed Lease; for-life: a lock owned by the leader's Pod (needs POD_NAME and POD_NAMESPACE).
    #[arg(
        long,
        value_enum,
        default_value = "lease",
        help_heading = "Leader election flags"
    )]
    pub leader_elect_mode: LeaderElectMode,

    /// Run read-only beside upstream's controllers: compute every plan and status, never write, and
    /// report where they disagree with what upstream did (metric, log, /debug/shadow).
    #[arg(long, default_value_t = false, help_heading = "Shadow mode flags")]
    pub shadow: bool,

    /// How long an object must stay unchanged before a disagreement about it is reported.
    #[arg(long, default_value = "10s", value_parser = go_duration, help_heading = "Shadow mode flags")]
    pub shadow_settle_time: Duration,

    /// Testing only: make kcm-rs deliberately wrong, to check that shadow mode reports it.
    #[arg(long, value_enum, hide = true)]
    pub shadow_perturb: Option<ShadowPerturbation>,

    /// Number for the log level verbosity (0-2: info, 3-4: debug, 5 and up: trace). RUST_LOG overrides it.
    #[arg(short = 'v', long = "v", default_value_t = 2, help_heading = "Logging flags")]
    pub verbosity: u8,

    /// Sets the log format.
    #[arg(long, value_enum, default_value = "text", help_heading = "Logging flags")]
    pub logging_format: LoggingFormat,
}

fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("must be an integer of at least 1, not {s:?}")),
    }
}

fn at_least_one_u32(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("must be an integer of at least 1, not {s:?}")),
    }
}

fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(n),
        _ => Err(format!("must be a number greater than 0, not {s:?}")),
    }
}

/// A Go duration such as `15s`, `1m30s`, `500ms` or `2h`.
pub fn go_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?} (use Go syntax such as 15s, 1m30s, 500ms)");
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(go_duration("15").is_err());
        assert!(go_duration("s").is_err());
    }

    #[test]
    fn defaults_are_kube_controller_managers() {
        let a = Args::try_parse_from(["kcm-rs"]).unwrap();
        assert_eq!((a.kube_api_qps, a.kube_api_burst), (20.0, 30));
        assert_eq!(
            (
                a.concurrent_replicaset_syncs,
                a.concurrent_deployment_syncs,
                a.concurrent_job_syncs
            ),
            (5, 5, 5)
        );
        assert!(a.leader_elect);
        assert_eq!(a.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(a.secure_port, 10257);
    }

    #[test]
    fn bad_values_name_the_flag() {
        let err = Args::try_parse_from(["kcm-rs", "--concurrent-replicaset-syncs=0"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--concurrent-replicaset-syncs"), "{err}");
        let err = Args::try_parse_from(["kcm-rs", "--kube-api-qps=-1"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--kube-api-qps"), "{err}");
        let a = Args::try_parse_from(["kcm-rs", "--leader-elect=false", "--namespace=a", "--namespace=b"])
            .unwrap();
        assert!(!a.leader_elect);
        assert_eq!(a.namespaces, ["a", "b"]);
    }
}
