use std::time::Duration;

use tokio::time::Instant;

use super::{MAX_PENDING, Renewal, Renewals};

fn renewal(base: Instant, started_ms: u64, answered_ms: u64) -> Renewal {
    Renewal {
        started: base + Duration::from_millis(started_ms),
        suspended: Duration::ZERO,
        answered: base + Duration::from_millis(answered_ms),
    }
}

#[test]
fn a_renewal_answered_after_a_list_began_does_not_hide_the_one_before() {
    // The phase the sharded bench's wave met: each list begins between a renewal's start and its
    // answer, so the newest renewal is never one the list can confirm.
    let t = Instant::now();
    let mut r = Renewals::default();
    r.push(renewal(t, 0, 300));
    r.push(renewal(t, 2_300, 2_700));
    let list = t + Duration::from_millis(2_500);
    assert_eq!(r.confirmable(list), Some(renewal(t, 0, 300)));
    // The newer one waits for the next list, and is confirmed by it.
    assert_eq!(r.confirmable(list), None);
    assert_eq!(
        r.confirmable(t + Duration::from_millis(4_800)),
        Some(renewal(t, 2_300, 2_700))
    );
    assert_eq!(r.confirmable(t + Duration::from_millis(9_000)), None);
}

#[test]
fn a_list_confirms_the_newest_renewal_it_can_and_drops_the_older() {
    let t = Instant::now();
    let mut r = Renewals::default();
    for i in 0..3 {
        r.push(renewal(t, i * 2_000, i * 2_000 + 100));
    }
    assert_eq!(
        r.confirmable(t + Duration::from_millis(5_000)),
        Some(renewal(t, 4_000, 4_100))
    );
    assert_eq!(r.confirmable(t + Duration::from_millis(60_000)), None);
}

#[test]
fn nothing_is_confirmed_by_a_list_begun_before_every_answer() {
    let t = Instant::now();
    let mut r = Renewals::default();
    r.push(renewal(t, 1_000, 1_200));
    assert_eq!(r.confirmable(t + Duration::from_millis(1_100)), None);
    assert_eq!(
        r.confirmable(t + Duration::from_millis(1_200)),
        Some(renewal(t, 1_000, 1_200))
    );
}

#[test]
fn while_lists_fail_only_the_newest_renewals_are_kept() {
    let t = Instant::now();
    let mut r = Renewals::default();
    let n = MAX_PENDING as u64 + 3;
    for i in 0..n {
        r.push(renewal(t, i * 2_000, i * 2_000 + 100));
    }
    // The oldest kept one is confirmed by a list begun after its answer only.
    let oldest_kept = n - MAX_PENDING as u64;
    assert_eq!(
        r.confirmable(t + Duration::from_millis(oldest_kept * 2_000 - 1)),
        None
    );
    assert_eq!(
        r.confirmable(t + Duration::from_millis(oldest_kept * 2_000 + 100)),
        Some(renewal(t, oldest_kept * 2_000, oldest_kept * 2_000 + 100))
    );
}
