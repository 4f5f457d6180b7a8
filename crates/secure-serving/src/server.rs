//! Putting it together: a [`Config`] is checked and bound by [`SecureServer::bind`] (every error a
//! user can make surfaces there, before any controller starts), then [`SecureServer::serve`]
//! serves a router behind the filter until cancelled.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use axum::Router;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::{
    accept::accept_loop,
    authn::{Authenticator, ClientCaSource, DynamicClientCa, TokenAuthenticator, TokenReviewer},
    authz::{AccessReviewer, Authorizer},
    cipher_suites::{suites_from, versions_from},
    error::ServingError,
    filter::{Guard, filter},
    handshake::DeferredClientCertVerifier,
    serving_cert,
};

/// `--authentication-token-webhook-cache-ttl` (k8s.io/apiserver `NewDelegatingAuthenticationOptions`).
pub const DEFAULT_TOKEN_CACHE_TTL: Duration = Duration::from_secs(10);
/// `--authorization-webhook-cache-authorized-ttl` (`NewDelegatingAuthorizationOptions`).
pub const DEFAULT_AUTHORIZED_TTL: Duration = Duration::from_secs(10);
/// `--authorization-webhook-cache-unauthorized-ttl` (`NewDelegatingAuthorizationOptions`).
pub const DEFAULT_UNAUTHORIZED_TTL: Duration = Duration::from_secs(10);
/// `--authorization-always-allow-paths`: what kubelet probes need (`NewDelegatingAuthorizationOptions`).
pub const DEFAULT_ALWAYS_ALLOW_PATHS: &str = "/healthz,/readyz,/livez";
/// ALPN protocols offered, Go's server's: HTTP/2 first.
pub const ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];

/// Everything secure serving is configured with; the binary fills it from its flags.
#[derive(Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub cert_dir: Option<PathBuf>,
    pub min_version: Option<String>,
    pub cipher_suites: Vec<String>,
    /// Where client certificates are verified against; `None`: they are not requested.
    pub client_ca: Option<ClientCaSource>,
    /// `None`: bearer tokens are ignored (the request is anonymous unless a certificate vouches).
    pub token_reviewer: Option<Arc<dyn TokenReviewer>>,
    pub token_cache_ttl: Duration,
    /// `None`: only always-allowed paths and groups are served.
    pub access_reviewer: Option<Arc<dyn AccessReviewer>>,
    pub always_allow_paths: Vec<String>,
    pub authorized_ttl: Duration,
    pub unauthorized_ttl: Duration,
    /// Close an HTTP/2 connection (GOAWAY) after answering a request that could not be
    /// authenticated, so that a client without credentials cannot keep one open for many requests
    /// (the `UnauthenticatedHTTP2DOSMitigation` gate, on by default since Kubernetes 1.29).
    pub close_unauthenticated_http2: bool,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("bind", &self.bind)
            .field("cert_file", &self.cert_file)
            .field("cert_dir", &self.cert_dir)
            .field("client_ca", &self.client_ca.is_some())
            .field("tokens", &self.token_reviewer.is_some())
            .field("access_reviews", &self.access_reviewer.is_some())
            .field("always_allow_paths", &self.always_allow_paths)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Serving on `bind` with KCM's defaults and no delegation configured.
    pub fn new(bind: SocketAddr) -> Config {
        Config {
            bind,
            cert_file: None,
            key_file: None,
            cert_dir: None,
            min_version: None,
            cipher_suites: Vec::new(),
            client_ca: None,
            token_reviewer: None,
            token_cache_ttl: DEFAULT_TOKEN_CACHE_TTL,
            access_reviewer: None,
            always_allow_paths: DEFAULT_ALWAYS_ALLOW_PATHS.split(',').map(str::to_owned).collect(),
            authorized_ttl: DEFAULT_AUTHORIZED_TTL,
            unauthorized_ttl: DEFAULT_UNAUTHORIZED_TTL,
            close_unauthenticated_http2: true,
        }
    }
}

/// A bound, configured server, not yet serving.
pub struct SecureServer {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    guard: Arc<Guard>,
    client_ca: Option<(Arc<DynamicClientCa>, ClientCaSource)>,
}

impl std::fmt::Debug for SecureServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecureServer")
            .field("listener", &self.listener)
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

impl SecureServer {
    /// Reads the certificates, builds the TLS configuration and binds the port.
    pub async fn bind(config: Config) -> Result<SecureServer, ServingError> {
        Authorizer::validate_always_allow_paths(&config.always_allow_paths)
            .map_err(ServingError::AlwaysAllowPaths)?;
        let cert = serving_cert::load(
            config.cert_file.as_deref(),
            config.key_file.as_deref(),
            config.cert_dir.as_deref(),
            config.bind.ip(),
        )?;
        let mut provider = rustls::crypto::ring::default_provider();
        provider.cipher_suites = suites_from(&config.cipher_suites, &provider.cipher_suites)
            .map_err(ServingError::CipherSuites)?;
        let versions = versions_from(config.min_version.as_deref()).map_err(ServingError::MinVersion)?;
        let builder = rustls::ServerConfig::builder_with_provider(Arc::new(provider.clone()))
            .with_protocol_versions(versions)
            .map_err(ServingError::Tls)?;
        let builder = if config.client_ca.is_some() {
            builder.with_client_cert_verifier(Arc::new(DeferredClientCertVerifier::new(&provider)))
        } else {
            builder.with_no_client_auth()
        };
        let mut tls = builder
            .with_single_cert(cert.chain, cert.key)
            .map_err(ServingError::CertKey)?;
        tls.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| ServingError::Bind {
                addr: config.bind,
                source,
            })?;
        tracing::info!(addr = %config.bind, certificate = %cert.origin, "serving securely");
        let client_ca = config
            .client_ca
            .map(|source| (Arc::new(DynamicClientCa::default()), source));
        let guard = Guard {
            authenticator: Authenticator {
                client_ca: client_ca.as_ref().map(|(ca, _)| ca.clone()),
                tokens: config
                    .token_reviewer
                    .map(|r| TokenAuthenticator::new(r, config.token_cache_ttl)),
            },
            authorizer: Authorizer::new(
                config.always_allow_paths,
                config.access_reviewer,
                config.authorized_ttl,
                config.unauthorized_ttl,
            ),
            close_unauthenticated_http2: config.close_unauthenticated_http2,
        };
        Ok(SecureServer {
            listener,
            acceptor: TlsAcceptor::from(Arc::new(tls)),
            guard: Arc::new(guard),
            client_ca,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Loads the client CA, then serves `app` behind authentication and authorization until
    /// `cancel` fires. Give `app` its routes and fallback first: the filter wraps what is there.
    pub async fn serve(self, app: Router, cancel: CancellationToken) -> Result<(), ServingError> {
        if let Some((ca, source)) = self.client_ca {
            ca.start(source, cancel.clone()).await?;
        }
        let app = app.layer(axum::middleware::from_fn_with_state(self.guard, filter));
        accept_loop(self.listener, self.acceptor, app, cancel).await;
        Ok(())
    }
}
