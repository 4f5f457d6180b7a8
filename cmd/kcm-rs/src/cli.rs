//! The `kcm-rs` command: flags, logging, and kube-controller-manager's start-up. It lives in the
//! library, beside the modules it drives, so that the binary (`main.rs`) is one call; embedding
//! programs use [`crate::ControllerManager`] instead.
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
//! [`controllers::SHUTDOWN_TIMEOUT`]), release the lease, exit 0.
use std::{process::ExitCode, sync::Arc};

use crate::{
    client::{self, Clients, LEADER_ELECTION, SHARED_INFORMERS},
    controllers::{self, StartContext},
    flags::{self, Args, LeaderElectMode, LoggingFormat, ShardCuts},
    healthz::Health,
    leader_events::LeaderEvents,
    metric_labels::{ControllerLabel, NameLabel},
    metrics::Metrics,
    server, serving_flags, shard_host,
    verbosity::{self, Verbosity},
};
use anyhow::Context as _;
use controller::{Started, shadow::ShadowState};
use leaderelection::{LeaderElectionConfig, LeaderElector, LeaderForLife};
use rand::Rng as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The whole command: parses the flags, runs until stopped, and returns the exit status.
pub async fn main() -> ExitCode {
    let args = Args::parse_flags(controllers::help());
    let verbosity = Arc::new(init_logging(&args));
    // The crash points named in FAILPOINTS (e2e builds only; see job::failpoints).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    match run(args, verbosity).await {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs as `--v`, `--logging-format` and `RUST_LOG` say, with a filter `PUT /debug/flags/v` may
/// replace.
fn init_logging(args: &Args) -> Verbosity {
    let level = verbosity::level_of(args.verbosity);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| level.into());
    // Colour only on a terminal: a log file, a pipe or CI's capture would keep the escape codes.
    let colour =
        std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none();
    // On standard error, as klog writes KCM's; standard output carries what a command prints.
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_ansi(colour);
    match args.logging_format {
        LoggingFormat::Text => {
            let builder = builder.with_filter_reloading();
            let handle = builder.reload_handle();
            builder.init();
            Verbosity::new(move |f| handle.reload(f).map_err(|e| e.to_string()))
        }
        LoggingFormat::Json => {
            let builder = builder.json().with_filter_reloading();
            let handle = builder.reload_handle();
            builder.init();
            Verbosity::new(move |f| handle.reload(f).map_err(|e| e.to_string()))
        }
    }
}

/// How `--shards` cuts the namespace-hash space at start: equal ranges, `--shard-cuts`, or with
/// `--shard-cuts=auto` equal ranges until the first refit.
fn layout(args: &Args) -> anyhow::Result<informer::Layout> {
    match &args.shard_cuts {
        Some(ShardCuts::Fixed(l)) if l.count() != args.shards => anyhow::bail!(
            "--shard-cuts makes {} shards, --shards says {}: give one cut fewer than shards",
            l.count(),
            args.shards
        ),
        Some(ShardCuts::Fixed(l)) => Ok(l.clone()),
        Some(ShardCuts::Auto) if args.shards > 1 => Ok(informer::Layout::auto(args.shards, None)?),
        Some(ShardCuts::Auto) | None => Ok(informer::Layout::equal(args.shards)?),
    }
}

/// kube-controller-manager's start-up, step by step: connect, serve, elect, start the controllers,
/// lead until stopped, shut down.
async fn run(args: Args, verbosity: Arc<Verbosity>) -> anyhow::Result<ExitCode> {
    let started = std::time::SystemTime::now();
    let enabled = controllers::enabled_controllers(&args.controllers)?;
    if let Some(refused) = args.resource_lock_error() {
        anyhow::bail!(refused);
    }
    controllers::check_gates(&enabled, &args.feature_gates)?;
    controllers::check_scope(&enabled, &args.namespaces, args.shards)?;
    if args.shards > 1 && (args.shadow || !args.leader_elect) {
        anyhow::bail!(
            "--shards={} needs --leader-elect and cannot run with --shadow",
            args.shards
        );
    }
    let layout = layout(&args)?;
    let identity = identity();
    // Checked before connecting, which waits for the API server: a bad combination of the lease's
    // durations fails at once, as KCM's NewLeaderElector does.
    if elects_by_lease(&args) {
        lease_config(&args, &identity)
            .validate()
            .context("leader election flags")?;
    }
    let (mut clients, delegation) = connect(&args).await?;
    if args.print_shard_cuts {
        anyhow::ensure!(args.shards > 1, "--print-shard-cuts needs --shards of 2 or more");
        sharding::print_cuts(args.shards, clients.client_for(SHARED_INFORMERS)?).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let fence = (args.shards > 1).then(|| Arc::new(sharding::WriteFence::new()));
    if let Some(f) = &fence {
        clients = clients.sharded(f.clone(), &identity)?;
    } else if args.leader_elect && !args.shadow {
        clients = clients.named(&identity);
    }
    let metrics = Metrics::new();
    metrics.register_rest_client(&clients.rest_metrics());
    let health = Arc::new(Health::default());
    tokio::spawn(exit_on_crash(health.clone()));
    // As KCM's, /healthz lists the election's check from the start, before the campaign.
    if elects_by_lease(&args) && args.shards <= 1 {
        health.expect_election();
    }
    let shadow = args.shadow.then(|| shadow_state(&args, &metrics));
    let shard_status = fence.as_ref().map(|_| Arc::default());
    let cancel = CancellationToken::new();
    tokio::spawn(cancel_on_signal(cancel.clone()));
    let server_cancel = CancellationToken::new();
    let endpoints = server::Endpoints {
        health: health.clone(),
        metrics: metrics.clone(),
        shadow: shadow.clone(),
        shards: shard_status.clone(),
        profiling: args.profiling,
        verbosity: args.profiling.then_some(verbosity),
        flags: args.flag_values.clone(),
        configz: crate::configz::answer(&args),
        started,
    };
    let server = serve(&args, &delegation, endpoints, &server_cancel).await?;

    tracing::info!(%identity, "identity");
    if let (Some(fence), Some(status)) = (fence, shard_status) {
        let config = sharding::Config {
            identity: identity.clone(),
            pod: std::env::var("POD_NAME").ok(),
            namespace: args.leader_elect_resource_namespace.clone(),
            unsharded_lock: args.leader_elect_resource_name.clone(),
            lease_duration: args.leader_elect_lease_duration,
            renew_deadline: args.leader_elect_renew_deadline,
            retry_period: args.leader_elect_retry_period,
            layout,
            refit_interval: args.shard_refit_interval,
            drain_timeout: controllers::SHUTDOWN_TIMEOUT,
        };
        let caches = Arc::new(informer::WatchCaches::new(Arc::new(metrics.clone())));
        let host = Arc::new(shard_host::Host {
            resync_period: flags::resync_period(args.min_resync_period, rand::rng().random::<f64>()),
            args: Arc::new(args),
            clients,
            metrics,
            health,
            identity,
            enabled,
        });
        sharding::run(config, host, fence, caches, status, cancel).await?;
        stop_serving(server, &server_cancel).await;
        return Ok(ExitCode::SUCCESS);
    }
    // At 0 from the start on every candidate, as client-go's elector sets it when made.
    let leader_status = LeaderStatus::new(&args, &metrics);
    leader_status.set(0);
    let Some(mut leader) = elect(&args, &clients, &health, &metrics, &identity, &cancel).await? else {
        return Ok(ExitCode::SUCCESS);
    };
    leader_status.set(1);

    let controllers_cancel = CancellationToken::new();
    let factory = controllers::informer_factory(&args, clients.client_for(SHARED_INFORMERS)?, &metrics);
    let cx = StartContext {
        args: &args,
        factory: &factory,
        clients: &clients,
        metrics: &metrics,
        identity: &identity,
        // KCM draws the factory's resync period once, between 1x and 2x --min-resync-period.
        resync_period: flags::resync_period(args.min_resync_period, rand::rng().random::<f64>()),
        shadow: shadow.as_ref(),
        start_gate: None,
        cancel: &controllers_cancel,
    };
    let running = controllers::start(&enabled, &cx)?;
    for c in &running {
        let (synced, stopped) = (c.synced.clone(), c.stopped.clone());
        health.add_controller(c.name, move || synced(), move || stopped());
    }
    if running.is_empty() {
        tracing::warn!("no controller is enabled; idling until stopped");
    }
    factory.start(&controllers_cancel);

    lead(&mut leader, &cancel).await;
    shut_down(running, &controllers_cancel).await;
    leader_status.set(0);
    if let Leader::Lease { elector, events, .. } = &leader {
        events.stopped_leading(elector).await;
        if elector.config().release_on_cancel {
            elector.release().await;
        }
    }
    stop_serving(server, &server_cancel).await;
    Ok(ExitCode::SUCCESS)
}

type ServerTask = JoinHandle<Result<(), secure_serving::ServingError>>;

async fn stop_serving(server: Option<ServerTask>, cancel: &CancellationToken) {
    cancel.cancel();
    if let Some(s) = server {
        match s.await {
            Ok(Err(e)) => tracing::error!("serving endpoints: {e:#}"),
            Err(e) => tracing::error!("endpoint server task: {e}"),
            Ok(Ok(())) => {}
        }
    }
}

/// The controllers' clients (each with its own rate limits, one shared connection) and the clients
/// delegated authentication and authorization go through, after checking that the API server answers.
async fn connect(args: &Args) -> anyhow::Result<(Clients, serving_flags::DelegationClients)> {
    let config = crate::kubeconfig::config(args).await?;
    let server_url = config.cluster_url.clone();
    let clients = Clients::new(
        config.clone(),
        args.kube_api_qps,
        args.kube_api_burst,
        args.shadow,
    )?;
    let client = clients.client_for(SHARED_INFORMERS)?;
    // KCM waits 10 s only once it leads; before that its election retries for as long as the API
    // server is away. kcm-rs connects before it elects, so with an election it waits as long.
    let patience = (!args.leader_elect || args.shadow).then_some(API_SERVER_WAIT);
    wait_for_api_server(&client, patience)
        .await
        .with_context(|| format!("failed to wait for the API server at {server_url} being healthy"))?;
    let version = client
        .apiserver_version()
        .await
        .with_context(|| format!("cannot reach the API server at {server_url}"))?;
    tracing::info!(server = %server_url, version = %version.git_version, "connected");
    let delegation = client::delegation_clients(args, &config).await?;
    Ok((clients, delegation))
}

/// How long start-up without leader election waits for the API server's `/healthz` to answer `ok`,
/// asking every [`API_SERVER_POLL`]: KCM's `WaitForAPIServer` (10 s, every second), for an API
/// server started at the same time as the controller manager (kwokctl, a node's static pods).
const API_SERVER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
const API_SERVER_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Asks `/healthz` until it answers `ok`; gives up after `patience` if there is one.
async fn wait_for_api_server(
    client: &kube::Client,
    patience: Option<std::time::Duration>,
) -> anyhow::Result<()> {
    let deadline = patience.map(|p| tokio::time::Instant::now() + p);
    loop {
        let request = http::Request::get("/healthz").body(Vec::new())?;
        let last = match client.request_text(request).await {
            Ok(body) if body.trim() == "ok" => return Ok(()),
            Ok(body) => format!("API server isn't healthy: {body}"),
            // Its body lists every check; the code is what matters until it is 200.
            Err(kube::Error::Api(s)) => format!("API server isn't healthy yet: /healthz answered {}", s.code),
            Err(e) => format!("failed to get the API server's /healthz: {e}"),
        };
        if deadline.is_some_and(|d| tokio::time::Instant::now() + API_SERVER_POLL > d) {
            anyhow::bail!("{last}");
        }
        tracing::warn!("{last}; waiting a little while");
        tokio::time::sleep(API_SERVER_POLL).await;
    }
}

/// Shadow mode's record of disagreements, each counted in `kcm_rs_shadow_divergences_total`.
fn shadow_state(args: &Args, metrics: &Metrics) -> Arc<ShadowState> {
    let counter = metrics.shadow_divergences.clone();
    Arc::new(ShadowState::new(args.shadow_settle_time, move |d| {
        counter
            .get_or_create(&ControllerLabel {
                controller: d.controller.clone(),
            })
            .inc();
    }))
}

/// Starts the HTTPS endpoints unless `--secure-port=0`.
async fn serve(
    args: &Args,
    delegation: &serving_flags::DelegationClients,
    endpoints: server::Endpoints,
    cancel: &CancellationToken,
) -> anyhow::Result<Option<ServerTask>> {
    let Some(mut config) = args.serving.config(delegation) else {
        return Ok(None);
    };
    config.close_unauthenticated_http2 = args
        .feature_gates
        .enabled(controller::features::Gate::UnauthenticatedHttp2DosMitigation);
    let bound = secure_serving::SecureServer::bind(config).await?;
    if args.profiling && args.contention_profiling {
        tracing::info!(
            "--contention-profiling: no block profile in kcm-rs (Go's has no Rust counterpart); CPU profiles at /debug/pprof/profile"
        );
    }
    Ok(Some(tokio::spawn(server::serve(
        bound,
        endpoints,
        cancel.clone(),
    ))))
}

/// How this process leads once [`elect`] returns.
enum Leader {
    /// Under a lease the elector keeps renewing, while no shard Lease is claimed; the
    /// `LeaderElection` events go on that Lease.
    Lease {
        elector: Arc<LeaderElector>,
        exclusion: Box<sharding::Exclusion>,
        events: LeaderEvents,
    },
    /// With nothing to renew: no election, shadow mode, or a leader-for-life lock.
    Unchallenged,
}

/// Waits to lead; `None` when stopped first. Shadow mode writes nothing, not even a lease.
async fn elect(
    args: &Args,
    clients: &Clients,
    health: &Health,
    metrics: &Metrics,
    identity: &str,
    cancel: &CancellationToken,
) -> anyhow::Result<Option<Leader>> {
    if !args.leader_elect || args.shadow {
        if args.shadow && args.leader_elect {
            tracing::info!("shadow mode: running without leader election");
        }
        return Ok(Some(Leader::Unchallenged));
    }
    let client = clients.client_for(LEADER_ELECTION)?;
    match args.leader_elect_mode {
        LeaderElectMode::Lease => {
            let cfg = lease_config(args, identity);
            let slow_path = metrics.leader_slowpath.clone();
            let label = NameLabel {
                name: args.leader_elect_resource_name.clone(),
            };
            let e = LeaderElector::new(client.clone(), cfg)
                .context("leader election flags")?
                .on_slow_path(move || {
                    slow_path.get_or_create(&label).inc();
                });
            let elector = Arc::new(e);
            health.set_elector(elector.clone());
            let mut exclusion = Box::new(sharding::Exclusion::new(&elector, client.clone()));
            if !exclusion.acquire(&elector, cancel).await {
                return Ok(None);
            }
            let events = LeaderEvents::new(client, identity);
            events.became_leader(&elector).await;
            Ok(Some(Leader::Lease {
                elector,
                exclusion,
                events,
            }))
        }
        LeaderElectMode::ForLife => {
            let lock = LeaderForLife::from_env(client, &args.leader_elect_resource_name)?;
            Ok(lock.become_leader(cancel).await?.then_some(Leader::Unchallenged))
        }
    }
}

/// Whether the flags ask for a Lease election (shadow mode elects nothing).
fn elects_by_lease(args: &Args) -> bool {
    args.leader_elect && !args.shadow && args.leader_elect_mode == LeaderElectMode::Lease
}

/// The election the `--leader-elect-*` flags ask for.
fn lease_config(args: &Args, identity: &str) -> LeaderElectionConfig {
    let mut cfg = LeaderElectionConfig::new(
        &args.leader_elect_resource_namespace,
        &args.leader_elect_resource_name,
        identity.to_owned(),
    );
    cfg.lease_duration = args.leader_elect_lease_duration;
    cfg.renew_deadline = args.leader_elect_renew_deadline;
    cfg.retry_period = args.leader_elect_retry_period;
    cfg.release_on_cancel = args.leader_elect_release_on_cancel;
    cfg
}

/// `leader_election_master_status`, which exists only where there is an election, as in KCM.
struct LeaderStatus<'a> {
    metrics: &'a Metrics,
    name: Option<NameLabel>,
}

impl<'a> LeaderStatus<'a> {
    fn new(args: &Args, metrics: &'a Metrics) -> Self {
        let elected = args.leader_elect && !args.shadow;
        let name = elected.then(|| NameLabel {
            name: args.leader_elect_resource_name.clone(),
        });
        Self { metrics, name }
    }

    fn set(&self, v: i64) {
        if let Some(label) = &self.name {
            self.metrics.leader.get_or_create(label).set(v);
        }
    }
}

/// Leads until SIGTERM/SIGINT. A lost lease exits at once: another replica may lead already, so
/// not one more write, not even a drain (KCM: `OnStoppedLeading`, `klog.FlushAndExit(…, 1)`); log
/// lines are written unbuffered. So does a shard Lease claimed meanwhile (see `shards::Exclusion`).
async fn lead(leader: &mut Leader, cancel: &CancellationToken) {
    match leader {
        Leader::Lease {
            elector, exclusion, ..
        } => {
            let retry_period = elector.config().retry_period;
            tokio::select! {
                kept = elector.keep_leading(cancel) => if let Err(lost) = kept {
                    tracing::error!("{lost}; exiting without draining the queues");
                    std::process::exit(1);
                },
                () = exclusion.shard_claim_appears(retry_period) => {
                    tracing::error!("a replica running with --shards claimed a shard Lease while this one led; exiting without draining the queues");
                    std::process::exit(1);
                }
            }
        }
        Leader::Unchallenged => cancel.cancelled().await,
    }
}

/// How often the process looks for a controller that stopped on a panic.
const CRASH_CHECK_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// Exits once a controller has stopped on a panic outside its syncs, as KCM's process crashes on one
/// (client-go's `HandleCrash`): what restarts it then is what restarts a crashed KCM, and its Lease,
/// no longer renewed, goes to a standby replica. Nothing is drained: the controller is gone already.
async fn exit_on_crash(health: Arc<Health>) {
    loop {
        tokio::time::sleep(CRASH_CHECK_PERIOD).await;
        if let Some(name) = health.stopped() {
            tracing::error!(controller = %name, "a controller stopped on a panic; exiting");
            std::process::exit(1);
        }
    }
}

/// Stops the controllers and waits for their in-flight syncs, at most [`controllers::SHUTDOWN_TIMEOUT`].
async fn shut_down(running: Vec<Started>, cancel: &CancellationToken) {
    tracing::info!("stopping controllers");
    cancel.cancel();
    let tasks = running.into_iter().map(|c| c.task);
    if tokio::time::timeout(controllers::SHUTDOWN_TIMEOUT, futures::future::join_all(tasks))
        .await
        .is_err()
    {
        tracing::warn!(timeout = ?controllers::SHUTDOWN_TIMEOUT, "in-flight syncs did not finish in time");
    }
}

/// `hostname_<random>`, as kube-controller-manager builds its identity (hostname plus a UUID).
pub(crate) fn identity() -> String {
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
