//! The write fence: no write for a namespace leaves this process unless this replica holds the
//! namespace's shard *now*.
//!
//! A shard's gate is open from when its caches synced (after a list that began after acquisition)
//! until its last successful renewal attempt's start plus the renew deadline, less any time the
//! machine spent suspended since: another replica can take the shard over only after seeing the
//! Lease unchanged for a lease duration, longer than that (`docs/scale-out.md`, "Why two replicas
//! can never act on one shard at once"). The gate closes before a release and at once on a failed
//! renewal. The writes that passed a gate are counted until they end, and a release gives the Lease
//! up only once each had its answer ([`WriteFence::settle`]). The middleware in the controllers'
//! clients is `fenced.rs`.
//!
//! Gates are kept by shard, range included, and a write finds its gate by the namespace's hash: a
//! refit of the cuts (`shards::refit`) may leave a shard of the old ranges draining while the
//! manager already plans with the new ones. The manager never holds two overlapping shards at
//! once, so at most one gate covers a hash.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use controller::Probe;
use informer::{Shard, fnv1a64};
use parking_lot::Mutex;
use tokio::{sync::Notify, time::Instant};

use crate::suspended::{self, SuspendClock};

#[path = "fenced.rs"]
mod fenced;
pub use fenced::{FenceLayer, Fenced};

/// The gates of one replica's shards and the writes that passed them.
pub struct WriteFence {
    /// Invariant: no two keys overlap.
    gates: Mutex<HashMap<Shard, Gate>>,
    /// Lock order: `gates` before `writes`.
    writes: Mutex<HashMap<Shard, InFlight>>,
    /// Woken whenever a write ends.
    ended: Notify,
    next_hold: AtomicU64,
    suspended: SuspendClock,
}

struct Gate {
    /// Which hold of the shard this gate is (each acquisition opens a new one).
    hold: u64,
    /// Writes may leave until then, less any suspend since `suspended` was read.
    until: Instant,
    /// The machine's time spent suspended when `until` was measured (`crate::suspended`): the
    /// monotonic clock that `until` is on stood still for any suspend after it.
    suspended: Duration,
    /// The shard's controllers' cache checks; writes wait for all of them.
    synced: Vec<Probe>,
}

impl Gate {
    /// The window's end once the suspend since it was measured is taken off (`None`: long gone).
    fn end(&self, suspended_now: Duration) -> Option<Instant> {
        shorten(self.until, self.suspended, suspended_now)
    }
}

/// `until`, measured when the machine had been suspended for `then`, less the suspend since.
fn shorten(until: Instant, then: Duration, now: Duration) -> Option<Instant> {
    until.checked_sub(now.saturating_sub(then))
}

/// The writes of one hold of a shard that passed its gate and have not ended.
#[derive(Debug, Default)]
struct InFlight {
    hold: u64,
    count: usize,
    /// One of them ended without an answer (dropped at its window's end, its task aborted, the
    /// connection lost): the server may still apply it.
    unanswered: bool,
}

impl std::fmt::Debug for WriteFence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open: Vec<String> = self.gates.lock().keys().map(Shard::to_string).collect();
        f.debug_struct("WriteFence")
            .field("gates", &open)
            .finish_non_exhaustive()
    }
}

impl Default for WriteFence {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteFence {
    pub fn new() -> Self {
        Self::with_suspend_clock(suspended::system())
    }

    pub fn with_suspend_clock(suspended: SuspendClock) -> Self {
        Self {
            gates: Mutex::new(HashMap::new()),
            writes: Mutex::new(HashMap::new()),
            ended: Notify::new(),
            next_hold: AtomicU64::new(0),
            suspended,
        }
    }

    /// The machine's time spent suspended so far: read it when an attempt on the Lease starts, and
    /// pass it to [`Self::renewed`] with the window measured from that start.
    pub fn suspended_now(&self) -> Duration {
        (self.suspended)()
    }

    /// A renewal of `shard` that started at some t0, when [`Self::suspended_now`] read `suspended`,
    /// succeeded: writes may leave until `until` (t0 + renew deadline), less any suspend since t0.
    pub fn renewed(&self, shard: Shard, until: Instant, suspended: Duration) {
        let now = (self.suspended)();
        let until = shorten(until, suspended, now);
        let mut gates = self.gates.lock();
        debug_assert!(
            gates.keys().all(|g| *g == shard || !g.overlaps(shard)),
            "{shard} overlaps a gate already open"
        );
        let gate = gates.entry(shard).or_insert_with(|| {
            let hold = self.next_hold.fetch_add(1, Ordering::Relaxed);
            self.writes.lock().insert(
                shard,
                InFlight {
                    hold,
                    ..InFlight::default()
                },
            );
            Gate {
                hold,
                until: until.unwrap_or_else(Instant::now),
                suspended: now,
                synced: vec![Arc::new(|| false)],
            }
        });
        gate.until = gate.end(now).max(until).unwrap_or_else(Instant::now);
        gate.suspended = now;
    }

    /// A later renewal of a held `shard` was confirmed: moves its window as [`Self::renewed`] does, but
    /// only while its gate is open. A confirmation that comes after the hold closed its gate (while
    /// it drains or settles) must neither open a gate nobody will close nor start a new count of
    /// writes in flight under the old one.
    pub fn extend(&self, shard: Shard, until: Instant, suspended: Duration) {
        let now = (self.suspended)();
        let until = shorten(until, suspended, now);
        if let Some(gate) = self.gates.lock().get_mut(&shard) {
            gate.until = gate.end(now).max(until).unwrap_or_else(Instant::now);
            gate.suspended = now;
        }
    }

    /// The shard's controllers are running: writes wait for these caches.
    pub fn caches(&self, shard: Shard, synced: Vec<Probe>) {
        if let Some(gate) = self.gates.lock().get_mut(&shard) {
            gate.synced = synced;
        }
    }

    /// Closes the gate; the writes in flight go on until they end ([`Self::settle`]).
    pub fn close(&self, shard: Shard) {
        self.gates.lock().remove(&shard);
    }

    /// Where the shard's current window ends, synced or not (`None`: not held, or ended).
    pub fn window_end(&self, shard: Shard) -> Option<Instant> {
        let now = (self.suspended)();
        self.gates.lock().get(&shard)?.end(now)
    }

    /// Whether a write to namespace `ns` may leave at `now`.
    #[cfg(test)]
    pub fn allows(&self, ns: &str, now: Instant) -> bool {
        self.open_until(ns, now).is_ok()
    }

    /// Until when writes to namespace `ns` may leave, if they may at `now`; else why not.
    #[cfg(test)]
    pub fn open_until(&self, ns: &str, now: Instant) -> Result<Instant, Closed> {
        self.begin_check(ns, now).map(|(_, end, _)| end)
    }

    /// Until when writes into `shard` may leave, asked at `now`, or why not.
    pub fn shard_open(&self, shard: Shard, now: Instant) -> Result<Instant, Closed> {
        self.check(shard, now).map(|(end, _)| end)
    }

    fn check(&self, shard: Shard, now: Instant) -> Result<(Instant, u64), Closed> {
        let suspended = (self.suspended)();
        let gates = self.gates.lock();
        let gate = gates.get(&shard).ok_or(Closed::NotHeld)?;
        Self::gate_open(gate, suspended, now)
    }

    fn gate_open(gate: &Gate, suspended: Duration, now: Instant) -> Result<(Instant, u64), Closed> {
        match gate.end(suspended) {
            Some(end) if now < end => {
                if gate.synced.iter().all(|s| s()) {
                    Ok((end, gate.hold))
                } else {
                    Err(Closed::Syncing)
                }
            }
            _ => Err(Closed::Unconfirmed),
        }
    }

    /// Lets a write into namespace `ns` leave at `now`, counted in flight until the guard is
    /// dropped: with [`Write::answered`] if an answer came, else as unanswered. `Ok` carries the
    /// window's end.
    pub fn begin(self: &Arc<Self>, ns: &str, now: Instant) -> Result<(Instant, Write), Closed> {
        let (shard, end, hold) = self.begin_check(ns, now)?;
        let mut writes = self.writes.lock();
        let entry = writes.entry(shard).or_default();
        if entry.hold != hold {
            *entry = InFlight {
                hold,
                ..InFlight::default()
            };
        }
        entry.count += 1;
        let write = Write {
            fence: self.clone(),
            shard,
            hold,
            answered: false,
        };
        Ok((end, write))
    }

    /// The held shard whose range holds namespace `ns`, and until when its gate lets writes leave.
    fn begin_check(&self, ns: &str, now: Instant) -> Result<(Shard, Instant, u64), Closed> {
        let hash = fnv1a64(ns.as_bytes());
        let suspended = (self.suspended)();
        let gates = self.gates.lock();
        let (shard, gate) = gates
            .iter()
            .find(|(s, _)| s.contains_hash(hash))
            .ok_or(Closed::NotHeld)?;
        let (end, hold) = Self::gate_open(gate, suspended, now)?;
        Ok((*shard, end, hold))
    }

    /// Waits until every write of the shard's last hold has ended, at most until `deadline`: true
    /// if they all did and each had an answer, so that the server will apply none of them later.
    /// The shard's gate must be closed first. A release hands the Lease over only then; otherwise
    /// the holder leaves it to expire, a lease duration after its window.
    pub async fn settle(&self, shard: Shard, deadline: Instant) -> bool {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if let Some(w) = self.writes.lock().get(&shard) {
                if w.count == 0 {
                    return !w.unanswered;
                }
            } else {
                return true;
            }
            tokio::select! {
                () = ended => {}
                () = tokio::time::sleep_until(deadline) => return false,
            }
        }
    }
}

/// A write in flight ([`WriteFence::begin`]).
#[derive(Debug)]
pub struct Write {
    fence: Arc<WriteFence>,
    shard: Shard,
    hold: u64,
    answered: bool,
}

impl Write {
    /// The server answered it: it was applied, or never will be.
    pub fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Write {
    fn drop(&mut self) {
        if let Some(w) = self.fence.writes.lock().get_mut(&self.shard)
            && w.hold == self.hold
        {
            w.count = w.count.saturating_sub(1);
            w.unanswered |= !self.answered;
        }
        self.fence.ended.notify_waiters();
    }
}

/// Why the fence refuses a write now: said in the error, so that a failed sync's log tells a shard
/// that moved from one still syncing after a takeover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// This replica does not hold the namespace's shard.
    NotHeld,
    /// It holds it, but not every controller's caches have synced yet.
    Syncing,
    /// Its hold was last confirmed longer than the renew deadline ago.
    Unconfirmed,
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Closed::NotHeld => "this replica does not hold the shard",
            Closed::Syncing => "this replica holds the shard and waits for its caches to sync",
            Closed::Unconfirmed => "this replica's hold on the shard is not confirmed renewed",
        })
    }
}

#[cfg(test)]
#[path = "fence_tests.rs"]
mod tests;
