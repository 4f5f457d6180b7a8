//! kcm-rs: a kube-controller-manager for the workload controllers, in Rust.
//!
//! This build runs the ReplicaSet controller. Leader election, health and metrics endpoints and
//! shadow mode come with the binary's own issue; the Deployment and Job controllers with theirs.
#![forbid(unsafe_code)]

mod controllers;

use std::{path::PathBuf, sync::Arc};

use anyhow::Context as _;
use clap::Parser;
use informer::{NoopMetrics, SharedInformerFactory};
use kube::config::{KubeConfigOptions, Kubeconfig};
use replicaset::{ReplicaSetController, ReplicaSetOptions};
use tokio_util::sync::CancellationToken;

/// Controllers this build implements.
const IMPLEMENTED: &[&str] = &["replicaset-controller"];

/// kcm-rs runs the Deployment, ReplicaSet and Job controllers of kube-controller-manager.
#[derive(Debug, Parser)]
#[command(name = "kcm-rs", version, about, long_about = None)]
struct Args {
    /// Path to a kubeconfig file. Without it: in-cluster configuration, then $KUBECONFIG, then ~/.kube/config.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,

    /// A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the
    /// controller named 'foo', '-foo' disables the controller named 'foo'. The first item for a
    /// particular name wins.
    #[arg(long, value_delimiter = ',', default_value = controllers::DEFAULT_CONTROLLERS)]
    controllers: Vec<String>,

    /// The number of replica sets that are allowed to sync concurrently. Larger number = more
    /// responsive replica management, but more CPU (and network) load.
    #[arg(long, default_value_t = replicaset::DEFAULT_WORKERS, value_parser = at_least_one)]
    concurrent_replicaset_syncs: usize,
}

fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("must be an integer of at least 1, not {s:?}")),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let enabled = controllers::enabled_controllers(&args.controllers)?;

    let config = match &args.kubeconfig {
        Some(path) => {
            let kc =
                Kubeconfig::read_from(path).with_context(|| format!("--kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig given and none could be inferred")?,
    };
    let server = config.cluster_url.clone();
    let client = kube::Client::try_from(config)?;
    let version = client
        .apiserver_version()
        .await
        .with_context(|| format!("cannot reach the API server at {server}"))?;
    tracing::info!(%server, version = %version.git_version, "connected");
    let missing: Vec<_> = enabled.iter().filter(|c| !IMPLEMENTED.contains(c)).collect();
    if !missing.is_empty() {
        tracing::warn!(
            ?missing,
            "requested controllers that this build does not implement yet; not running them"
        );
    }

    let cancel = CancellationToken::new();
    let factory = SharedInformerFactory::new(client.clone());
    let mut running = Vec::new();
    if enabled.contains(&"replicaset-controller") {
        let options = ReplicaSetOptions {
            workers: args.concurrent_replicaset_syncs,
            ..ReplicaSetOptions::default()
        };
        let rs = Arc::new(ReplicaSetController::new(
            &factory,
            client.clone(),
            options,
            &NoopMetrics,
        ));
        running.push(tokio::spawn(rs.run(cancel.clone())));
        tracing::info!("started replicaset-controller");
    }
    if running.is_empty() {
        println!("kcm-rs: no implemented controller is enabled (implemented: {IMPLEMENTED:?}); exiting");
        return Ok(());
    }
    factory.start(&cancel);

    shutdown_signal().await;
    tracing::info!("shutting down");
    cancel.cancel();
    for r in running {
        r.await.context("controller task")?;
    }
    Ok(())
}

async fn shutdown_signal() {
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
