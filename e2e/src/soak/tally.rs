//! What every randomized soak keeps of its operations: how often each kind was applied or skipped,
//! and the API errors that mean an operation itself is broken; and the pace of the operations.

use std::{collections::BTreeMap, time::Duration};

/// The pause between two operations.
pub const OP_INTERVAL: Duration = Duration::from_millis(300);

/// Applied and skipped operations of one kind.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    applied: u32,
    skipped: u32,
}

/// The operations of one soak run, by kind.
#[derive(Debug, Default)]
pub struct Tally {
    counts: BTreeMap<String, Counts>,
    /// Operations the API server refused with another 4xx: the operation is broken. Reported at the
    /// end. (404 and 409 mean the object went away or changed under the operation, as expected with
    /// a controller acting at the same time; 5xx, 429 and transport errors mean a busy plane: all
    /// of these count as skipped.)
    pub errors: Vec<String>,
}

impl Tally {
    /// Records one operation `op` on `target`: `Ok(false)` when there was nothing to act on.
    pub fn record(&mut self, op: impl std::fmt::Debug, target: &str, result: Result<bool, kube::Error>) {
        let kind = format!("{op:?}");
        match result {
            Ok(true) => self.counts.entry(kind).or_default().applied += 1,
            Err(kube::Error::Api(s))
                if (400..500).contains(&s.code) && ![404, 409, 429].contains(&s.code) =>
            {
                self.errors.push(format!("{kind} on {target}: {s}"));
            }
            Ok(false) | Err(_) => self.counts.entry(kind).or_default().skipped += 1,
        }
    }

    /// "seed S: N operations applied: Kind a (+b skipped), …".
    pub fn summary(&self, seed: u64) -> String {
        let kinds: Vec<String> = self
            .counts
            .iter()
            .map(|(op, c)| format!("{op} {} (+{} skipped)", c.applied, c.skipped))
            .collect();
        let total: u32 = self.counts.values().map(|c| c.applied).sum();
        format!("seed {seed}: {total} operations applied: {}", kinds.join(", "))
    }
}

/// A soak's pace: one operation every [`OP_INTERVAL`] until `duration` has passed.
#[derive(Debug)]
pub struct Ticks {
    tick: tokio::time::Interval,
    end: tokio::time::Instant,
}

impl Ticks {
    pub fn new(duration: Duration) -> Ticks {
        let mut tick = tokio::time::interval(OP_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Ticks {
            tick,
            end: tokio::time::Instant::now() + duration,
        }
    }

    /// Waits for the next operation's turn; `false` once the soak is over.
    pub async fn next(&mut self) -> bool {
        if tokio::time::Instant::now() >= self.end {
            return false;
        }
        self.tick.tick().await;
        true
    }
}

/// One of `weights`' kinds, drawn by weight.
pub fn pick<T: Copy>(rng: &mut rand::rngs::StdRng, weights: &[(T, u32)]) -> T {
    use rand::seq::IndexedRandom as _;
    weights.choose_weighted(rng, |w| w.1).expect("weights").0
}
