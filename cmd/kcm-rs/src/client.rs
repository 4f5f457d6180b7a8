//! The API clients, split as kube-controller-manager splits them: one per controller (its writes and
//! its events), one for every shared informer, one for the leader election.
//!
//! Each client has its own `--kube-api-qps`/`--kube-api-burst` token bucket and its own request
//! queue, as each client-go clientset KCM builds from its rest config has its own rate limiter: a
//! burst of pod creates then waits behind itself, not in front of the lease renewal or the watches.
//! Each names itself in its User-Agent (`kcm-rs/<name>`, then `/<identity>` with leader election
//! on), which the API server's audit log and metrics show. In shadow mode every client refuses
//! writes. (kube's client sets no rate limit and no User-Agent of its own.) All the clients of one configuration share one connection (see
//! `transport`), as KCM's clientsets share client-go's cached transport.

use std::{collections::HashMap, num::NonZeroU32, path::PathBuf, sync::Arc, time::Duration};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use http::{HeaderValue, Method, Request, header::InvalidHeaderValue, header::USER_AGENT};
use kube::{
    Client,
    client::{Body, ClientBuilder},
    config::{InClusterError, KubeconfigError},
};
use sharding::{FenceLayer, Fenced, WriteFence};
use tower::{Layer, timeout::TimeoutLayer};

use crate::{
    edit::{Edit, Edited},
    flags::Args,
    guard::{Guard, Guarded},
    qps::Qps,
    rest_metrics::{Attempts, RestClientMetrics, Timed},
    retry::{Retry, RetryLayer},
    review_retry::ReviewRetryLayer,
    serving_flags::{DELEGATION_BURST, DELEGATION_QPS, DelegationClients},
    shard_selector::SelectorLayer,
    stall::StallGuard,
    transport::{self, Transport},
};

/// What every User-Agent starts with (KCM's is `kube-controller-manager/<version> …/<name>`).
pub const USER_AGENT_PREFIX: &str = "kcm-rs";
/// The client of every shared informer (KCM: `rootClientBuilder.Client("shared-informers")`, which
/// also waits for the API server at start-up).
pub const SHARED_INFORMERS: &str = "shared-informers";
/// The leader election's client (client-go `resourcelock.NewFromKubeconfig`: `leader-election`).
pub const LEADER_ELECTION: &str = "leader-election";

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("--kubeconfig {}: {source}", path.display())]
    Kubeconfig { path: PathBuf, source: KubeconfigError },
    #[error("no --kubeconfig given, not in a cluster ({in_cluster}), and no kubeconfig: {kubeconfig}")]
    NoConfig {
        in_cluster: InClusterError,
        kubeconfig: KubeconfigError,
    },
    #[error("--master {master:?} is not a URL: {source}")]
    Master {
        master: String,
        source: http::uri::InvalidUri,
    },
    #[error("--master {master:?}: host must be a URL or a host:port pair")]
    NoHost { master: String },
    #[error("--kube-api-qps {qps} is out of range")]
    Qps { qps: f64 },
    #[error("--kube-api-burst {burst} is negative while --kube-api-qps sets a limit")]
    Burst { burst: i32 },
    #[error("client {name:?} is not a valid User-Agent: {source}")]
    UserAgent {
        name: String,
        source: InvalidHeaderValue,
    },
    #[error("the transport to {server}: {source}")]
    Transport {
        server: http::Uri,
        source: Box<crate::transport::TransportError>,
    },
}

/// The clients that review the endpoint server's requests: `--authentication-kubeconfig` and
/// `--authorization-kubeconfig` when given, else the controllers' configuration; never read-only
/// (a review is a create, also in shadow mode) and with a token bucket of their own. With
/// `--master` alone the controllers' configuration has no credentials, so in a cluster the reviews
/// go with the pod's own, as KCM's delegation reads the in-cluster configuration whatever
/// `--master` says.
pub async fn delegation_clients(args: &Args, main: &kube::Config) -> Result<DelegationClients, ClientError> {
    let anonymous_main = args.kubeconfig.is_none() && args.master.is_some();
    let client = async |path: Option<&std::path::Path>, name: &str, attempt_timeout| {
        let config = match path {
            Some(p) => crate::kubeconfig::config_from(Some(p)).await?,
            None if anonymous_main => kube::Config::incluster().unwrap_or_else(|_| main.clone()),
            None => main.clone(),
        };
        Clients::new(config, DELEGATION_QPS, DELEGATION_BURST, false)?.reviewer_for(name, attempt_timeout)
    };
    Ok(DelegationClients {
        // The TokenReview's timeout bounds its whole sequence (secure-serving); the
        // SubjectAccessReview's client bounds each attempt, as upstream's do.
        authentication: client(
            args.serving.authentication_kubeconfig.as_deref(),
            "authentication",
            None,
        )
        .await?,
        authorization: client(
            args.serving.authorization_kubeconfig.as_deref(),
            "authorization",
            Some(secure_serving::authz::ACCESS_REVIEW_TIMEOUT),
        )
        .await?,
    })
}

/// Where each controller gets its client, by name: [`Clients`] in the binary, one caller's client
/// for every name in an embedding program (`ControllerManager`).
pub trait ClientSource: Send + Sync {
    fn client_for(&self, name: &str) -> Result<Client, ClientError>;

    /// [`Self::client_for`] with `scale` times the usual rate limits, where KCM raises them for one
    /// controller. Default: the usual client.
    fn client_scaled(&self, name: &str, scale: RateScale) -> Result<Client, ClientError> {
        let _ = scale;
        self.client_for(name)
    }
}

/// Factors on `--kube-api-qps` and `--kube-api-burst` for one controller's client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateScale {
    pub qps: f64,
    pub burst: i32,
}

impl RateScale {
    /// The flags' limits, unchanged.
    pub const ONE: RateScale = RateScale { qps: 1.0, burst: 1 };
    /// The namespace controller's: it makes a discovery and a deletion per kind for every
    /// namespace, and KCM multiplies its client's QPS by 20 and burst by 100
    /// (`newNamespaceController`).
    pub const NAMESPACE_CONTROLLER: RateScale = RateScale {
        qps: 20.0,
        burst: 100,
    };
    /// The garbage collector's: each deletion takes two requests, so KCM doubles its metadata
    /// client's QPS (`newGarbageCollectorController`; the burst stays).
    pub const GARBAGE_COLLECTOR: RateScale = RateScale { qps: 2.0, burst: 1 };
}

impl ClientSource for Clients {
    fn client_for(&self, name: &str) -> Result<Client, ClientError> {
        Clients::client_for(self, name)
    }

    fn client_scaled(&self, name: &str, scale: RateScale) -> Result<Client, ClientError> {
        Clients::client_scaled(self, name, scale)
    }
}

/// The caller's own client for every controller: its rate limits, User-Agent and middleware are the
/// caller's to choose.
#[derive(Clone)]
pub struct OneClient(pub Client);

impl ClientSource for OneClient {
    fn client_for(&self, _name: &str) -> Result<Client, ClientError> {
        Ok(self.0.clone())
    }
}

/// Builds the named clients from one configuration and the client flags.
#[derive(Clone)]
pub struct Clients {
    config: kube::Config,
    /// The connection every client built here shares (client-go's transport cache).
    transport: Transport,
    /// `--kube-api-qps` and `--kube-api-burst`, checked.
    qps: f64,
    burst: i32,
    read_only: bool,
    /// Sharded: the write fence every controller client checks.
    fence: Option<Arc<WriteFence>>,
    /// The replica identity the User-Agents carry when leader election is on, so that the audit
    /// log tells replicas apart.
    identity: Option<String>,
    /// The clients made so far by name: a controller started once per shard keeps one token bucket.
    made: Arc<parking_lot::Mutex<HashMap<String, Client>>>,
    /// What every client built here counts, for `/metrics`.
    rest: Arc<RestClientMetrics>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("server", &self.config.cluster_url)
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Clients {
    /// Clients limited to `qps` requests per second with bursts of `burst` each (client-go's token
    /// bucket, as KCM's `--kube-api-qps`/`--kube-api-burst`). With `read_only`, every request other
    /// than GET fails before it leaves the process.
    pub fn new(config: kube::Config, qps: f64, burst: i32, read_only: bool) -> Result<Self, ClientError> {
        quota(qps, burst)?;
        let transport = transport::shared(&config, None).map_err(|source| ClientError::Transport {
            server: config.cluster_url.clone(),
            source: Box::new(source),
        })?;
        Ok(Self {
            transport,
            qps,
            burst,
            read_only,
            fence: None,
            identity: None,
            made: Arc::default(),
            rest: RestClientMetrics::new(&config.cluster_url),
            config,
        })
    }

    /// The `rest_client_*` families the clients built here count in, to register for `/metrics`.
    pub fn rest_metrics(&self) -> Arc<RestClientMetrics> {
        self.rest.clone()
    }

    /// Clients of a replica sharing the work: every controller client's writes pass `fence`, and
    /// User-Agents read `kcm-rs/<name>/<identity>`.
    ///
    /// Their connections also stop writing once the process stalled (`crate::stall`): a write that
    /// passed the fence before a stall must not leave after it. Clients made before keep the old
    /// transport; the next `client_for` of a name makes a new one.
    pub fn sharded(mut self, fence: Arc<WriteFence>, identity: &str) -> Result<Self, ClientError> {
        self.transport = transport::shared(&self.config, Some(&StallGuard::start())).map_err(|source| {
            ClientError::Transport {
                server: self.config.cluster_url.clone(),
                source: Box::new(source),
            }
        })?;
        self.made.lock().clear();
        self.fence = Some(fence);
        Ok(self.named(identity))
    }

    /// Clients whose User-Agents read `kcm-rs/<name>/<identity>`: one replica among several
    /// (leader election on), whose writes an audit log should attribute.
    #[must_use]
    pub fn named(mut self, identity: &str) -> Self {
        self.identity = Some(identity.to_owned());
        self
    }

    /// The client named `name`, with User-Agent `kcm-rs/<name>` and a token bucket of its own, over
    /// the shared connection; made on first use, the same one afterwards.
    pub fn client_for(&self, name: &str) -> Result<Client, ClientError> {
        self.client_scaled(name, RateScale::ONE)
    }

    /// [`Self::client_for`], its token bucket `scale` times the flags' limits.
    pub fn client_scaled(&self, name: &str, scale: RateScale) -> Result<Client, ClientError> {
        if let Some(c) = self.made.lock().get(name) {
            return Ok(c.clone());
        }
        let layers = self.layers_with(name, scale)?;
        let client = ClientBuilder::new(self.transport.clone(), self.config.default_namespace.clone())
            .with_layer(&layers)
            .build();
        self.made.lock().insert(name.to_owned(), client.clone());
        Ok(client)
    }

    /// The client named `name` for delegated reviews: as [`Self::client_for`]'s, each attempt bounded
    /// by `attempt_timeout`, and each review sent again after a transient failure, as the API
    /// server's delegating authenticator and authorizer do (`crate::review_retry`).
    pub fn reviewer_for(&self, name: &str, attempt_timeout: Option<Duration>) -> Result<Client, ClientError> {
        let layers = self.layers_for(name)?;
        Ok(
            ClientBuilder::new(self.transport.clone(), self.config.default_namespace.clone())
                .with_layer(&layers)
                .with_layer(&tower::util::option_layer(attempt_timeout.map(TimeoutLayer::new)))
                .with_layer(&ReviewRetryLayer::default())
                .build(),
        )
    }

    /// A new client named `name` with a token bucket of its own that adds `selector` to every list
    /// and watch (one shard's informers).
    pub fn client_with(&self, name: &str, extra: SelectorLayer) -> Result<Client, ClientError> {
        let layers = self.layers_for(name)?;
        Ok(
            ClientBuilder::new(self.transport.clone(), self.config.default_namespace.clone())
                .with_layer(&layers)
                .with_layer(&extra)
                .build(),
        )
    }

    /// The middleware of the client `name`; each call makes a new token bucket.
    pub fn layers_for(&self, name: &str) -> Result<ClientLayers, ClientError> {
        self.layers_with(name, RateScale::ONE)
    }

    fn layers_with(&self, name: &str, scale: RateScale) -> Result<ClientLayers, ClientError> {
        let agent = match &self.identity {
            Some(identity) => format!("{USER_AGENT_PREFIX}/{name}/{identity}"),
            None => format!("{USER_AGENT_PREFIX}/{name}"),
        };
        // The Leases and the informers are not fenced: the one is how shards are held, the other
        // only reads.
        let fence = self
            .fence
            .clone()
            .filter(|_| name != LEADER_ELECTION && name != SHARED_INFORMERS);
        let user_agent = HeaderValue::from_str(&agent).map_err(|source| ClientError::UserAgent {
            name: name.to_owned(),
            source,
        })?;
        Ok(ClientLayers {
            user_agent,
            limiter: quota(self.qps * scale.qps, self.burst.saturating_mul(scale.burst))?
                .map(|q| Arc::new(RateLimiter::direct(q))),
            read_only: self.read_only,
            fence: FenceLayer(fence),
            rest: self.rest.clone(),
        })
    }
}

/// The QPS client-go gives a rest config whose QPS is 0 (`rest.DefaultQPS`).
pub const CLIENT_GO_DEFAULT_QPS: f64 = 5.0;
/// The burst client-go gives a rest config whose burst is 0 (`rest.DefaultBurst`).
pub const CLIENT_GO_DEFAULT_BURST: u32 = 10;

/// client-go's token bucket for a rest config of `qps` and `burst` (`rest.RESTClientFor`), after any
/// factor KCM applies: a zero QPS or burst is client-go's default, a QPS not above zero (negative,
/// NaN) sets no bucket, and so does one too high for a period of a nanosecond (`rate.Inf` included).
/// A negative burst under a bucket fails every request of client-go's at its limiter; kcm-rs refuses
/// it at start instead.
fn quota(qps: f64, burst: i32) -> Result<Option<Quota>, ClientError> {
    let qps = if qps == 0.0 { CLIENT_GO_DEFAULT_QPS } else { qps };
    if qps.is_nan() || qps < 0.0 {
        return Ok(None);
    }
    let period = Duration::try_from_secs_f64(1.0 / qps).map_err(|_| ClientError::Qps { qps })?;
    let Some(quota) = Quota::with_period(period) else {
        return Ok(None);
    };
    let burst = match u32::try_from(burst) {
        Ok(0) => CLIENT_GO_DEFAULT_BURST,
        Ok(b) => b,
        Err(_) => return Err(ClientError::Burst { burst }),
    };
    Ok(Some(quota.allow_burst(NonZeroU32::new(burst).expect("not zero"))))
}

/// One client's middleware, outermost first: the read-only guard (shadow mode), the User-Agent, the
/// retries the API server asks for, the token bucket, the write fence (sharded). The retries sit
/// above the bucket and the fence, as client-go's do, so every attempt takes a token and is checked.
#[derive(Clone)]
pub struct ClientLayers {
    user_agent: HeaderValue,
    /// `None`: no limit (a negative `--kube-api-qps`).
    limiter: Option<Arc<DefaultDirectRateLimiter>>,
    read_only: bool,
    fence: FenceLayer,
    rest: Arc<RestClientMetrics>,
}

impl std::fmt::Debug for ClientLayers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLayers")
            .field("user_agent", &self.user_agent)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl<S> Layer<S> for ClientLayers {
    type Service = ReadOnly<Timed<UserAgent<Retry<Qps<Fenced<Attempts<S>>>>>>>;
    fn layer(&self, inner: S) -> Self::Service {
        let rest = Some(self.rest.clone());
        Guarded {
            guard: ReadOnlyGuard {
                enabled: self.read_only,
            },
            inner: Timed {
                metrics: rest.clone(),
                inner: Edited {
                    edit: SetUserAgent(self.user_agent.clone()),
                    inner: RetryLayer::default().layer(Qps::new(
                        self.fence.layer(Attempts {
                            inner,
                            metrics: rest.clone(),
                        }),
                        self.limiter.clone(),
                        rest,
                    )),
                },
            },
        }
    }
}

/// Sets the User-Agent header of every request.
#[derive(Debug, Clone)]
pub struct SetUserAgent(HeaderValue);

/// A client whose requests carry [`SetUserAgent`]'s header.
pub type UserAgent<S> = Edited<S, SetUserAgent>;

impl Edit for SetUserAgent {
    fn edit<B>(&self, req: &mut Request<B>) {
        req.headers_mut().insert(USER_AGENT, self.0.clone());
    }
}

/// When enabled, refuses every write: shadow mode has no write path, whatever the code above it does.
#[derive(Debug, Clone, Copy)]
pub struct ReadOnlyGuard {
    enabled: bool,
}

/// A client whose writes [`ReadOnlyGuard`] refuses.
pub type ReadOnly<S> = Guarded<S, ReadOnlyGuard>;

#[derive(Debug, thiserror::Error)]
#[error("shadow mode is read-only: refused {method} {path}")]
pub struct WriteRefused {
    method: Method,
    path: String,
    /// Marks it as this process's refusal: nothing sends it again.
    #[source]
    refused: controller::RefusedHere,
}

impl Guard for ReadOnlyGuard {
    fn refuse(&self, req: &Request<Body>) -> Option<tower::BoxError> {
        (self.enabled && req.method() != Method::GET).then(|| {
            WriteRefused {
                method: req.method().clone(),
                path: req.uri().path().to_owned(),
                refused: controller::RefusedHere,
            }
            .into()
        })
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
