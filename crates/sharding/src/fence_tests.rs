//! The gates, the suspend clock and the writes in flight.

use std::time::Duration;

use super::*;

#[test]
fn a_write_passes_only_while_the_shard_is_held_synced_and_renewed() {
    let fence = WriteFence::new();
    let ns = (0..)
        .map(|i| format!("ns-{i}"))
        .find(|n| Shard::new(0, 2).unwrap().contains_namespace(n))
        .unwrap();
    let shard = Shard::new(0, 2).unwrap();
    let t = Instant::now();
    assert_eq!(fence.open_until(&ns, t), Err(Closed::NotHeld));
    fence.renewed(shard, t + Duration::from_secs(10), fence.suspended_now());
    assert_eq!(
        fence.open_until(&ns, t),
        Err(Closed::Syncing),
        "caches not synced"
    );
    fence.caches(shard, vec![Arc::new(|| true)]);
    assert!(fence.allows(&ns, t));
    assert_eq!(
        fence.open_until(&ns, t + Duration::from_secs(10)),
        Err(Closed::Unconfirmed),
        "past the renewal's window"
    );
    fence.renewed(shard, t + Duration::from_secs(12), fence.suspended_now());
    assert!(fence.allows(&ns, t + Duration::from_secs(11)));
    fence.close(shard);
    assert!(!fence.allows(&ns, t));
    let other = (0..)
        .map(|i| format!("ns-{i}"))
        .find(|n| !shard.contains_namespace(n))
        .unwrap();
    assert!(!fence.allows(&other, t), "another shard");
}

#[test]
fn a_suspend_shortens_the_window_by_its_length() {
    let suspended = Arc::new(Mutex::new(Duration::from_secs(100)));
    let clock: SuspendClock = {
        let suspended = suspended.clone();
        Arc::new(move || *suspended.lock())
    };
    let fence = WriteFence::with_suspend_clock(clock);
    let shard = Shard::new(0, 2).unwrap();
    let ns = &(0..)
        .map(|i| format!("ns-{i}"))
        .find(|n| shard.contains_namespace(n))
        .unwrap();
    let t = Instant::now();
    fence.renewed(shard, t + Duration::from_secs(10), fence.suspended_now());
    fence.caches(shard, vec![Arc::new(|| true)]);
    assert_eq!(fence.open_until(ns, t), Ok(t + Duration::from_secs(10)));
    // Suspended for 4 s: the monotonic clock stood still, the window did not.
    *suspended.lock() += Duration::from_secs(4);
    assert_eq!(fence.open_until(ns, t), Ok(t + Duration::from_secs(6)));
    assert_eq!(
        fence.open_until(ns, t + Duration::from_secs(6)),
        Err(Closed::Unconfirmed)
    );
    // A renewal after the resume sets a window of its own; the shortened one is not lengthened.
    fence.renewed(shard, t + Duration::from_secs(5), fence.suspended_now());
    assert_eq!(fence.open_until(ns, t), Ok(t + Duration::from_secs(6)));
    fence.renewed(shard, t + Duration::from_secs(9), fence.suspended_now());
    assert_eq!(fence.open_until(ns, t), Ok(t + Duration::from_secs(9)));
    // Suspended past the lease: closed, whatever the monotonic clock says.
    *suspended.lock() += Duration::from_secs(300);
    assert_eq!(fence.open_until(ns, t), Err(Closed::Unconfirmed));
}

fn namespace_in(shard: Shard) -> String {
    (0..)
        .map(|i| format!("ns-{i}"))
        .find(|n| shard.contains_namespace(n))
        .unwrap()
}

fn held(shard: Shard) -> Arc<WriteFence> {
    let fence = Arc::new(WriteFence::new());
    fence.renewed(
        shard,
        Instant::now() + Duration::from_secs(10),
        fence.suspended_now(),
    );
    fence.caches(shard, vec![Arc::new(|| true)]);
    fence
}

#[tokio::test(start_paused = true)]
async fn a_shard_settles_once_every_write_of_the_hold_was_answered() {
    let shard = Shard::new(0, 2).unwrap();
    let ns = namespace_in(shard);
    let fence = held(shard);
    let (_, first) = fence.begin(&ns, Instant::now()).unwrap();
    let (_, second) = fence.begin(&ns, Instant::now()).unwrap();
    let end = fence.window_end(shard).unwrap();
    fence.close(shard);
    assert_eq!(fence.begin(&ns, Instant::now()).map(|_| ()), Err(Closed::NotHeld));
    let settle = tokio::spawn({
        let fence = fence.clone();
        async move { fence.settle(shard, end).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!settle.is_finished(), "two writes in flight");
    first.answered();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!settle.is_finished(), "one write in flight");
    second.answered();
    assert!(settle.await.unwrap(), "both answered");
}

#[tokio::test(start_paused = true)]
async fn a_write_that_ended_unanswered_keeps_the_shard_from_settling() {
    let shard = Shard::new(0, 2).unwrap();
    let ns = namespace_in(shard);
    let fence = held(shard);
    let (_, aborted) = fence.begin(&ns, Instant::now()).unwrap();
    drop(aborted);
    let end = fence.window_end(shard).unwrap();
    fence.close(shard);
    assert!(!fence.settle(shard, end).await, "the server may still apply it");

    // One still in flight at the window's end: not settled either.
    fence.renewed(
        shard,
        Instant::now() + Duration::from_secs(10),
        fence.suspended_now(),
    );
    fence.caches(shard, vec![Arc::new(|| true)]);
    let (_, stuck) = fence.begin(&ns, Instant::now()).unwrap();
    let end = fence.window_end(shard).unwrap();
    fence.close(shard);
    assert!(!fence.settle(shard, end).await);
    stuck.answered();
}

#[tokio::test(start_paused = true)]
async fn a_write_of_an_earlier_hold_does_not_count_in_the_next() {
    let shard = Shard::new(0, 2).unwrap();
    let ns = namespace_in(shard);
    let fence = held(shard);
    let (_, old) = fence.begin(&ns, Instant::now()).unwrap();
    fence.close(shard);
    fence.renewed(
        shard,
        Instant::now() + Duration::from_secs(10),
        fence.suspended_now(),
    );
    fence.caches(shard, vec![Arc::new(|| true)]);
    drop(old); // unanswered, but of the first hold
    let (_, new) = fence.begin(&ns, Instant::now()).unwrap();
    new.answered();
    let end = fence.window_end(shard).unwrap();
    fence.close(shard);
    assert!(fence.settle(shard, end).await);
}

#[tokio::test(start_paused = true)]
async fn after_a_refit_a_write_finds_the_gate_by_range_not_by_index() {
    // Shard 0 of the old cuts still drains; the new cuts moved namespaces of it into shard 1.
    let old = informer::Layout::auto(2, None).unwrap();
    let ns = namespace_in(old.shards()[0]);
    let hash = u128::from(informer::fnv1a64(ns.as_bytes()));
    let cut = u64::try_from(hash).unwrap();
    let new = informer::Layout::auto(2, Some(vec![cut])).unwrap();
    assert_eq!(new.shard_of_namespace(&ns).index(), 1, "moved to the other index");
    let fence = held(old.shards()[0]);
    assert!(
        fence.allows(&ns, Instant::now()),
        "the old range's gate still covers it"
    );
    fence.close(old.shards()[0]);
    assert_eq!(fence.open_until(&ns, Instant::now()), Err(Closed::NotHeld));
    fence.renewed(
        new.shards()[1],
        Instant::now() + Duration::from_secs(10),
        fence.suspended_now(),
    );
    fence.caches(new.shards()[1], vec![Arc::new(|| true)]);
    assert!(
        fence.allows(&ns, Instant::now()),
        "now through the new shard's gate"
    );
}

#[tokio::test(start_paused = true)]
async fn a_confirmation_after_the_gate_closed_opens_nothing() {
    let shard = Shard::new(0, 2).unwrap();
    let ns = namespace_in(shard);
    let fence = held(shard);
    let (_, write) = fence.begin(&ns, Instant::now()).unwrap();
    fence.close(shard);
    fence.extend(
        shard,
        Instant::now() + Duration::from_secs(10),
        fence.suspended_now(),
    );
    assert_eq!(fence.open_until(&ns, Instant::now()), Err(Closed::NotHeld));
    assert_eq!(fence.window_end(shard), None);
    drop(write);
    assert!(
        !fence.settle(shard, Instant::now() + Duration::from_secs(1)).await,
        "the unanswered write still counts"
    );
}
