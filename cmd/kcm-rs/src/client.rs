//! The API client: configuration from the flags, client-side QPS/burst (kube's client has none), and
//! a read-only guard for shadow mode.

use std::{
    future::Future,
    num::NonZeroU32,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
    time::Duration,
};

use anyhow::Context as _;
use governor::{
    DefaultDirectRateLimiter, Quota, RateLimiter,
    clock::{Clock as _, DefaultClock},
};
use http::{Method, Request};
use kube::{
    Client,
    client::{Body, ClientBuilder},
    config::{KubeConfigOptions, Kubeconfig},
};
use tower::{Layer, Service};

use crate::flags::Args;

/// The client configuration: `--kubeconfig`, else in-cluster, `$KUBECONFIG`, `~/.kube/config`; then
/// `--master` overrides the server address.
pub async fn config(args: &Args) -> anyhow::Result<kube::Config> {
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let kc =
                Kubeconfig::read_from(path).with_context(|| format!("--kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no --kubeconfig given and none could be inferred")?,
    };
    if let Some(master) = &args.master {
        config.cluster_url = master
            .parse()
            .with_context(|| format!("--master {master:?} is not a URL"))?;
    }
    Ok(config)
}

/// A client limited to `qps` requests per second with bursts of `burst` (client-go's token bucket
/// semantics as KCM's `--kube-api-qps`/`--kube-api-burst`). With `read_only`, every request other than
/// GET fails before it leaves the process.
pub fn client(config: kube::Config, qps: f64, burst: u32, read_only: bool) -> anyhow::Result<Client> {
    let period = Duration::from_secs_f64(1.0 / qps);
    let quota = Quota::with_period(period)
        .context("--kube-api-qps is too large")?
        .allow_burst(NonZeroU32::new(burst).context("--kube-api-burst must be at least 1")?);
    let limiter = Arc::new(RateLimiter::direct(quota));
    let builder = ClientBuilder::try_from(config)?;
    let builder = builder.with_layer(&QpsLayer { limiter });
    Ok(if read_only {
        builder.with_layer(&ReadOnlyLayer).build()
    } else {
        builder.build()
    })
}

struct QpsLayer {
    limiter: Arc<DefaultDirectRateLimiter>,
}

impl<S> Layer<S> for QpsLayer {
    type Service = Qps<S>;
    fn layer(&self, inner: S) -> Qps<S> {
        Qps {
            inner,
            limiter: self.limiter.clone(),
            wait: None,
            permitted: false,
        }
    }
}

/// Waits for a token in `poll_ready`, so no request is sent beyond the rate.
pub struct Qps<S> {
    inner: S,
    limiter: Arc<DefaultDirectRateLimiter>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A token was taken for the next call.
    permitted: bool,
}

impl<S, B> Service<Request<B>> for Qps<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while !self.permitted {
            if let Some(wait) = self.wait.as_mut() {
                ready!(wait.as_mut().poll(cx));
                self.wait = None;
            }
            match self.limiter.check() {
                Ok(()) => self.permitted = true,
                Err(not_until) => {
                    let delay = not_until.wait_time_from(DefaultClock::default().now());
                    self.wait = Some(Box::pin(tokio::time::sleep(delay)));
                }
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        self.permitted = false;
        self.inner.call(req)
    }
}

struct ReadOnlyLayer;

impl<S> Layer<S> for ReadOnlyLayer {
    type Service = ReadOnly<S>;
    fn layer(&self, inner: S) -> ReadOnly<S> {
        ReadOnly { inner }
    }
}

/// Refuses every write: shadow mode has no write path, whatever the code above it does.
pub struct ReadOnly<S> {
    inner: S,
}

#[derive(Debug, thiserror::Error)]
#[error("shadow mode is read-only: refused {method} {path}")]
pub struct WriteRefused {
    method: Method,
    path: String,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> Service<Request<Body>> for ReadOnly<S>
where
    S: Service<Request<Body>>,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = tower::BoxError;
    type Future = BoxFuture<Result<S::Response, tower::BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if req.method() != Method::GET {
            let err = WriteRefused {
                method: req.method().clone(),
                path: req.uri().path().to_owned(),
            };
            return Box::pin(async move { Err(err.into()) });
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}
