//! Command-line flags, with kube-controller-manager's names and defaults.

use std::{collections::BTreeMap, ffi::OsString, path::PathBuf, time::Duration};

use clap::{ArgAction, CommandFactory as _, FromArgMatches as _, Parser, ValueEnum, error::ErrorKind};
use controller::features::{FeatureGates, Setting};

use crate::{duration::go_duration, go_int::parse_i32};

/// KCM's `--controllers` default: every controller that is enabled by default.
pub const DEFAULT_CONTROLLERS: &str = "*";
/// KCM's `--concurrent-*-syncs` default.
pub const DEFAULT_CONCURRENT_SYNCS: usize = 5;
/// KCM's `--kube-api-qps` default (controller-manager specific; client-go's is 5).
pub const DEFAULT_KUBE_API_QPS: f64 = 20.0;
/// KCM's `--kube-api-burst` default.
pub const DEFAULT_KUBE_API_BURST: i32 = 30;
/// KCM's `--kube-api-content-type` default (component-base `ClientConnectionConfiguration`).
pub const DEFAULT_KUBE_API_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// KCM's `--namespace-sync-period` default (`namespace::DEFAULT_SYNC_PERIOD`).
pub const DEFAULT_NAMESPACE_SYNC_PERIOD: &str = "5m";
/// KCM's `--min-resync-period` default (component-base `GenericControllerManagerConfiguration`).
pub const DEFAULT_MIN_RESYNC_PERIOD: &str = "12h";

/// The content types kcm-rs can read pods in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContentType {
    #[value(name = "application/vnd.kubernetes.protobuf")]
    Protobuf,
    #[value(name = "application/json")]
    Json,
}

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
#[allow(
    clippy::enum_variant_names,
    reason = "the variants are the flag's values, ignore-*"
)]
pub enum ShadowPerturbation {
    /// Plan as if every ReplicaSet had minReadySeconds 0 (replicaset-controller).
    IgnoreMinReadySeconds,
    /// Plan as if no Deployment were paused (deployment-controller).
    IgnorePaused,
    /// Plan as if no Job or CronJob were suspended (job-controller, cronjob-controller).
    IgnoreSuspend,
    /// Plan as if every Job with a TTL after finishing had one of 0 (ttl-after-finished-controller).
    IgnoreTtlSeconds,
}

/// What `--version` prints after the name: the crate's version and the commit it was built from, as
/// KCM's `--version` carries its release and (`=raw`) its gitCommit.
pub const VERSION: &str = concat!(
    "v",
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KCM_RS_GIT_COMMIT"),
    ")"
);

/// The Kubernetes controller manager for the workload controllers (Deployment, ReplicaSet, Job,
/// TTL-after-finished), in Rust. It runs the controllers that are enabled and implemented, behind one
/// leader election, and serves /healthz, /livez, /readyz and /metrics.
#[derive(Debug, Parser)]
#[command(name = "kcm-rs", version = VERSION, about, long_about = None, max_term_width = 110, args_override_self = true)]
pub struct Args {
    /// Path to kubeconfig file with authorization and master location information. Without it:
    /// in-cluster configuration, then $KUBECONFIG, then ~/.kube/config.
    #[arg(long, value_name = "PATH", value_parser = any_path, help_heading = "Generic flags")]
    pub kubeconfig: Option<PathBuf>,

    /// The address of the Kubernetes API server (overrides any value in kubeconfig).
    #[arg(long, value_name = "URL", help_heading = "Generic flags")]
    pub master: Option<String>,

    /// A list of controllers to enable (`main` replaces this text with one listing the controllers
    /// the binary registers).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_CONTROLLERS, help_heading = "Generic flags")]
    pub controllers: Vec<String>,

    /// QPS to use while talking with the Kubernetes API server. As client-go takes it: 0 is
    /// client-go's default of 5, and a negative value sets no limit.
    #[arg(long, default_value_t = DEFAULT_KUBE_API_QPS, value_parser = float32, allow_negative_numbers = true, help_heading = "Generic flags")]
    pub kube_api_qps: f64,

    /// Burst to use while talking with the Kubernetes API server. 0 is client-go's default of 10.
    #[arg(long, default_value_t = DEFAULT_KUBE_API_BURST, value_parser = go_i32, allow_negative_numbers = true, help_heading = "Generic flags")]
    pub kube_api_burst: i32,

    /// Content type of requests sent to apiserver. kcm-rs lists and watches pods in it; its other
    /// reads and its writes are JSON.
    #[arg(long, value_enum, default_value = DEFAULT_KUBE_API_CONTENT_TYPE, help_heading = "Generic flags")]
    pub kube_api_content_type: ContentType,

    /// The resync period in reflectors will be random between MinResyncPeriod and 2*MinResyncPeriod.
    /// 0 disables resyncs.
    #[arg(long, default_value = DEFAULT_MIN_RESYNC_PERIOD, value_parser = go_duration, help_heading = "Generic flags")]
    pub min_resync_period: Duration,

    /// Comma-separated Gate=true|false pairs for the gates the controllers and the endpoints read
    /// (repeatable; a later setting wins), with Kubernetes 1.36's defaults: AtomicFIFO,
    /// DeploymentReplicaSetTerminatingReplicas, GenericWorkload, JobBackoffLimitPerIndex, JobManagedBy,
    /// JobPodReplacementPolicy, JobSuccessPolicy, LogarithmicScaleDown,
    /// MutableSchedulingDirectivesForSuspendedJobs, PodDeletionCost, SidecarContainers,
    /// StaleControllerConsistencyJob, StaleControllerConsistencyReplicaSet,
    /// UnauthenticatedHTTP2DOSMitigation, WorkloadWithJob; AllAlpha and AllBeta set every alpha or beta
    /// gate not named.
    #[arg(long = "feature-gates", value_name = "GATE=BOOL,...", value_parser = gate_list, help_heading = "Generic flags")]
    pub feature_gate_settings: Vec<GateList>,

    /// `--feature-gates` resolved: set by [`Args::try_parse_flags_from`], which needs every occurrence
    /// to check the gates' dependencies.
    #[arg(skip)]
    pub feature_gates: FeatureGates,

    /// The Job controller's waits from the test-speed flags, checked against each other and
    /// `--shadow`: set by [`Args::try_parse_flags_from`].
    #[arg(skip)]
    pub job_delays: job::JobDelays,

    /// Every flag by its long name with its value as given, else its default (several values joined
    /// by `,`): what `/flagz` shows. Set by [`Args::try_parse_flags_from`].
    #[arg(skip)]
    pub flag_values: BTreeMap<String, String>,

    /// Limit every informer to this namespace (repeatable). Default: all namespaces.
    #[arg(long = "namespace", value_name = "NAMESPACE", help_heading = "Generic flags")]
    pub namespaces: Vec<String>,

    /// The number of deployment objects that are allowed to sync concurrently.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = workers, allow_negative_numbers = true, help_heading = "Controller flags")]
    pub concurrent_deployment_syncs: usize,

    /// The number of replica sets that are allowed to sync concurrently. Larger number = more
    /// responsive replica management, but more CPU (and network) load.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = workers, allow_negative_numbers = true, help_heading = "Controller flags")]
    pub concurrent_replicaset_syncs: usize,

    /// The number of replication controllers that are allowed to sync concurrently. Larger number =
    /// more responsive replica management, but more CPU (and network) load.
    #[arg(long = "concurrent-rc-syncs", default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = workers, allow_negative_numbers = true, help_heading = "Controller flags")]
    pub concurrent_rc_syncs: usize,

    /// The number of cron job objects that are allowed to sync concurrently. Larger number = more
    /// responsive jobs, but more CPU (and network) load.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = at_least_one, help_heading = "Controller flags")]
    pub concurrent_cron_job_syncs: usize,

    /// The number of job objects that are allowed to sync concurrently.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = at_least_one, help_heading = "Controller flags")]
    pub concurrent_job_syncs: usize,

    /// The number of garbage collector workers that are allowed to sync concurrently.
    #[arg(long, default_value_t = garbagecollector::DEFAULT_WORKERS, value_parser = workers, allow_negative_numbers = true, help_heading = "Controller flags")]
    pub concurrent_gc_syncs: usize,

    /// Enables the generic garbage collector. MUST be synced with the corresponding flag of the
    /// kube-apiserver.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", help_heading = "Controller flags")]
    pub enable_garbage_collector: bool,

    /// The number of namespace objects that are allowed to sync concurrently. Larger number = more
    /// responsive namespace termination, but more CPU (and network) load.
    #[arg(long, default_value_t = namespace::DEFAULT_WORKERS, value_parser = workers, allow_negative_numbers = true, help_heading = "Controller flags")]
    pub concurrent_namespace_syncs: usize,

    /// The period for syncing namespace life-cycle updates.
    #[arg(long, default_value = DEFAULT_NAMESPACE_SYNC_PERIOD, value_parser = go_duration, help_heading = "Controller flags")]
    pub namespace_sync_period: Duration,

    /// Number of terminated pods that can exist before the terminated pod garbage collector starts
    /// deleting terminated pods. If <= 0, the terminated pod garbage collector is disabled.
    #[arg(long, default_value_t = podgc::DEFAULT_TERMINATED_THRESHOLD, value_parser = go_i32, allow_negative_numbers = true, help_heading = "Controller flags")]
    pub terminated_pod_gc_threshold: i32,

    /// The number of ttl-after-finished-controller workers that are allowed to sync concurrently.
    #[arg(long, default_value_t = DEFAULT_CONCURRENT_SYNCS, value_parser = workers, allow_negative_numbers = true, help_heading = "Controller flags")]
    pub concurrent_ttl_after_finished_syncs: usize,

    #[command(flatten)]
    pub serving: crate::serving_flags::ServingFlags,

    #[command(flatten)]
    pub test_speed: crate::test_speed_flags::TestSpeedFlags,

    /// Enable profiling via web interface host:port/debug/pprof/
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", help_heading = "Debugging flags")]
    pub profiling: bool,

    /// Enable block profiling, if profiling is enabled. Accepted for KCM's command lines; a Rust
    /// process has no block profile (see the log line at start).
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", help_heading = "Debugging flags")]
    pub contention_profiling: bool,

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

    /// The type of resource object that is used for locking during leader election. Supported
    /// options are 'leases' (the only one Kubernetes 1.36 supports).
    #[arg(long, default_value = LEASES_LOCK, help_heading = "Leader election flags")]
    pub leader_elect_resource_lock: String,

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

    /// Share the work among replicas: cut the namespace-hash space into this many shards, each owned
    /// through a Lease of its own, and hold a fair share of them (Kubernetes 1.36 sharded list and
    /// watch; docs/scale-out.md). 1: one leader does everything, as kube-controller-manager. Needs
    /// --leader-elect; not with --shadow.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(informer::MAX_SHARDS)), help_heading = "Leader election flags")]
    pub shards: u32,

    /// Where to cut the namespace-hash space instead of into equal ranges: --shards minus one
    /// increasing hashes, 0x and 16 hex digits each, comma-separated. --print-shard-cuts fits them
    /// to the cluster's namespaces (docs/scale-out.md, section 5).
    /// `auto`: cuts refitted online to the namespaces present, weighted by their pods, recorded in
    /// the Lease kcm-rs-shard-cuts-<N> (docs/scale-out.md, section 5).
    #[arg(long, value_parser = ShardCuts::parse, help_heading = "Leader election flags")]
    pub shard_cuts: Option<ShardCuts>,

    /// With --shard-cuts=auto: how often one replica weighs the namespaces and refits the cuts.
    #[arg(long, default_value = "10m", value_parser = go_duration, help_heading = "Leader election flags")]
    pub shard_refit_interval: Duration,

    /// Print --shard-cuts fitted to the namespaces of the cluster, weighted by their pods, for
    /// --shards, and exit.
    #[arg(long, default_value_t = false, help_heading = "Leader election flags")]
    pub print_shard_cuts: bool,

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
    #[arg(short = 'v', long = "v", default_value_t = 2, value_parser = verbosity_level, help_heading = "Logging flags")]
    pub verbosity: u32,

    /// Sets the log format.
    #[arg(long, value_enum, default_value = "text", help_heading = "Logging flags")]
    pub logging_format: LoggingFormat,
}

/// `--leader-elect-resource-lock`'s one value (client-go `resourcelock.LeasesResourceLock`).
pub const LEASES_LOCK: &str = "leases";

/// What KCM says of any other lock type where it elects (controller-manager's generic options).
pub const LOCK_TYPE_ERROR: &str = r#"resourceLock value must be "leases""#;

/// A worker count as KCM takes it for the Deployment, ReplicaSet, ReplicationController and
/// TTL-after-finished controllers: any 32-bit integer in Go's syntax (`crate::go_int`), none of
/// them validated; zero or less starts no worker (the controller's caches sync, nothing is
/// synced). The Job and CronJob controllers' counts KCM refuses below 1 ([`at_least_one`]).
fn workers(s: &str) -> Result<usize, String> {
    parse_i32(s)
        .map(|n| usize::try_from(n).unwrap_or(0))
        .ok_or_else(|| format!("must be a 32-bit integer, not {s:?}"))
}

fn go_i32(s: &str) -> Result<i32, String> {
    parse_i32(s).ok_or_else(|| format!("must be a 32-bit integer, not {s:?}"))
}

fn at_least_one(s: &str) -> Result<usize, String> {
    match parse_i32(s).map(usize::try_from) {
        Some(Ok(n)) if n >= 1 => Ok(n),
        _ => Err(format!("must be an integer of at least 1, not {s:?}")),
    }
}

/// `-v` as component-base's logs flag reads it (`strconv.ParseUint(s, 10, 31)`): decimal digits
/// only, no sign, at most 2^31 - 1.
fn verbosity_level(s: &str) -> Result<u32, String> {
    let refused = || format!("must be a whole number below 2147483648, not {s:?}");
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refused());
    }
    s.parse::<u32>()
        .ok()
        .filter(|v| i32::try_from(*v).is_ok())
        .ok_or_else(refused)
}

/// `--secure-port` as KCM reads it: a pflag `Int` (Go's integer syntax, `crate::go_int`), then
/// k8s.io/apiserver's `SecureServingOptions.Validate` (0 to 65535, 0 turning serving off).
pub fn secure_port(s: &str) -> Result<u16, String> {
    let n = parse_i32(s).ok_or_else(|| format!("must be an integer, not {s:?}"))?;
    u16::try_from(n)
        .map_err(|_| format!("{n} must be between 0 and 65535, inclusive. 0 for turning off secure port"))
}

/// A pflag `Float32` (`strconv.ParseFloat(s, 32)`): any number a 32-bit float holds, infinities and
/// NaN included, and nothing beyond its range.
fn float32(s: &str) -> Result<f64, String> {
    // Read straight as a 32-bit float, rounded once as pflag's `strconv.ParseFloat(s, 32)` rounds;
    // a finite number beyond its range is Go's range error, where Rust would give an infinity.
    match (s.parse::<f32>(), s.parse::<f64>()) {
        (Ok(f), Ok(n)) if f.is_finite() || !n.is_finite() => Ok(f64::from(f)),
        _ => Err(format!("must be a 32-bit float, not {s:?}")),
    }
}

/// One `--feature-gates` occurrence: its settings, each already checked on its own (known gate,
/// bool value, not locked).
#[derive(Debug, Clone)]
pub struct GateList(pub Vec<Setting>);

fn gate_list(s: &str) -> Result<GateList, controller::features::FeatureGateError> {
    s.split(',')
        .filter(|e| !e.trim().is_empty())
        .map(Setting::parse)
        .collect::<Result<_, _>>()
        .map(GateList)
}

impl Args {
    /// KCM's one check of `--leader-elect-resource-lock`, made only where it elects: with
    /// `--leader-elect=false` any value passes, unused.
    pub fn resource_lock_error(&self) -> Option<&'static str> {
        (self.leader_elect && self.leader_elect_resource_lock != LEASES_LOCK).then_some(LOCK_TYPE_ERROR)
    }

    /// The command line, with `--feature-gates` resolved; on an error, prints it and exits 2.
    /// `controllers_help` is `--controllers`' text, which lists the controllers the binary registers.
    pub fn parse_flags(controllers_help: String) -> Self {
        let command = Self::command().mut_arg("controllers", |a| a.help(controllers_help));
        Self::try_parse_with(command, std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// Parses `args`, then resolves every `--feature-gates` occurrence in order into
    /// [`Args::feature_gates`] (dependencies between gates can only be checked on the whole list).
    pub fn try_parse_flags_from<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Self::try_parse_with(Self::command(), args)
    }

    fn try_parse_with<I, T>(command: clap::Command, args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let command = crate::pflag_syntax::as_pflag_reads(command);
        let args = crate::pflag_syntax::word_separators_as_dashes(
            &command,
            args.into_iter().map(Into::into).collect(),
        );
        let matches = command.clone().try_get_matches_from(args)?;
        let mut a = Self::from_arg_matches(&matches)?;
        // clientcmd reads an empty `--master` or `--kubeconfig` as not given (`BuildConfigFromFlags`
        // tests both for ""), so a manifest that leaves one empty starts KCM.
        a.master = a.master.filter(|m| !m.is_empty());
        a.kubeconfig = a.kubeconfig.filter(|p| !p.as_os_str().is_empty());
        a.flag_values = flag_values(&command, &matches);
        a.job_delays = a
            .test_speed
            .check(a.shadow)
            .map_err(|e| Self::command().error(ErrorKind::ArgumentConflict, e.to_string()))?;
        let settings: Vec<Setting> = a
            .feature_gate_settings
            .iter()
            .flat_map(|l| l.0.iter().copied())
            .collect();
        a.feature_gates = FeatureGates::from_settings(&settings).map_err(|e| {
            Self::command().error(
                ErrorKind::ValueValidation,
                format!("invalid value for '--feature-gates <GATE=BOOL,...>': {e}"),
            )
        })?;
        Ok(a)
    }
}

/// Each flag's value as the command line gave it or as it defaults, by long name (`--help` and
/// `--version` left out).
fn flag_values(command: &clap::Command, matches: &clap::ArgMatches) -> BTreeMap<String, String> {
    command
        .get_arguments()
        .filter_map(|arg| {
            let name = arg.get_long()?;
            if matches!(name, "help" | "version") {
                return None;
            }
            let value = matches
                .get_raw(arg.get_id().as_str())
                .map(|values| {
                    values
                        .map(|v| v.to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            Some((name.to_owned(), value))
        })
        .collect()
}

/// A path, empty included: pflag takes `--kubeconfig=` (read as not given), where clap's path
/// parser refuses an empty value.
fn any_path(s: &str) -> Result<PathBuf, std::convert::Infallible> {
    Ok(PathBuf::from(s))
}

/// The informers' resync period: KCM's `ResyncPeriod`, `--min-resync-period` × (1 + `jitter`) with
/// `jitter` drawn from [0, 1) once for the shared factory, so that replicas do not resync in step.
/// `None` for 0, as in client-go.
pub fn resync_period(min_resync_period: Duration, jitter: f64) -> Option<Duration> {
    let jitter = if (0.0..1.0).contains(&jitter) { jitter } else { 0.0 };
    let period = min_resync_period.as_secs_f64() * (1.0 + jitter);
    (!min_resync_period.is_zero()).then(|| Duration::try_from_secs_f64(period).unwrap_or(Duration::MAX))
}

/// What `--shard-cuts` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardCuts {
    /// These cuts, for good.
    Fixed(informer::Layout),
    /// Refitted online (`sharding`, `refit`).
    Auto,
}

impl ShardCuts {
    fn parse(value: &str) -> Result<Self, String> {
        if value == "auto" {
            return Ok(Self::Auto);
        }
        informer::Layout::parse_cuts(value)
            .map(Self::Fixed)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
#[path = "flags_tests.rs"]
mod tests;
