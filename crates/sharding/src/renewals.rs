//! A held shard's successful renewals that wait for the manager's confirmation.
//!
//! A renewal moves the write fence only once a list of the Leases begun after its answer shows no
//! overlapping claim (`leases::confirm`). Renewals and lists each come about once a retry period, on
//! loops of their own. Keeping only the newest renewal lost the older one whenever a renewal was
//! answered after a list had begun but before the list's answer was read: that list could have
//! confirmed the older one and found nothing it could confirm. Under load the two loops stayed in
//! that phase past the renew deadline and closed the fence of a shard whose Lease the API server
//! had renewed every time. So every renewal waits here until a list confirms it or a newer one.

use std::{collections::VecDeque, time::Duration};

use tokio::time::Instant;

/// How many unconfirmed renewals are kept. Lists come about as often as renewals, so more than two
/// wait only while lists fail; then the oldest are the least use (the fence would take the newest
/// a list confirms).
pub const MAX_PENDING: usize = 4;

/// One successful renewal of a shard's Lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renewal {
    /// When the attempt started: the fence's window is measured from it.
    pub started: Instant,
    /// The machine's time spent suspended then (`WriteFence::suspended_now`).
    pub suspended: Duration,
    /// When its answer came.
    pub answered: Instant,
}

/// The renewals not yet confirmed, oldest first; `answered` never decreases along it (one task
/// renews a shard, one attempt at a time).
#[derive(Debug, Default)]
pub struct Renewals {
    pending: VecDeque<Renewal>,
}

impl Renewals {
    /// A renewal succeeded.
    pub fn push(&mut self, r: Renewal) {
        if self.pending.len() == MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(r);
    }

    /// The newest renewal answered by `listed_at`, when a list began: taken with every older one,
    /// which it supersedes. Newer ones wait for a later list.
    pub fn confirmable(&mut self, listed_at: Instant) -> Option<Renewal> {
        let n = self
            .pending
            .iter()
            .take_while(|r| r.answered <= listed_at)
            .count();
        let newest = *self.pending.get(n.checked_sub(1)?)?;
        self.pending.drain(..n);
        Some(newest)
    }
}

#[cfg(test)]
#[path = "renewals_tests.rs"]
mod tests;
