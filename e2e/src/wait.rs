use std::{fmt::Debug, future::Future, time::Duration};

/// How long a test waits for the cluster to converge by default. This bounds liveness (a controller
/// that never acts fails instead of hanging); it is not a performance assertion.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(90);
const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// Polls `check` until it returns `Ok(value)`, or panics after `timeout` with `what` and the last
/// `Err` the check returned (which should describe what was seen instead).
pub async fn wait_for<T, E, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    E: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) if tokio::time::Instant::now() >= deadline => {
                panic!("timed out after {timeout:?} waiting for {what}; last seen: {last:?}")
            }
            Err(_) => tokio::time::sleep(POLL_INTERVAL).await,
        }
    }
}
