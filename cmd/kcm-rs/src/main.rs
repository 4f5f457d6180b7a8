//! kcm-rs: a kube-controller-manager for the workload controllers, in Rust.
//!
//! Start-up follows kube-controller-manager: connect, serve the health and metrics endpoints, win the
//! leader election, then start the enabled controllers on shared informers. Losing the lease stops
//! every controller and exits non-zero; SIGTERM/SIGINT stops taking work, lets in-flight syncs finish
//! (bounded), releases the lease and exits 0.
#![forbid(unsafe_code)]

mod client;
mod controllers;
mod flags;
mod metrics;
mod server;

use std::{net::SocketAddr, process::ExitCode, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::Parser;
use controller::shadow::ShadowState;
use flags::{Args, LeaderElectMode, LoggingFormat, ShadowPerturbation};
use informer::SharedInformerFactory;
use leaderelection::{LeaderElectionConfig, LeaderElector, LeaderForLife};
use metrics::{ControllerLabel, Metrics, NameLabel};
use rand::Rng as _;
use replicaset::{ReplicaSetController, ReplicaSetOptions};
use server::Health;
use tokio_util::sync::CancellationToken;

/// Controllers this build implements.
const IMPLEMENTED: &[&str] = &["replicaset-controller"];
/// How long in-flight syncs may take to finish after a shutdown or a lost lease.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    init_logging(&args);
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
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::env::var_os("NO_COLOR").is_none());
    match args.logging_format {
        LoggingFormat::Text => builder.init(),
        LoggingFormat::Json => builder.json().init(),
    }
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let enabled = controllers::enabled_controllers(&args.controllers)?;
    let config = client::config(&args).await?;
    let server_url = config.cluster_url.clone();
    let client = client::client(config, args.kube_api_qps, args.kube_api_burst, args.shadow)?;
    let version = client
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
    let server = (args.secure_port != 0).then(|| {
        let addr = SocketAddr::new(args.bind_address, args.secure_port);
        tokio::spawn(server::serve(
            addr,
            health.clone(),
            metrics.clone(),
            shadow.clone(),
            server_cancel.clone(),
        ))
    });

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
                let e = Arc::new(LeaderElector::new(client.clone(), cfg).context("leader election flags")?);
                health.set_elector(e.clone());
                if !e.acquire(&cancel).await {
                    return Ok(ExitCode::SUCCESS);
                }
                Some(e)
            }
            LeaderElectMode::ForLife => {
                let lock = LeaderForLife::from_env(client.clone(), &args.leader_elect_resource_name)?;
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
    let factory = SharedInformerFactory::new(client.clone())
        .with_namespaces(args.namespaces.clone())
        .with_metrics(Arc::new(metrics.clone()));
    let mut running = Vec::new();
    if enabled.contains(&"replicaset-controller") {
        let options = ReplicaSetOptions {
            workers: args.concurrent_replicaset_syncs,
            ignore_min_ready_seconds: args.shadow_perturb == Some(ShadowPerturbation::IgnoreMinReadySeconds),
            instance: identity.clone(),
            ..ReplicaSetOptions::default()
        };
        match &shadow {
            Some(state) => {
                let c =
                    ReplicaSetController::shadow(&factory, client.clone(), state.clone(), options, &metrics);
                running.push(spawn_replicaset(&health, Arc::new(c), &controllers_cancel));
            }
            None => {
                let c = ReplicaSetController::new(&factory, client.clone(), options, &metrics);
                running.push(spawn_replicaset(&health, Arc::new(c), &controllers_cancel));
            }
        }
        tracing::info!(shadow = args.shadow, "started replicaset-controller");
    }
    if running.is_empty() {
        tracing::warn!(implemented = ?IMPLEMENTED, "no implemented controller is enabled; idling until stopped");
    }
    factory.start(&controllers_cancel);

    let outcome = match &elector {
        Some(e) => e.keep_leading(&cancel).await,
        None => {
            cancel.cancelled().await;
            Ok(())
        }
    };
    tracing::info!("stopping controllers");
    controllers_cancel.cancel();
    let drained = tokio::time::timeout(SHUTDOWN_TIMEOUT, futures::future::join_all(running)).await;
    if drained.is_err() {
        tracing::warn!(timeout = ?SHUTDOWN_TIMEOUT, "in-flight syncs did not finish in time");
    }
    leader_status(0);
    let code = match outcome {
        Err(lost) => {
            tracing::error!("{lost}; exiting");
            ExitCode::FAILURE
        }
        Ok(()) => {
            if let Some(e) = &elector
                && e.config().release_on_cancel
            {
                e.release().await;
            }
            ExitCode::SUCCESS
        }
    };
    server_cancel.cancel();
    if let Some(s) = server {
        match s.await {
            Ok(Err(e)) => tracing::error!("serving endpoints: {e:#}"),
            Err(e) => tracing::error!("endpoint server task: {e}"),
            Ok(Ok(())) => {}
        }
    }
    Ok(code)
}

fn spawn_replicaset<P: controller::PodControl>(
    health: &Health,
    c: Arc<ReplicaSetController<P>>,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let synced = c.clone();
    health.add_controller("replicaset-controller", move || synced.has_synced());
    tokio::spawn(c.run(cancel.clone()))
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
