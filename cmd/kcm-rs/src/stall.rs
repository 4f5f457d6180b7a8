//! Writes held back across a stall of this process. The write fence checks each attempt as it goes
//! out (`sharding::FenceLayer`), but once an attempt has passed, its bytes still wait in hyper until
//! the connection's task writes them. A process stopped in between (SIGSTOP, a frozen cgroup, a VM
//! paused by its host) past its shard's term would send them on waking, after another replica took
//! the shard: the e2e suite `shard_faults` saw such writes arrive up to 4.7 s after the term ended.
//!
//! So the sharded replica's connections refuse to write once the process is found to have stalled:
//! a heartbeat task notes the monotonic clock (which runs on while the process is stopped) every
//! [`HEARTBEAT`]; a connection about to write that finds the last beat older than [`STALL_LIMIT`],
//! or that was opened before the last stall the heartbeat saw, fails the write and so closes. Every
//! request on it fails, unsent (hyper's own resend of such requests on a new connection is off for
//! this transport: `transport::shared`), and the controllers retry through the fence, which by then refuses
//! what is no longer this replica's. Whichever of the two tasks runs first after the stall, the bytes
//! do not leave. Informers re-watch from their resourceVersion on a new connection, as after any
//! dropped connection.
//!
//! A busy machine that starves the runtime for [`STALL_LIMIT`] costs a reconnection, nothing else.
//! No maintained crate wraps a hyper connector this way; the wrapper is small.

use std::{
    future::Future,
    io,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::time::Instant;
use tower::Service;

/// How often the heartbeat notes the clock.
pub const HEARTBEAT: Duration = Duration::from_millis(250);
/// A gap between beats longer than this is a stall. It is taken from the fence's margin for writes
/// in flight (docs/scale-out.md: the fence window, 10 s, plus the time a sent write takes to apply
/// must stay under the lease duration, 15 s), leaving the API server at least 3 s.
pub const STALL_LIMIT: Duration = Duration::from_secs(2);

/// The heartbeat's record, shared by every connection of the transport.
#[derive(Debug, Clone)]
pub struct StallGuard(Arc<Beats>);

#[derive(Debug)]
struct Beats {
    /// The clock's zero for the two fields below.
    base: Instant,
    /// Nanoseconds since `base` at the last beat.
    last: AtomicU64,
    /// Stalls seen so far; a connection opened before the latest one writes no more.
    stalls: AtomicU64,
}

impl StallGuard {
    /// A guard with its heartbeat running on the current runtime until the guard's last clone drops.
    pub fn start() -> Self {
        let guard = Self::beaten_at(Instant::now());
        let weak = Arc::downgrade(&guard.0);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(beats) = weak.upgrade() else { return };
                StallGuard(beats).beat(Instant::now());
            }
        });
        guard
    }

    /// A guard whose last beat was at `at`, without a heartbeat.
    fn beaten_at(at: Instant) -> Self {
        StallGuard(Arc::new(Beats {
            base: at,
            last: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
        }))
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.0.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Notes a beat at `now`, counting a stall if the last one is too old.
    fn beat(&self, now: Instant) {
        self.check(now);
        self.0.last.fetch_max(self.nanos(now), Ordering::AcqRel);
    }

    /// The number of stalls seen by `now`, counting one more if the last beat is too old.
    fn check(&self, now: Instant) -> u64 {
        let last = self.0.last.load(Ordering::Acquire);
        let gap = Duration::from_nanos(self.nanos(now).saturating_sub(last));
        if gap > STALL_LIMIT {
            // Once per stall: the first to see it moves the last beat up to now.
            if self
                .0
                .last
                .compare_exchange(last, self.nanos(now), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                tracing::warn!(
                    stalled_ms = gap.as_millis(),
                    "this process did not run for longer than the stall limit: closing its API connections so that no write queued before it leaves late"
                );
                return self.0.stalls.fetch_add(1, Ordering::AcqRel) + 1;
            }
        }
        self.0.stalls.load(Ordering::Acquire)
    }

    /// Wraps a connector: its connections refuse to write after a stall.
    pub fn connector<C>(&self, inner: C) -> StallConnector<C> {
        StallConnector {
            inner,
            guard: self.clone(),
        }
    }
}

/// A connector whose connections carry the guard.
#[derive(Debug, Clone)]
pub struct StallConnector<C> {
    inner: C,
    guard: StallGuard,
}

impl<C> Service<Uri> for StallConnector<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = StallConnection<C::Response>;
    type Error = C::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, C::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let guard = self.guard.clone();
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            let opened_after = guard.check(Instant::now());
            Ok(StallConnection {
                io,
                guard,
                opened_after,
            })
        })
    }
}

/// A connection that writes only while no stall happened since it opened.
#[derive(Debug)]
pub struct StallConnection<T> {
    io: T,
    guard: StallGuard,
    /// The stall count when it opened.
    opened_after: u64,
}

impl<T> StallConnection<T> {
    fn refuse(&self) -> Option<io::Error> {
        (self.guard.check(Instant::now()) != self.opened_after).then(|| {
            io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed after this process stalled: writes queued before the stall are not sent",
            )
        })
    }
}

impl<T: Read + Unpin> Read for StallConnection<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for StallConnection<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if let Some(e) = self.refuse() {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.refuse() {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for StallConnection<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

#[cfg(test)]
#[path = "stall_tests.rs"]
mod tests;
