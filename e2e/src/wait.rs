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

/// Polls `check` until it has returned `Ok` with one and the same value for `quiet`, and returns
/// that value; panics after `timeout` as [`wait_for`] does. The value is a fingerprint of what was
/// read (resourceVersions, say): a status can already read as wanted while its controller is still
/// to write the one that reflects the latest change, so a wait that stops at the first match can
/// take a stale status for the settled one.
pub async fn wait_quiet<T, E, F, Fut>(what: &str, timeout: Duration, quiet: Duration, mut check: F) -> T
where
    T: PartialEq + Debug,
    E: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut held: Option<(T, tokio::time::Instant)> = None;
    loop {
        let now = tokio::time::Instant::now();
        match check().await {
            Ok(v) => match held {
                Some((ref same, since)) if *same == v => {
                    if now.duration_since(since) >= quiet {
                        return v;
                    }
                }
                _ => held = Some((v, now)),
            },
            Err(last) if now >= deadline => {
                panic!("timed out after {timeout:?} waiting for {what}; last seen: {last:?}")
            }
            Err(_) => held = None,
        }
        if let Some((last, _)) = held.as_ref().filter(|_| now >= deadline) {
            panic!(
                "timed out after {timeout:?} waiting for {what} to stay unchanged for {quiet:?}; \
                 last seen: {last:?}"
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}
