//! A work queue with client-go's semantics, in three layers as upstream builds it: [`Queue`] (dedup,
//! one worker per item), [`DelayingQueue`] (`add_after`) and [`WorkQueue`] (rate-limited retries).

mod delaying;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use delaying::{DelayingQueue, MAX_WAIT};
pub use queue::{Queue, QueueItem, UNFINISHED_WORK_UPDATE_PERIOD};
pub use rate_limiter::{
    BucketRateLimiter, DEFAULT_BASE_DELAY, DEFAULT_BURST, DEFAULT_MAX_DELAY, DEFAULT_QPS,
    ItemExponentialRateLimiter, MaxOfRateLimiter, RateLimiter, default_controller_rate_limiter,
};
pub use rate_limiting::WorkQueue;
