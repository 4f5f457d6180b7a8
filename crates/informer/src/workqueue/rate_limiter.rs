//! Rate limiters for requeues (client-go `default_rate_limiters.go`).
//!
//! The token bucket is written here rather than taken from `governor`: client-go's bucket is
//! `x/time/rate` used through `Reserve().Delay()`, which always takes a token and may book one in the
//! future (the balance goes negative), so a burst of failures is spread out in time. `governor` is a
//! GCRA limiter without reservations (boinkor-net/governor#218) and cannot express that.

use std::{hash::Hash, time::Duration};

use ahash::AHashMap;
use parking_lot::Mutex;
use tokio::time::Instant;

/// Base delay of the per-item exponential limiter (client-go `DefaultTypedControllerRateLimiter`).
pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(5);
/// Cap of the per-item exponential limiter (client-go `DefaultTypedControllerRateLimiter`).
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1000);
/// Overall requeue rate (client-go: `rate.NewLimiter(rate.Limit(10), 100)`).
pub const DEFAULT_QPS: f64 = 10.0;
/// Overall requeue burst (client-go: `rate.NewLimiter(rate.Limit(10), 100)`).
pub const DEFAULT_BURST: u32 = 100;

/// Decides how long an item waits before it is retried.
pub trait RateLimiter<T>: Send + Sync + 'static {
    /// The delay for the next retry of `item`; records the attempt.
    fn when(&self, item: &T) -> Duration;
    /// Forgets `item`'s history (after a success).
    fn forget(&self, item: &T);
    /// How many times `item` was retried since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

/// `base * 2^failures` per item, capped at `max`.
#[derive(Debug)]
pub struct ItemExponentialRateLimiter<T> {
    base: Duration,
    max: Duration,
    /// Calls to `when` per item since its last `forget`.
    failures: Mutex<AHashMap<T, u32>>,
}

impl<T: Eq + Hash> ItemExponentialRateLimiter<T> {
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(AHashMap::new()),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimiter<T> for ItemExponentialRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let mut failures = self.failures.lock();
        let count = failures.entry(item.clone()).or_insert(0);
        let exp = *count;
        *count = count.saturating_add(1);
        // The exponent is read before the increment: 1x, 2x, 4x, ... the base.
        let factor = 2f64.powi(i32::try_from(exp).unwrap_or(i32::MAX));
        let secs = self.base.as_secs_f64() * factor;
        if !secs.is_finite() || secs > self.max.as_secs_f64() {
            return self.max;
        }
        Duration::from_secs_f64(secs)
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// A token bucket shared by all items, with reservations: every `when` takes a token, waiting for a
/// future one when the bucket is empty.
#[derive(Debug)]
pub struct BucketRateLimiter {
    /// Tokens added per second.
    rate: f64,
    burst: f64,
    state: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    /// Tokens available at `last`; negative when future tokens are already reserved.
    tokens: f64,
    last: Instant,
}

impl BucketRateLimiter {
    /// A full bucket of `burst` tokens refilled at `qps`.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst);
        Self {
            rate: qps,
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
            }),
        }
    }

    /// Takes one token and returns how long until it is really available.
    pub fn reserve(&self) -> Duration {
        let now = Instant::now();
        let mut b = self.state.lock();
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.rate).min(self.burst);
        b.last = now;
        b.tokens -= 1.0;
        if b.tokens >= 0.0 || self.rate <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.tokens / self.rate)
        }
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }
    fn forget(&self, _item: &T) {}
    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The longest delay of several limiters. Every limiter's `when` is called each time, so all of them
/// record the attempt (the bucket is charged even when the exponential delay is longer).
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> std::fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> MaxOfRateLimiter<T> {
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T: 'static> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }
    fn forget(&self, item: &T) {
        self.limiters.iter().for_each(|l| l.forget(item));
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's `DefaultTypedControllerRateLimiter`: the max of a per-item exponential backoff
/// (5 ms doubling to 1000 s) and a 10 qps / burst 100 bucket.
pub fn default_controller_rate_limiter<T: Clone + Eq + Hash + Send + Sync + 'static>() -> MaxOfRateLimiter<T>
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialRateLimiter::new(
            DEFAULT_BASE_DELAY,
            DEFAULT_MAX_DELAY,
        )),
        Box::new(BucketRateLimiter::new(DEFAULT_QPS, DEFAULT_BURST)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_doubles_from_base_and_caps_at_max() {
        let l = ItemExponentialRateLimiter::new(DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY);
        let delays: Vec<_> = (0..4).map(|_| l.when(&"a")).collect();
        assert_eq!(delays, [5 * MS, 10 * MS, 20 * MS, 40 * MS]);
        assert_eq!(l.num_requeues(&"a"), 4);
        for _ in 4..18 {
            l.when(&"a");
        }
        // The 19th call would be 2^18 * 5 ms = 1310.72 s: capped.
        assert_eq!(l.when(&"a"), DEFAULT_MAX_DELAY);
        for _ in 0..2000 {
            assert_eq!(l.when(&"a"), DEFAULT_MAX_DELAY, "no overflow");
        }
        assert_eq!(l.when(&"b"), 5 * MS, "items are independent");
        l.forget(&"a");
        assert_eq!(l.num_requeues(&"a"), 0);
        assert_eq!(l.when(&"a"), 5 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_allows_burst_then_reserves_future_tokens() {
        let b = BucketRateLimiter::new(10.0, 3);
        assert_eq!([b.reserve(), b.reserve(), b.reserve()], [Duration::ZERO; 3]);
        // Empty: the next tokens are booked 100 ms apart.
        assert_eq!(b.reserve(), 100 * MS);
        assert_eq!(b.reserve(), 200 * MS);
        tokio::time::advance(Duration::from_millis(200)).await;
        // Two tokens refilled, both already reserved: the next waits a further 100 ms.
        assert_eq!(b.reserve(), 100 * MS);
        tokio::time::advance(Duration::from_secs(10)).await;
        // Refill stops at the burst.
        assert_eq!([b.reserve(), b.reserve(), b.reserve()], [Duration::ZERO; 3]);
        assert_eq!(b.reserve(), 100 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn default_limiter_is_the_max_and_always_charges_the_bucket() {
        let l = default_controller_rate_limiter::<u32>();
        // 100 distinct items: the bucket's burst absorbs them, exponential gives 5 ms.
        for i in 0..100 {
            assert_eq!(l.when(&i), 5 * MS);
        }
        // The 101st item finds the bucket empty: 100 ms beats its 5 ms.
        assert_eq!(l.when(&1000), 100 * MS);
        assert_eq!(l.num_requeues(&0), 1);
        l.forget(&0);
        assert_eq!(l.num_requeues(&0), 0);
    }
}
