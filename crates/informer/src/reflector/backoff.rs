//! The reflector's one backoff (client-go: `Backoff.DelayWithReset` from apimachinery's wait
//! package), shared by its relists and by its watches refused with 429 or a refused connection.
//!
//! The sequence starts over when more than [`BACKOFF_RESET`] has passed since it last started, not
//! since the last failure: through a long outage the waits climb to the cap and drop back to
//! [`BACKOFF_INITIAL`] every two minutes, and a brief API server restart long after an outage waits
//! about a second, not the 30-60 s the outage had reached.

use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBackoff, ExponentialBuilder};
use tokio::time::Instant;

use super::{BACKOFF_INITIAL, BACKOFF_MAX, BACKOFF_RESET};

pub(super) struct Backoff {
    steps: ExponentialBackoff,
    /// When `steps` last started from [`BACKOFF_INITIAL`].
    started: Instant,
}

impl Backoff {
    pub(super) fn new() -> Self {
        Self {
            steps: steps(),
            started: Instant::now(),
        }
    }

    /// The wait before the next attempt.
    pub(super) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if now - self.started > BACKOFF_RESET {
            self.steps = steps();
            self.started = now;
        }
        self.steps.next().unwrap_or(BACKOFF_MAX)
    }
}

/// 800 ms doubling to 30 s, each wait plus up to as much again (client-go: jitter 1.0), for ever.
fn steps() -> ExponentialBackoff {
    ExponentialBuilder::default()
        .with_min_delay(BACKOFF_INITIAL)
        .with_max_delay(BACKOFF_MAX)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits climb to the cap while failures go on, and start over two minutes after the sequence
    /// last started, whether or not failures stopped meanwhile.
    #[tokio::test(start_paused = true)]
    async fn the_sequence_starts_over_two_minutes_after_it_started() {
        let mut b = Backoff::new();
        let first = b.next_delay();
        assert!(
            first >= BACKOFF_INITIAL && first < 2 * BACKOFF_INITIAL,
            "{first:?}"
        );
        let mut last = first;
        for _ in 0..6 {
            last = b.next_delay();
        }
        assert!(last >= 16 * BACKOFF_INITIAL, "climbing: {last:?}");
        tokio::time::advance(BACKOFF_RESET + Duration::from_millis(1)).await;
        let again = b.next_delay();
        assert!(again < 2 * BACKOFF_INITIAL, "started over: {again:?}");
        // Climbing again, within the new two minutes.
        assert!(b.next_delay() >= 2 * BACKOFF_INITIAL);
    }
}
