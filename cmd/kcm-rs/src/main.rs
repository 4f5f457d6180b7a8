//! kcm-rs: a kube-controller-manager for the workload controllers, in Rust.
//!
//! This build has no controller implemented yet: it validates its flags, connects to the API server,
//! reports which of the requested controllers it could run, and exits. Controllers plug in here as
//! they land (see the project's issues).
#![forbid(unsafe_code)]

mod controllers;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Controllers this build actually implements. Empty until the ReplicaSet controller lands.
const IMPLEMENTED: &[&str] = &[];

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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
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

    let runnable: Vec<_> = enabled.iter().filter(|c| IMPLEMENTED.contains(c)).collect();
    let missing: Vec<_> = enabled.iter().filter(|c| !IMPLEMENTED.contains(c)).collect();
    println!(
        "kcm-rs: connected to {server} (Kubernetes {})",
        version.git_version
    );
    println!("kcm-rs: controllers requested: {enabled:?}");
    println!("kcm-rs: controllers available in this build: {IMPLEMENTED:?}");
    if !missing.is_empty() {
        println!("kcm-rs: not implemented yet, so not running: {missing:?}");
    }
    if runnable.is_empty() {
        println!("kcm-rs: nothing to run; exiting");
    }
    Ok(())
}
