//! Leader election with a Lease (client-go `tools/leaderelection` with `resourcelock.LeaseLock`).
//!
//! The rules kept from client-go:
//! * a candidate never trusts the timestamps in the lease: it remembers the record it last read and
//!   the local time at which it last saw that record change; the lease is taken as valid until that
//!   local time plus the record's `leaseDurationSeconds` (tolerant to clock skew between machines,
//!   not to clocks running at different rates);
//! * every write is a PUT carrying the `resourceVersion` it read, so a conflict means someone else
//!   wrote first, and the write simply fails;
//! * the leader renews every retry period, and gives up leading if no renewal succeeds within the
//!   renew deadline, counted from the start of the round: an attempt still waiting for the API server
//!   at the deadline is abandoned (client-go passes the attempts a context with that timeout), so a
//!   slow API server cannot keep this process leading past it;
//! * each request has its own timeout, half the renew deadline but at least a second (client-go
//!   `resourcelock.NewFromKubeconfig`), so that one hung request leaves time for another attempt
//!   within the same round;
//! * on release the record keeps the transitions count, empties the holder and shortens the lease to
//!   one second, so the next candidate acquires at its next try.

use std::{future::Future, time::Duration};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{Api, Client, api::PostParams};
use rand::Rng as _;
use tokio::{sync::watch, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};

/// The shortest per-request timeout (client-go `resourcelock.NewFromKubeconfig`: `max(1s,
/// renewDeadline/2)`).
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// Why one request of an attempt failed. A failed attempt is only "not now", but client-go logs
/// each failure as an error, so that a Lease the RBAC does not allow, or an API server out of reach,
/// shows at the default verbosity: a warning here ([`RequestError::log`]).
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
}

impl RequestError {
    /// A conflict is another candidate's write landing first, the ordinary end of a race for an
    /// expired lease: kept at debug level, so that contested takeovers do not read as failures.
    fn log(&self, lease: &str, what: &str) {
        match self {
            Self::Api(kube::Error::Api(s)) if s.code == 409 => {
                tracing::debug!(lease, "{what}: {self}");
            }
            _ => tracing::warn!(lease, "{what}: {self}"),
        }
    }
}

/// Leadership was lost: no renewal succeeded within the renew deadline. kube-controller-manager exits
/// at this point, and so does kcm-rs.
#[derive(Debug, thiserror::Error)]
#[error("leaderelection lost: lease {namespace}/{name} not renewed within {deadline:?}")]
pub struct LeadershipLost {
    pub namespace: String,
    pub name: String,
    pub deadline: Duration,
}

/// One candidate in an election.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    /// What this candidate last saw of the lease. Invariant: `changed_at` is the local time at which
    /// `record` was first seen with its current content (or written by us).
    observed: tokio::sync::Mutex<Observed>,
    leading: watch::Sender<bool>,
    /// Called each time a holder renews by the slow path, reading the Lease before its write
    /// (client-go's `leader_election_slowpath_total`, which its metrics provider counts).
    on_slow_path: Option<Box<dyn Fn() + Send + Sync>>,
}

struct Observed {
    record: Option<LeaseSpec>,
    lease: Option<Lease>,
    changed_at: Instant,
    /// When this candidate last wrote the lease as holder.
    renewed_at: Option<Instant>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    pub fn new(client: Client, config: LeaderElectionConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: tokio::sync::Mutex::new(Observed {
                record: None,
                lease: None,
                changed_at: Instant::now(),
                renewed_at: None,
            }),
            leading: watch::channel(false).0,
            on_slow_path: None,
        })
    }

    /// Calls `hook` each time this candidate, holding the lease, renews it by the slow path: its
    /// write of the Lease as last seen failed (someone wrote since, or the request failed) and it
    /// read the Lease first. A rising count means renewals are contested or failing.
    #[must_use]
    pub fn on_slow_path(mut self, hook: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_slow_path = Some(Box::new(hook));
        self
    }

    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    pub fn is_leader(&self) -> bool {
        *self.leading.borrow()
    }

    /// Changes of leadership (true while leading).
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// Tries until this candidate holds the lease (true) or `cancel` fires (false).
    pub async fn acquire(&self, cancel: &CancellationToken) -> bool {
        tracing::info!(lease = %self.lease_name(), identity = %self.config.identity, "attempting to acquire leader lease");
        loop {
            if self.try_acquire_or_renew().await {
                tracing::info!(lease = %self.lease_name(), "successfully acquired lease");
                self.leading.send_replace(true);
                return true;
            }
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep(jittered(self.config.retry_period)) => {}
            }
        }
    }

    /// Renews every retry period until `cancel` fires (Ok) or no renewal succeeds within the renew
    /// deadline (Err: stop leading now). Returns Err at the latest one retry period plus the renew
    /// deadline after the last successful renewal, however slow the API server is. The first renewal
    /// is tried at once.
    pub async fn keep_leading(&self, cancel: &CancellationToken) -> Result<(), LeadershipLost> {
        // The first round starts at once, as client-go's renew loop (`wait.Until`) does.
        let mut first = true;
        loop {
            if !std::mem::take(&mut first) {
                tokio::select! {
                    () = cancel.cancelled() => return Ok(()),
                    () = tokio::time::sleep(self.config.retry_period) => {}
                }
            }
            let deadline = Instant::now() + self.config.renew_deadline;
            let renewed = loop {
                let attempt = tokio::select! {
                    () = cancel.cancelled() => return Ok(()),
                    a = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()) => a,
                };
                match attempt {
                    Ok(true) => break true,
                    Ok(false) => {}
                    Err(_) => break false, // still waiting for the API server at the deadline
                }
                if Instant::now() + self.config.retry_period > deadline {
                    break false;
                }
                tokio::select! {
                    () = cancel.cancelled() => return Ok(()),
                    () = tokio::time::sleep(self.config.retry_period) => {}
                }
            };
            if !renewed {
                self.leading.send_replace(false);
                tracing::error!(lease = %self.lease_name(), "failed to renew lease within the renew deadline");
                return Err(LeadershipLost {
                    namespace: self.config.namespace.clone(),
                    name: self.config.name.clone(),
                    deadline: self.config.renew_deadline,
                });
            }
        }
    }

    /// Gives the lease up if this candidate holds it (for `--leader-elect-release-on-cancel`).
    pub async fn release(&self) {
        if !self.is_leader() {
            return;
        }
        self.leading.send_replace(false);
        let give_up = Instant::now() + self.config.renew_deadline;
        while Instant::now() < give_up {
            let observed = self.observed.lock().await;
            let Some(mut lease) = observed.lease.clone() else {
                return;
            };
            drop(observed);
            let old = lease.spec.clone().unwrap_or_default();
            if old.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                return;
            }
            let now = MicroTime(Timestamp::now());
            lease.spec = Some(LeaseSpec {
                holder_identity: None,
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: old.lease_transitions,
                ..LeaseSpec::default()
            });
            match self
                .request(
                    self.api
                        .replace(&self.config.name, &PostParams::default(), &lease),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(lease = %self.lease_name(), "released lease");
                    return;
                }
                Err(_) => {
                    // Someone wrote meanwhile: read again and retry while it is still ours.
                    if let Ok(fresh) = self.request(self.api.get(&self.config.name)).await {
                        self.observed.lock().await.lease = Some(fresh);
                    }
                }
            }
        }
    }

    /// False when this candidate leads but has not renewed for longer than the lease duration plus
    /// `tolerance` (the `/healthz/leaderElection` check; kube-controller-manager uses 20 s).
    pub async fn healthy(&self, tolerance: Duration) -> bool {
        if !self.is_leader() {
            return true;
        }
        let observed = self.observed.lock().await;
        observed
            .renewed_at
            .is_some_and(|t| t.elapsed() <= self.config.lease_duration + tolerance)
    }

    /// One attempt as [`try_acquire_or_renew`](Self::try_acquire_or_renew) that also keeps
    /// [`is_leader`](Self::is_leader), for a caller running its own renewal loop. Returns when the
    /// successful attempt started: the record it wrote cannot be taken over before that instant plus
    /// the lease duration by any candidate's clock, so the holder may act until that instant plus the
    /// renew deadline (the sharded write fence).
    pub async fn try_lead(&self) -> Option<Instant> {
        let started = Instant::now();
        let won = self.try_acquire_or_renew().await;
        if won {
            self.leading.send_replace(true);
        }
        won.then_some(started)
    }

    /// Stops leading without writing: the lease is left to expire (a failed renewal, or a release that
    /// could not wait for in-flight writes).
    pub fn stop_leading(&self) {
        self.leading.send_replace(false);
    }

    /// Takes `lease`, read by someone else just now (a LIST of many Leases), as this candidate's own
    /// observation, so that its expiry clock runs from when the record was first seen to change, as if
    /// it had tried all along. `None`: the Lease does not exist; the last record seen is kept, so a
    /// Lease held by another and then deleted counts as held until that record would have expired.
    pub async fn observe(&self, lease: Option<&Lease>) {
        let mut observed = self.observed.lock().await;
        match lease {
            Some(lease) => {
                observed.note(lease);
            }
            None => observed.lease = None,
        }
    }

    /// The Lease as this candidate last read or wrote it (the object the `LeaderElection` events
    /// are about).
    pub async fn observed_lease(&self) -> Option<Lease> {
        self.observed.lock().await.lease.clone()
    }

    /// Whether another candidate holds the lease and it has not expired by this candidate's clock.
    pub async fn held_by_other(&self) -> bool {
        self.observed.lock().await.held_by_other(&self.config.identity)
    }

    /// One attempt (client-go `tryAcquireOrRenew`): create the lease, or take it over when it has
    /// expired by our clock, or renew it when we hold it. Any failure is just "not now".
    pub async fn try_acquire_or_renew(&self) -> bool {
        if self.renew_as_last_seen().await {
            return true;
        }
        let now = Timestamp::now();
        let existing = match self.request(self.api.get_opt(&self.config.name)).await {
            Ok(l) => l,
            Err(e) => {
                e.log(&self.lease_name(), "error retrieving resource lock");
                return false;
            }
        };
        let mut observed = self.observed.lock().await;
        let Some(mut lease) = existing else {
            // Deleted while another held it: its holder may still act until the record it last
            // wrote expires, so wait for that (client-go creates a missing lock at once).
            if observed.held_by_other(&self.config.identity) {
                return false;
            }
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.record(None, now)),
            };
            return match self
                .request(self.api.create(&PostParams::default(), &lease))
                .await
            {
                Ok(created) => {
                    observed.remember_own_write(created);
                    true
                }
                Err(e) => {
                    e.log(
                        &self.lease_name(),
                        "error initially creating leader election record",
                    );
                    false
                }
            };
        };
        let record = observed.note(&lease);
        let holder = record.holder_identity.clone().unwrap_or_default();
        let ours = holder == self.config.identity;
        let duration = duration_of(&record);
        if !holder.is_empty() && !ours && observed.changed_at + duration > Instant::now() {
            return false; // held by another and not expired by our clock
        }
        if ours && let Some(count) = &self.on_slow_path {
            count();
        }
        lease.spec = Some(self.record(Some((record, ours)), now));
        match self.write(&mut observed, lease).await {
            Ok(()) => {
                if !ours {
                    tracing::info!(lease = %self.lease_name(), previous = %holder, "took over lease");
                }
                true
            }
            Err(e) => {
                e.log(&self.lease_name(), "failed to update lock");
                false
            }
        }
    }

    /// client-go's fast path: a holder whose record has not expired by its own clock renews with one
    /// PUT of the Lease as it last read or wrote it, without reading it first. A conflict (someone
    /// wrote since) or any other failure sends the attempt on to the read, as client-go's does.
    async fn renew_as_last_seen(&self) -> bool {
        let mut observed = self.observed.lock().await;
        let (Some(lease), Some(record)) = (&observed.lease, &observed.record) else {
            return false;
        };
        let ours = record.holder_identity.as_deref() == Some(self.config.identity.as_str());
        if !ours || observed.changed_at + duration_of(record) <= Instant::now() {
            return false;
        }
        let mut lease = lease.clone();
        lease.spec = Some(self.record(Some((record.clone(), true)), Timestamp::now()));
        match self.write(&mut observed, lease).await {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(lease = %self.lease_name(), "failed to update lease optimistically, falling back to slow path: {e}");
                false
            }
        }
    }

    /// PUTs `lease` (carrying the resourceVersion it was read at) and, once written, remembers it
    /// as this candidate's own write: the expiry clock and the last renewal restart now.
    async fn write(&self, observed: &mut Observed, lease: Lease) -> Result<(), RequestError> {
        let params = PostParams::default();
        let updated = self
            .request(self.api.replace(&self.config.name, &params, &lease))
            .await?;
        observed.remember_own_write(updated);
        Ok(())
    }

    /// The record this candidate writes: a renewal keeps acquireTime and the transitions count; a
    /// takeover sets acquireTime and counts one more transition.
    fn record(&self, previous: Option<(LeaseSpec, bool)>, now: Timestamp) -> LeaseSpec {
        let t = MicroTime(now);
        let secs = i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let (acquire_time, transitions) = match previous {
            None => (Some(t.clone()), Some(0)),
            Some((r, true)) => (r.acquire_time.or_else(|| Some(t.clone())), r.lease_transitions),
            Some((r, false)) => (Some(t.clone()), Some(r.lease_transitions.unwrap_or(0) + 1)),
        };
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(secs),
            acquire_time,
            renew_time: Some(t),
            lease_transitions: transitions,
            ..LeaseSpec::default()
        }
    }

    /// One API call, bounded by the per-request timeout.
    async fn request<T>(&self, call: impl Future<Output = kube::Result<T>>) -> Result<T, RequestError> {
        let limit = self.request_timeout();
        match tokio::time::timeout(limit, call).await {
            Ok(result) => Ok(result?),
            Err(_) => Err(RequestError::TimedOut(limit)),
        }
    }

    /// Half the renew deadline, at least [`MIN_REQUEST_TIMEOUT`].
    fn request_timeout(&self) -> Duration {
        (self.config.renew_deadline / 2).max(MIN_REQUEST_TIMEOUT)
    }

    fn lease_name(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }
}

impl Observed {
    /// The last record seen names a holder other than `identity` and has not expired by this clock.
    fn held_by_other(&self, identity: &str) -> bool {
        let Some(record) = &self.record else {
            return false;
        };
        let holder = record.holder_identity.as_deref().unwrap_or_default();
        !holder.is_empty() && holder != identity && self.changed_at + duration_of(record) > Instant::now()
    }

    /// Remembers `lease` as read now, restarting the expiry clock when its record changed.
    fn note(&mut self, lease: &Lease) -> LeaseSpec {
        let record = lease.spec.clone().unwrap_or_default();
        if self.record.as_ref() != Some(&record) {
            self.record = Some(record.clone());
            self.changed_at = Instant::now();
        }
        self.lease = Some(lease.clone());
        record
    }

    fn remember_own_write(&mut self, lease: Lease) {
        let now = Instant::now();
        self.record = lease.spec.clone();
        self.lease = Some(lease);
        self.changed_at = now;
        self.renewed_at = Some(now);
    }
}

/// The record's `leaseDurationSeconds`; none or negative is zero. Every expiry judged by the
/// elector's rule (a membership list too) reads it from here.
pub fn duration_of(record: &LeaseSpec) -> Duration {
    Duration::from_secs(u64::try_from(record.lease_duration_seconds.unwrap_or(0)).unwrap_or(0))
}

/// `d` plus up to `JITTER_FACTOR * d` (client-go `wait.Jitter`).
fn jittered(d: Duration) -> Duration {
    d + d.mul_f64(rand::rng().random_range(0.0..JITTER_FACTOR))
}

#[cfg(test)]
#[path = "elector_tests.rs"]
mod tests;
