//! The one HTTP transport that every client built from a configuration shares, as client-go's
//! transport cache gives every clientset of kube-controller-manager the same `http.Transport`: one
//! TLS connection to the API server, HTTP/2, each request and watch a stream on it.
//!
//! kube's own `ClientBuilder::try_from(Config)` offers only HTTP/1.1 and a connection pool per client,
//! so a burst of a few hundred pod creates opened as many TLS connections, each with a handshake on
//! both sides, and every client kept its own idle ones. This module builds the layers kube builds
//! (base URI, credentials, extra headers, over a rustls connector made from the same configuration)
//! around a hyper client that offers `h2` by ALPN, falls back to HTTP/1.1 where the server does not
//! take it, checks an HTTP/2 connection's health with pings as client-go does, and bounds a
//! connection's set-up (`crate::connect_timeout`), through the proxy client-go would use
//! (`crate::proxy`: an HTTP CONNECT tunnel or SOCKS5, hyper-util's connectors). Retries live above each client's token bucket and
//! write fence (`crate::retry`); the one hyper makes itself, of a request it took back unsent from a
//! connection that closed, is off for a sharded replica's transport, whose stalled connections must
//! fail every request they hold (`crate::stall`).

use std::time::Duration;

use http::{HeaderValue, Request, Response, Uri, uri::Scheme};
use hyper::{
    body::Incoming,
    rt::{Read, Write},
};
use hyper_rustls::{FixedServerNameResolver, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{
        Client as HyperClient,
        connect::{
            Connection, HttpConnector,
            proxy::{SocksV5, Tunnel},
        },
    },
    rt::{TokioExecutor, TokioTimer},
};
use kube::client::{Body, ConfigExt as _};

use crate::{
    connect_timeout::{CONNECT_TIMEOUT, ConnectTimeout},
    proxy::{self, ProxyError, Route},
    stall::StallGuard,
};
use rustls::pki_types::{InvalidDnsNameError, ServerName};
use tower::{
    BoxError, ServiceBuilder, ServiceExt as _,
    util::{BoxCloneSyncService, MapRequest},
};

/// How long an HTTP/2 connection may read nothing before a ping checks it (client-go:
/// `ReadIdleTimeout`, `readIdleTimeoutSeconds()` in apimachinery's pkg/util/net/http.go). A watch
/// on a connection that died without a FIN would otherwise wait for the kernel's TCP timeout.
pub const HTTP2_READ_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long that ping may go unanswered before the connection is closed and every stream on it fails
/// (client-go: `PingTimeout`, `pingTimeoutSeconds()`, same file).
pub const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(15);
/// Dial timeout and TCP keep-alive period (client-go transport/cache.go: `net.Dialer{Timeout: 30s,
/// KeepAlive: 30s}`).
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// A stream's receive window: what one watch may have in flight before its reader takes it (Go's
/// HTTP/2 transport: `transportDefaultStreamFlow`, 4 MiB).
pub const HTTP2_STREAM_WINDOW: u32 = 4 << 20;
/// The connection's receive window (Go: `transportDefaultConnFlow`, 1 GiB). Large, so that one slow
/// watch filling its own window never holds back the lease renewal or another informer's stream.
pub const HTTP2_CONNECTION_WINDOW: u32 = 1 << 30;

/// A clonable handle on the shared transport with kube's credential and addressing layers on top;
/// clones share the connection.
pub type Transport = BoxCloneSyncService<Request<Body>, Response<Incoming>, BoxError>;

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    #[error("tls-server-name {name:?} is not a DNS name or IP address: {source}")]
    ServerName {
        name: String,
        source: InvalidDnsNameError,
    },
}

/// The transport for `config`: its server, CA, client certificate or token, `tls-server-name` and
/// impersonation headers, as kube would apply them, through the proxy `crate::proxy` picks (the
/// configuration's `proxy_url`, else the environment's). With `stall`, its connections stop writing
/// once the process stalled (`crate::stall`): a sharded replica's.
pub fn shared(config: &kube::Config, stall: Option<&StallGuard>) -> Result<Transport, TransportError> {
    let kubeconfig_proxy = config.proxy_url.as_ref().map(ToString::to_string);
    let route = proxy::route(kubeconfig_proxy.as_deref(), &config.cluster_url, |name| {
        std::env::var(name).ok()
    })?;
    if let Some(proxy) = route.proxy() {
        tracing::info!(server = %config.cluster_url, %proxy, "connecting to the API server through a proxy");
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(DIAL_TIMEOUT));
    http.set_keepalive(Some(TCP_KEEPALIVE));
    let client = match stall {
        None => through(http, &route, config, true)?,
        Some(guard) => through(guard.connector(http), &route, config, false)?,
    };

    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .service(client);
    Ok(BoxCloneSyncService::new(service.map_err(BoxError::from)))
}

/// The client whose connections `tcp` opens, through `route`'s proxy; `resend_unsent` as for
/// [`hyper_client`].
fn through<T>(
    tcp: T,
    route: &Route,
    config: &kube::Config,
    resend_unsent: bool,
) -> Result<Transport, TransportError>
where
    T: tower::Service<Uri, Error: std::error::Error + Send + Sync + 'static, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static,
    T::Response: Read + Write + Connection + Unpin + Send + 'static,
{
    Ok(match route {
        Route::Direct => over_tls(tcp, config, resend_unsent)?,
        Route::Tunnel { proxy, auth } if proxy.scheme() == Some(&Scheme::HTTPS) => {
            // TLS to the proxy too, verified as client-go's transport verifies it: with the
            // configuration's CA.
            let to_proxy = HttpsConnectorBuilder::new()
                .with_tls_config(config.rustls_client_config()?)
                .https_only()
                .enable_http1()
                .wrap_connector(tcp);
            over_tls(tunnel(proxy, auth, to_proxy), config, resend_unsent)?
        }
        Route::Tunnel { proxy, auth } => over_tls(tunnel(proxy, auth, tcp), config, resend_unsent)?,
        Route::Socks { proxy, auth } => {
            let mut socks = SocksV5::new(proxy.clone(), tcp).local_dns(false);
            if let Some((user, pass)) = auth {
                socks = socks.with_auth(user.clone(), pass.clone());
            }
            over_tls(ported(socks), config, resend_unsent)?
        }
    })
}

fn tunnel<C>(proxy: &Uri, auth: &Option<HeaderValue>, connector: C) -> WithPort<Tunnel<C>> {
    let tunnel = Tunnel::new(proxy.clone(), connector);
    ported(match auth {
        Some(auth) => tunnel.with_auth(auth.clone()),
        None => tunnel,
    })
}

/// A proxy connector given its target with the port spelt out: hyper-util's tunnels take a target
/// without one for port 443, an `http://` server's too.
type WithPort<C> = MapRequest<C, fn(Uri) -> Uri>;

fn ported<C>(proxy_connector: C) -> WithPort<C> {
    MapRequest::new(proxy_connector, with_port)
}

/// `uri` with its scheme's port when it names none.
fn with_port(uri: Uri) -> Uri {
    let (Some(authority), None) = (uri.authority(), uri.port_u16()) else {
        return uri;
    };
    let port = if uri.scheme() == Some(&Scheme::HTTP) {
        80
    } else {
        443
    };
    let mut parts = uri.clone().into_parts();
    parts.authority = format!("{}:{port}", authority.host()).parse().ok();
    Uri::from_parts(parts).unwrap_or(uri)
}

/// TLS to the API server over the connections `connector` opens, offering h2, then http/1.1, by
/// ALPN, with a bounded set-up.
fn over_tls<C>(connector: C, config: &kube::Config, resend_unsent: bool) -> Result<Transport, TransportError>
where
    C: tower::Service<Uri, Error: Into<BoxError> + Send, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static,
    C::Response: Read + Write + Connection + Unpin + Send + 'static,
{
    let mut builder = HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let server_name =
            ServerName::try_from(name.clone()).map_err(|source| TransportError::ServerName {
                name: name.clone(),
                source,
            })?;
        builder = builder.with_server_name_resolver(FixedServerNameResolver::new(server_name));
    }
    let https = builder.enable_http1().enable_http2().wrap_connector(connector);
    Ok(BoxCloneSyncService::new(hyper_client(
        ConnectTimeout::new(https, CONNECT_TIMEOUT),
        resend_unsent,
    )))
}

/// The hyper client over `https`, with client-go's HTTP/2 settings; `resend_unsent`: whether hyper
/// sends again, on a new connection, a request it took back unsent from one that closed.
fn hyper_client<C>(
    https: C,
    resend_unsent: bool,
) -> impl tower::Service<Request<Body>, Response = Response<Incoming>, Error = BoxError, Future: Send>
+ Clone
+ Send
+ Sync
+ 'static
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    let client: HyperClient<C, Body> = HyperClient::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .http2_keep_alive_interval(HTTP2_READ_IDLE_TIMEOUT)
        .http2_keep_alive_timeout(HTTP2_PING_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .http2_initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .http2_initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
        .retry_canceled_requests(resend_unsent)
        .build(https);
    client.map_err(BoxError::from)
}

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
