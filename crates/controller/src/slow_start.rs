//! Slow-start batches (upstream `slowStartBatch`): 1, 2, 4, ... calls at a time, stopping after the
//! first batch with a failure, so that a namespace over quota gets one failed create, not hundreds.

use std::future::Future;

use futures::future::join_all;

/// The first batch size (upstream `SlowStartInitialBatchSize`).
pub const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;

/// Runs `call` `count` times in doubling batches. Returns the successes and the first error; calls in
/// batches after a failed one are not made (the caller lowers its expectations for them).
pub async fn slow_start_batch<T, E, F, Fut>(count: usize, mut call: F) -> (Vec<T>, Option<E>)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut done = Vec::with_capacity(count);
    let mut remaining = count;
    let mut batch = remaining.min(SLOW_START_INITIAL_BATCH_SIZE);
    while batch > 0 {
        let results = join_all((0..batch).map(|_| call())).await;
        let mut first_err = None;
        for r in results {
            match r {
                Ok(v) => done.push(v),
                Err(e) if first_err.is_none() => first_err = Some(e),
                Err(_) => {}
            }
        }
        if first_err.is_some() {
            return (done, first_err);
        }
        remaining -= batch;
        batch = remaining.min(2 * batch);
    }
    (done, None)
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    #[tokio::test]
    async fn batches_double_and_stop_at_the_first_failing_batch() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        // The 5th call fails: batches 1, 2, then 4 (calls 4..7) fails -> stop.
        let (ok, err) = slow_start_batch(500, || {
            let n = c.fetch_add(1, Ordering::SeqCst) + 1;
            async move { if n == 5 { Err("quota") } else { Ok(n) } }
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 7);
        assert_eq!(ok.len(), 6);
        assert_eq!(err, Some("quota"));
    }

    #[tokio::test]
    async fn all_succeed_in_doubling_batches() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let (ok, err) = slow_start_batch(500, || {
            c.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, ()>(()) }
        })
        .await;
        assert_eq!((ok.len(), err, calls.load(Ordering::SeqCst)), (500, None, 500));
    }
}
