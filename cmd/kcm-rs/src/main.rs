//! kcm-rs: a kube-controller-manager for the workload controllers, in Rust.
//!
//! Start-up follows kube-controller-manager: connect, serve the health and metrics endpoints (HTTPS
//! with delegated authentication and authorization: `secure_serving`, flags in `serving_flags`), win the
//! leader election, then start the enabled controllers on shared informers. The leader election, the
//! informers and each controller talk to the API server through clients of their own (`client`), so
//! that a controller's burst of writes cannot delay the lease renewal; the clients are streams on one
//! shared HTTP/2 connection (`transport`), as KCM's are on client-go's cached transport.
//!
//! Losing the lease exits the process with status 1 at once, without draining the queues, as KCM's
//! `OnStoppedLeading` does: another replica may already lead, and every further write could race
//! with it. SIGTERM/SIGINT is the graceful path: stop taking keys, let in-flight syncs finish (at most
//! [`SHUTDOWN_TIMEOUT`]), release the lease, exit 0.
#![forbid(unsafe_code)]

mod client;
mod controllers;
mod duration;
mod flags;
mod job_metrics;
mod metrics;
mod server;
mod serving_flags;
mod transport;

use std::{future::Future, process::ExitCode, sync::Arc, time::Duration};

use anyhow::Context as _;
use client::{Clients, LEADER_ELECTION, SHARED_INFORMERS};
use controller::shadow::ShadowState;
use deployment::{DeploymentController, DeploymentOptions};
use flags::{Args, ContentType, LeaderElectMode, LoggingFormat, ShadowPerturbation};
use informer::SharedInformerFactory;
use job::{JobController, JobOptions};
use leaderelection::{LeaderElectionConfig, LeaderElector, LeaderForLife};
use metrics::{ControllerLabel, Metrics, NameLabel};
use rand::Rng as _;
use replicaset::{ReplicaSetController, ReplicaSetOptions};
use server::Health;
use tokio_util::sync::CancellationToken;

/// Controllers this build implements.
const IMPLEMENTED: &[&str] = &["deployment-controller", "job-controller", "replicaset-controller"];
/// How long in-flight syncs may take to finish after SIGTERM/SIGINT (a lost lease does not wait).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse_flags();
    init_logging(&args);
    // The crash points named in FAILPOINTS (e2e builds only; see job::failpoints).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    match run(args).await {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(args: &Args) {
    let level = match args.verbosity {
        0..=2 => "info",
        3..=4 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| level.into());
    // Colour only on a terminal: a log file, a pipe or CI's capture would keep the escape codes.
    let colour =
        std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour);
    match args.logging_format {
        LoggingFormat::Text => builder.init(),
        LoggingFormat::Json => builder.json().init(),
    }
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let enabled = controllers::enabled_controllers(&args.controllers)?;
    controllers::check_gates(&enabled, &args.feature_gates)?;
    let config = client::config(&args).await?;
    let server_url = config.cluster_url.clone();
    let config_for_delegation = config.clone();
    let clients = Clients::new(config, args.kube_api_qps, args.kube_api_burst, args.shadow)?;
    let informer_client = clients.client_for(SHARED_INFORMERS)?;
    let version = informer_client
        .apiserver_version()
        .await
        .with_context(|| format!("cannot reach the API server at {server_url}"))?;
    tracing::info!(server = %server_url, version = %version.git_version, "connected");
    let missing: Vec<_> = enabled.iter().filter(|c| !IMPLEMENTED.contains(c)).collect();
    if !missing.is_empty() {
        tracing::warn!(
            ?missing,
            "requested controllers that this build does not implement yet; not running them"
        );
    }

    let metrics = Metrics::new();
    let health = Arc::new(Health::default());
    let shadow = args.shadow.then(|| {
        let counter = metrics.shadow_divergences.clone();
        Arc::new(ShadowState::new(args.shadow_settle_time, move |d| {
            counter
                .get_or_create(&ControllerLabel {
                    controller: d.controller.clone(),
                })
                .inc();
        }))
    });
    let cancel = CancellationToken::new();
    tokio::spawn(cancel_on_signal(cancel.clone()));
    let server_cancel = CancellationToken::new();
    let delegation = client::delegation_clients(&args, &config_for_delegation).await?;
    let server = match args.serving.config(&delegation) {
        Some(c) => {
            let bound = secure_serving::SecureServer::bind(c).await?;
            Some(tokio::spawn(server::serve(
                bound,
                health.clone(),
                metrics.clone(),
                shadow.clone(),
                server_cancel.clone(),
            )))
        }
        None => None,
    };

    let identity = identity();
    tracing::info!(%identity, "identity");
    // Leader election. Shadow mode writes nothing, not even a lease, so it runs without one.
    let elector = if args.leader_elect && !args.shadow {
        match args.leader_elect_mode {
            LeaderElectMode::Lease => {
                let mut cfg = LeaderElectionConfig::new(
                    &args.leader_elect_resource_namespace,
                    &args.leader_elect_resource_name,
                    identity.clone(),
                );
                cfg.lease_duration = args.leader_elect_lease_duration;
                cfg.renew_deadline = args.leader_elect_renew_deadline;
                cfg.retry_period = args.leader_elect_retry_period;
                cfg.release_on_cancel = args.leader_elect_release_on_cancel;
                let client = clients.client_for(LEADER_ELECTION)?;
                let e = Arc::new(LeaderElector::new(client, cfg).context("leader election flags")?);
                health.set_elector(e.clone());
                if !e.acquire(&cancel).await {
                    return Ok(ExitCode::SUCCESS);
                }
                Some(e)
            }
            LeaderElectMode::ForLife => {
                let client = clients.client_for(LEADER_ELECTION)?;
                let lock = LeaderForLife::from_env(client, &args.leader_elect_resource_name)?;
                if !lock.become_leader(&cancel).await? {
                    return Ok(ExitCode::SUCCESS);
                }
                None
            }
        }
    } else {
        if args.shadow && args.leader_elect {
            tracing::info!("shadow mode: running without leader election");
        }
        None
    };
    // leader_election_master_status exists only where there is an election, as in KCM.
    let elected = args.leader_elect && !args.shadow;
    let leader_status = |v: i64| {
        if elected {
            let label = NameLabel {
                name: args.leader_elect_resource_name.clone(),
            };
            metrics.leader.get_or_create(&label).set(v);
        }
    };
    leader_status(1);

    // Controllers, on shared informers.
    let controllers_cancel = CancellationToken::new();
    let mut factory = SharedInformerFactory::new(informer_client)
        .with_namespaces(args.namespaces.clone())
        .with_metrics(Arc::new(metrics.clone()));
    if args.kube_api_content_type == ContentType::Protobuf {
        // Pods are most of what the informers receive; the other kinds stay on JSON.
        factory = factory.with_protobuf::<controller::CompactPod>();
    }
    // KCM draws the factory's resync period once, between 1x and 2x --min-resync-period.
    let resync_period = flags::resync_period(args.min_resync_period, rand::rng().random::<f64>());
    let mut running = Vec::new();
    let start = Starter {
        health: &health,
        cancel: &controllers_cancel,
        shadow: shadow.as_ref(),
    };
    if enabled.contains(&"replicaset-controller") {
        let client = clients.client_for("replicaset-controller")?;
        let options = ReplicaSetOptions {
            workers: args.concurrent_replicaset_syncs,
            ignore_min_ready_seconds: args.shadow_perturb == Some(ShadowPerturbation::IgnoreMinReadySeconds),
            instance: identity.clone(),
            features: args.feature_gates,
            resync_period,
            ..ReplicaSetOptions::default()
        };
        running.push(start.run(
            |s| ReplicaSetController::shadow(&factory, client.clone(), s, options.clone(), &metrics),
            || ReplicaSetController::new(&factory, client.clone(), options.clone(), &metrics),
        ));
        tracing::info!(shadow = args.shadow, "started replicaset-controller");
    }
    if enabled.contains(&"deployment-controller") {
        let client = clients.client_for("deployment-controller")?;
        let options = DeploymentOptions {
            workers: args.concurrent_deployment_syncs,
            instance: identity.clone(),
            resync_period,
            ignore_paused: args.shadow_perturb == Some(ShadowPerturbation::IgnorePaused),
            features: args.feature_gates,
        };
        running.push(start.run(
            |s| DeploymentController::shadow(&factory, client.clone(), s, options.clone(), &metrics),
            || DeploymentController::new(&factory, client.clone(), options.clone(), &metrics),
        ));
        tracing::info!(shadow = args.shadow, "started deployment-controller");
    }
    if enabled.contains(&"job-controller") {
        let client = clients.client_for("job-controller")?;
        let options = JobOptions {
            workers: args.concurrent_job_syncs,
            instance: identity.clone(),
            stale_controller_consistency: args.feature_gates.stale_controller_consistency_job,
            suspend_clears_start_time: args
                .feature_gates
                .mutable_scheduling_directives_for_suspended_jobs,
            resync_period,
            ignore_suspend: args.shadow_perturb == Some(ShadowPerturbation::IgnoreSuspend),
        };
        running.push(start.run(
            |s| JobController::shadow(&factory, client.clone(), s, options.clone(), &metrics),
            || {
                JobController::new(
                    &factory,
                    client.clone(),
                    options.clone(),
                    &metrics,
                    metrics.job_metrics(),
                )
            },
        ));
        tracing::info!(shadow = args.shadow, "started job-controller");
    }
    if running.is_empty() {
        tracing::warn!(implemented = ?IMPLEMENTED, "no implemented controller is enabled; idling until stopped");
    }
    factory.start(&controllers_cancel);

    match &elector {
        Some(e) => {
            if let Err(lost) = e.keep_leading(&cancel).await {
                // Another replica may lead already: not one more write, not even a drain (KCM:
                // OnStoppedLeading, klog.FlushAndExit(…, 1)). Log lines are written unbuffered.
                tracing::error!("{lost}; exiting without draining the queues");
                std::process::exit(1);
            }
        }
        None => cancel.cancelled().await,
    }
    tracing::info!("stopping controllers");
    controllers_cancel.cancel();
    let drained = tokio::time::timeout(SHUTDOWN_TIMEOUT, futures::future::join_all(running)).await;
    if drained.is_err() {
        tracing::warn!(timeout = ?SHUTDOWN_TIMEOUT, "in-flight syncs did not finish in time");
    }
    leader_status(0);
    if let Some(e) = &elector
        && e.config().release_on_cancel
    {
        e.release().await;
    }
    server_cancel.cancel();
    if let Some(s) = server {
        match s.await {
            Ok(Err(e)) => tracing::error!("serving endpoints: {e:#}"),
            Err(e) => tracing::error!("endpoint server task: {e}"),
            Ok(Ok(())) => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A controller as `main` runs it: a name for its health check, a sync state, and its workers.
trait Runnable: Send + Sync + 'static {
    const NAME: &'static str;
    fn synced(&self) -> bool;
    fn start(self: Arc<Self>, cancel: CancellationToken) -> impl Future<Output = ()> + Send + 'static;
}

impl<P: controller::PodControl> Runnable for ReplicaSetController<P> {
    const NAME: &'static str = replicaset::controller::COMPONENT;
    fn synced(&self) -> bool {
        self.has_synced()
    }
    fn start(self: Arc<Self>, cancel: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        self.run(cancel)
    }
}

impl Runnable for DeploymentController {
    const NAME: &'static str = deployment::controller::COMPONENT;
    fn synced(&self) -> bool {
        self.has_synced()
    }
    fn start(self: Arc<Self>, cancel: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        self.run(cancel)
    }
}

impl<P: controller::PodControl> Runnable for JobController<P> {
    const NAME: &'static str = job::controller::COMPONENT;
    fn synced(&self) -> bool {
        self.has_synced()
    }
    fn start(self: Arc<Self>, cancel: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        self.run(cancel)
    }
}

/// Adds the controller's health check and starts its workers.
/// Starts each controller live, or read-only in shadow mode, the same way.
struct Starter<'a> {
    health: &'a Health,
    cancel: &'a CancellationToken,
    shadow: Option<&'a Arc<ShadowState>>,
}

impl Starter<'_> {
    fn run<S: Runnable, L: Runnable>(
        &self,
        shadowed: impl FnOnce(Arc<ShadowState>) -> S,
        live: impl FnOnce() -> L,
    ) -> tokio::task::JoinHandle<()> {
        match self.shadow {
            Some(state) => spawn_controller(self.health, Arc::new(shadowed(state.clone())), self.cancel),
            None => spawn_controller(self.health, Arc::new(live()), self.cancel),
        }
    }
}

fn spawn_controller<C: Runnable>(
    health: &Health,
    c: Arc<C>,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let synced = c.clone();
    health.add_controller(C::NAME, move || synced.synced());
    tokio::spawn(c.start(cancel.clone()))
}

/// `hostname_<random>`, as kube-controller-manager builds its identity (hostname plus a UUID).
fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "kcm-rs".into());
    format!("{host}_{:032x}", rand::rng().random::<u128>())
}

async fn cancel_on_signal(cancel: CancellationToken) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("cannot listen for SIGTERM: {e}");
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down on signal");
    cancel.cancel();
}
