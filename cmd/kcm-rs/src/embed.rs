//! The controllers inside someone else's process: a test on envtest's API server, a simulator, a
//! tool. The caller brings the [`kube::Client`]; kcm-rs brings the informers and controllers the
//! binary runs, started the same way (the `controllers` table), with the binary's defaults for
//! everything the builder does not set. What the binary adds around them (HTTPS endpoints, metrics
//! export, shadow mode, `--shards`) stays in the binary.

use std::{future::Future, sync::Arc, time::Duration};

use controller::Started;
use kube::Client;
use leaderelection::{LeaderElectionConfig, LeaderElector};
use rand::Rng as _;
use thiserror::Error;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{
    client::OneClient,
    controllers::{self, ControllersError, SHUTDOWN_TIMEOUT, StartContext},
    flags::{self, Args},
    metrics::Metrics,
};

/// What starting can fail on; each names what it was given.
#[derive(Debug, Error)]
pub enum EmbedError {
    #[error(transparent)]
    Controllers(#[from] ControllersError),
    #[error("the binary's defaults do not parse: {0}")]
    Defaults(#[source] clap::Error),
    #[error("leader election on Lease {namespace}/{name}: {source}")]
    LeaderElection {
        namespace: String,
        name: String,
        #[source]
        source: leaderelection::ConfigError,
    },
    #[error("starting {controller}: {source}")]
    Start {
        controller: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// A builder for the controllers in this process. By default every workload controller kcm-rs
/// implements (`*`), in every namespace, without leader election. Where no kube-controller-manager
/// runs beside it (envtest), also name the namespace and ServiceAccount controllers and the two
/// garbage collectors, which `*` leaves out: `.controllers(["*", "namespace-controller",
/// "serviceaccount-controller", "garbage-collector-controller",
/// "pod-garbage-collector-controller"])`; they use the caller's client as it is.
///
/// ```no_run
/// # async fn f(client: kube::Client) -> Result<(), kcm_rs::EmbedError> {
/// let running = kcm_rs::ControllerManager::new(client)
///     .controllers(["deployment-controller", "replicaset-controller"])
///     .start()
///     .await?;
/// running.wait_synced().await;
/// // ... create Deployments and watch them roll out ...
/// running.shutdown().await;
/// # Ok(()) }
/// ```
///
/// With the `envtest` crate (Go's envtest through its bindings: etcd and kube-apiserver; pods still
/// need a node, as from KWOK, and a scheduler or a `nodeName`). The e2e test `envtest_rs` runs this
/// and checks that it still says the same:
///
/// ```ignore
/// let mut environment = envtest::Environment::default();
/// // The binaries from KUBEBUILDER_ASSETS (or setup-envtest's directory), not downloaded.
/// environment.binary_assets_settings.download_binary_assets = false;
/// let server = environment.create().await?;
/// // envtest's own `client()` is built on an older kube than kcm-rs: take the kubeconfig.
/// let kubeconfig = Kubeconfig::from_yaml(server.as_ref())?;
/// let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
/// let client = Client::try_from(config)?;
/// let running = kcm_rs::ControllerManager::new(client.clone())
///     .start()
///     .await?;
/// running.wait_synced().await;
/// ```
#[derive(Clone)]
pub struct ControllerManager {
    client: Client,
    /// `--controllers` entries, with its syntax (`*`, `name`, `-name`).
    controllers: Vec<String>,
    namespaces: Vec<String>,
    /// The Lease (namespace, name) to win before starting, if any.
    lease: Option<(String, String)>,
    identity: Option<String>,
    job_delays: job::JobDelays,
}

impl std::fmt::Debug for ControllerManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerManager")
            .field("controllers", &self.controllers)
            .field("namespaces", &self.namespaces)
            .field("lease", &self.lease)
            .field("job_delays", &self.job_delays)
            .finish_non_exhaustive()
    }
}

impl ControllerManager {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            controllers: vec!["*".to_owned()],
            namespaces: Vec::new(),
            lease: None,
            identity: None,
            job_delays: job::JobDelays::UPSTREAM,
        }
    }

    /// Which controllers, as `--controllers` takes them: KCM's names or aliases, `*`, `-name`.
    #[must_use]
    pub fn controllers<I, S>(mut self, entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.controllers = entries.into_iter().map(Into::into).collect();
        self
    }

    /// Watches and acts in this namespace only (repeatable), as `--namespace`; tests sharing one API
    /// server keep out of each other's way.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespaces.push(namespace.into());
        self
    }

    /// Starts only once this process holds Lease `namespace/name`, with KCM's timings; the
    /// controllers stop at once if it is lost (see [`Running::stopped`]).
    #[must_use]
    pub fn leader_election(mut self, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        self.lease = Some((namespace.into(), name.into()));
        self
    }

    /// The reportingInstance of events and the Lease holder; default `hostname_<random>`, as KCM's.
    #[must_use]
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// The Job controller's waits, for tests: a shorter pod-failure backoff and batch period than
    /// upstream's, as upstream's own integration tests set them (`--job-pod-failure-backoff` and
    /// the flags beside it).
    #[must_use]
    pub fn job_delays(mut self, delays: job::JobDelays) -> Self {
        self.job_delays = delays;
        self
    }

    /// Wins the Lease if one was asked for, then starts the informers and controllers and returns
    /// at once: [`Running::wait_synced`] waits for their caches.
    pub async fn start(self) -> Result<Running, EmbedError> {
        let mut args = Args::try_parse_flags_from(["kcm-rs", "--leader-elect=false", "--secure-port=0"])
            .map_err(EmbedError::Defaults)?;
        args.controllers = self.controllers;
        args.namespaces = self.namespaces;
        args.job_delays = self.job_delays;
        let enabled = controllers::enabled_controllers(&args.controllers)?;
        controllers::check_gates(&enabled, &args.feature_gates)?;
        controllers::check_scope(&enabled, &args.namespaces, 1)?;
        let identity = self.identity.unwrap_or_else(crate::cli::identity);
        let cancel = CancellationToken::new();
        let elector = match self.lease {
            Some((namespace, name)) => Some(elect(&self.client, namespace, name, &identity, &cancel).await?),
            None => None,
        };
        let metrics = Metrics::new();
        let factory = controllers::informer_factory(&args, self.client.clone(), &metrics);
        let clients = OneClient(self.client);
        let cx = StartContext {
            args: &args,
            factory: &factory,
            clients: &clients,
            metrics: &metrics,
            identity: &identity,
            resync_period: flags::resync_period(args.min_resync_period, rand::rng().random::<f64>()),
            shadow: None,
            start_gate: None,
            cancel: &cancel,
        };
        let started = controllers::start(&enabled, &cx).map_err(|e| EmbedError::Start {
            controller: enabled.join(","),
            source: e.into(),
        })?;
        factory.start(&cancel);
        // Leading ends after the drain (its own token), so the Lease is released only once no sync
        // of this process can still write.
        let lead = CancellationToken::new();
        let leading = elector.map(|e| {
            let (lead, controllers) = (lead.clone(), cancel.clone());
            tokio::spawn(async move {
                if e.keep_leading(&lead).await.is_err() {
                    tracing::error!("lost the Lease; stopping the controllers without draining");
                    controllers.cancel();
                } else {
                    e.release().await;
                }
            })
        });
        Ok(Running {
            cancel,
            lead,
            started,
            leading,
        })
    }
}

async fn elect(
    client: &Client,
    namespace: String,
    name: String,
    identity: &str,
    cancel: &CancellationToken,
) -> Result<Arc<LeaderElector>, EmbedError> {
    let config = LeaderElectionConfig::new(&namespace, &name, identity.to_owned());
    let e = LeaderElector::new(client.clone(), config).map_err(|source| EmbedError::LeaderElection {
        namespace,
        name,
        source,
    })?;
    let e = Arc::new(e);
    e.acquire(cancel).await;
    Ok(e)
}

/// The running controllers. Dropping it stops them without waiting; [`Running::shutdown`] lets
/// in-flight syncs finish first and releases the Lease.
#[derive(Debug)]
pub struct Running {
    /// Stops the informers and controllers.
    cancel: CancellationToken,
    /// Stops renewing the Lease and releases it.
    lead: CancellationToken,
    started: Vec<Started>,
    /// Keeps the Lease while asked to.
    leading: Option<JoinHandle<()>>,
}

/// How often [`Running::wait_synced`] and [`Running::stopped`] look.
const SYNC_POLL: Duration = Duration::from_millis(50);

impl Running {
    /// The controllers running, by KCM's names.
    pub fn controllers(&self) -> Vec<&'static str> {
        self.started.iter().map(|s| s.name).collect()
    }

    /// Whether every controller's caches have synced (the binary's `/readyz`).
    pub fn has_synced(&self) -> bool {
        self.started.iter().all(|s| (s.synced)())
    }

    /// The controllers that stopped on a panic outside their syncs (the binary's `/healthz` fails
    /// for them): they do nothing more until the process starts them again.
    pub fn crashed(&self) -> Vec<&'static str> {
        self.started
            .iter()
            .filter(|s| (s.stopped)())
            .map(|s| s.name)
            .collect()
    }

    /// Waits until [`Running::has_synced`] (never, once a controller has [`Running::crashed`]).
    pub async fn wait_synced(&self) {
        while !self.has_synced() {
            tokio::time::sleep(SYNC_POLL).await;
        }
    }

    /// Resolves once the controllers stop: the Lease was lost, [`Running::shutdown`] began, or a
    /// controller stopped on a panic ([`Running::crashed`]; the binary exits then, as KCM's process
    /// does), so that a caller waiting on it is not left waiting on a controller that does nothing.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let cancel = self.cancel.clone();
        let crashed: Vec<_> = self.started.iter().map(|s| s.stopped.clone()).collect();
        async move {
            while !crashed.iter().any(|c| c()) {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(SYNC_POLL) => {}
                }
            }
        }
    }

    /// Stops taking work, waits for in-flight syncs (at most the binary's 30 s), then releases the
    /// Lease if one was held.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        let tasks = std::mem::take(&mut self.started).into_iter().map(|s| s.task);
        if tokio::time::timeout(SHUTDOWN_TIMEOUT, futures::future::join_all(tasks))
            .await
            .is_err()
        {
            tracing::warn!(timeout = ?SHUTDOWN_TIMEOUT, "in-flight syncs did not finish in time");
        }
        self.lead.cancel();
        if let Some(l) = self.leading.take() {
            let _ = l.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.lead.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client for an address nothing listens on: what start refuses, it refuses before any request.
    fn unreachable_client() -> Client {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("a URL"));
        Client::try_from(config).expect("a client")
    }

    #[tokio::test]
    async fn an_unknown_controller_is_refused_by_name() {
        let err = ControllerManager::new(unreachable_client())
            .controllers(["deployment-controller", "statefulset-controller"])
            .start()
            .await
            .expect_err("statefulset-controller is not implemented");
        assert!(err.to_string().contains("\"statefulset-controller\""), "{err}");
    }

    #[tokio::test]
    async fn nothing_enabled_starts_nothing() {
        let running = ControllerManager::new(unreachable_client())
            .controllers([
                "-deployment-controller",
                "-job-controller",
                "-replicaset-controller",
            ])
            .start()
            .await
            .expect("an empty set starts");
        assert!(running.controllers().is_empty());
        assert!(running.has_synced());
        running.shutdown().await;
    }

    /// A controller that stops on a panic ends the wait on [`Running::stopped`], as it ends KCM's
    /// process; so does a shutdown.
    #[tokio::test(start_paused = true)]
    async fn stopped_resolves_on_a_crash_or_a_shutdown() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let running = |crashed: Arc<AtomicBool>| Running {
            cancel: CancellationToken::new(),
            lead: CancellationToken::new(),
            started: vec![Started {
                name: "job-controller",
                synced: Arc::new(|| true),
                stopped: Arc::new(move || crashed.load(Ordering::Relaxed)),
                task: tokio::spawn(async {}),
            }],
            leading: None,
        };
        let crashed = Arc::new(AtomicBool::new(false));
        let r = running(crashed.clone());
        let mut stopped = std::pin::pin!(r.stopped());
        assert!(futures::poll!(stopped.as_mut()).is_pending());
        tokio::time::sleep(SYNC_POLL * 3).await;
        assert!(futures::poll!(stopped.as_mut()).is_pending());
        crashed.store(true, Ordering::Relaxed);
        tokio::time::timeout(SYNC_POLL * 2, stopped)
            .await
            .expect("resolved by the crash");
        assert_eq!(r.crashed(), ["job-controller"]);

        let r = running(Arc::new(AtomicBool::new(false)));
        let stopped = r.stopped();
        r.shutdown().await;
        tokio::time::timeout(SYNC_POLL, stopped)
            .await
            .expect("resolved by the shutdown");
    }
}
