//! Cases after upstream's `TestNewBackoffRecord`, `TestGetFinishedTime` and
//! `TestGetRemainingBackoffTime`.

use controller::compact_pod::PodCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::fixtures::{pod, ts};

fn failed_at(name: &str, at: i64) -> Arc<Pod> {
    pod(name).failed().exit("main", 1, at).build()
}

fn succeeded_at(name: &str, at: i64) -> Arc<Pod> {
    pod(name).succeeded().exit("main", 0, at).build()
}

const UPSTREAM: JobDelays = JobDelays::UPSTREAM;

#[test]
fn failures_accumulate_until_a_success() {
    let r = BackoffRecord::default().with_finished(&[], &[failed_at("a", 10), failed_at("b", 5)]);
    assert_eq!(
        r,
        BackoffRecord {
            failures_after_last_success: 2,
            last_failure_time: Some(ts(10))
        }
    );
    let r = r.with_finished(&[], &[failed_at("c", 20)]);
    assert_eq!(
        r,
        BackoffRecord {
            failures_after_last_success: 3,
            last_failure_time: Some(ts(20))
        }
    );
    assert_eq!(r.with_finished(&[], &[]), r, "nothing new, nothing changes");
}

#[test]
fn a_success_resets_to_the_failures_after_it() {
    let old = BackoffRecord {
        failures_after_last_success: 4,
        last_failure_time: Some(ts(1)),
    };
    assert_eq!(
        old.with_finished(&[succeeded_at("s", 10)], &[]),
        BackoffRecord::default()
    );
    let r = old.with_finished(
        &[succeeded_at("s", 10)],
        &[failed_at("a", 5), failed_at("b", 12), failed_at("c", 15)],
    );
    assert_eq!(
        r,
        BackoffRecord {
            failures_after_last_success: 2,
            last_failure_time: Some(ts(15))
        }
    );
    let r = old.with_finished(&[succeeded_at("s", 10)], &[failed_at("a", 10)]);
    assert_eq!(
        r,
        BackoffRecord::default(),
        "a failure at the same moment as the success is before it"
    );
}

#[test]
fn delay_doubles_from_ten_seconds_up_to_ten_minutes() {
    let now = ts(1000);
    let d = |n: i32| remaining_for_failures(&UPSTREAM, n, Some(now), now);
    assert_eq!(d(0), Duration::ZERO);
    assert_eq!(d(1), Duration::from_secs(10));
    assert_eq!(d(2), Duration::from_secs(20));
    assert_eq!(d(3), Duration::from_secs(40));
    assert_eq!(d(6), Duration::from_secs(320));
    assert_eq!(d(7), Duration::from_secs(600));
    assert_eq!(d(1000), Duration::from_secs(600));
    // Counted from the last failure.
    assert_eq!(
        remaining_for_failures(&UPSTREAM, 2, Some(ts(990)), now),
        Duration::from_secs(10)
    );
    assert_eq!(
        remaining_for_failures(&UPSTREAM, 2, Some(ts(900)), now),
        Duration::ZERO
    );
}

#[test]
fn a_test_s_delays_double_and_cap_alike() {
    let now = ts(1000);
    let fast = JobDelays::new(
        Duration::from_millis(100),
        Duration::from_millis(300),
        Duration::ZERO,
    )
    .expect("the cap is above the first step");
    let d = |n: i32| remaining_for_failures(&fast, n, Some(now), now);
    assert_eq!(d(0), Duration::ZERO);
    assert_eq!(d(1), Duration::from_millis(100));
    assert_eq!(d(2), Duration::from_millis(200));
    assert_eq!(d(3), Duration::from_millis(300), "capped");
    assert_eq!(d(i32::MAX), Duration::from_millis(300));
    let none = JobDelays::new(Duration::ZERO, Duration::ZERO, Duration::ZERO).expect("zero is allowed");
    assert_eq!(remaining_for_failures(&none, 5, Some(now), now), Duration::ZERO);
    let no_first_step = JobDelays::new(Duration::ZERO, Duration::from_secs(1), Duration::ZERO).unwrap();
    assert_eq!(
        remaining_for_failures(&no_first_step, i32::MAX, Some(now), now),
        Duration::ZERO,
        "at once, not after 2^31 doublings of nothing"
    );
    assert_eq!(
        JobDelays::new(Duration::from_secs(2), Duration::from_secs(1), Duration::ZERO),
        Err(crate::delays::JobDelaysError {
            first: Duration::from_secs(2),
            max: Duration::from_secs(1)
        }),
        "a cap below the first step would shrink the backoff"
    );
    assert!(UPSTREAM.is_upstream() && !fast.is_upstream());
}

#[test]
fn per_index_delay_counts_the_failed_pod_itself() {
    let now = ts(100);
    assert_eq!(remaining_for_index(&UPSTREAM, None, now), Duration::ZERO);
    let first = pod("a").failed().exit("main", 1, 100).build();
    assert_eq!(
        remaining_for_index(&UPSTREAM, Some(&first), now),
        Duration::from_secs(10)
    );
    let third = pod("a").failed().exit("main", 1, 95).failure_count(2).build();
    assert_eq!(
        remaining_for_index(&UPSTREAM, Some(&third), now),
        Duration::from_secs(35)
    );
}

#[test]
fn finished_time_lookups_in_upstreams_order() {
    // Every container terminated: the latest finish.
    let p = pod("a").failed().exit("a", 1, 5).exit("b", 1, 7).build();
    assert_eq!(finished_time(&p), ts(7));
    // A container still running: fall back to Ready=False.
    let mut p = (*pod("a").failed().exit("a", 1, 5).restarts(0).created(1).build()).clone();
    assert_eq!(
        finished_time(&p),
        ts(1),
        "no Ready=False, not deleted: creation time"
    );
    p.status.as_mut().unwrap().conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: "False".into(),
        last_transition_time: Some(Time(ts(9))),
    }]);
    assert_eq!(finished_time(&p), ts(9));
    // Deleted: deletion time minus the grace period.
    let mut d = (*pod("d").created(1).build()).clone();
    d.metadata.deletion_timestamp = Some(Time(ts(50)));
    d.metadata.deletion_grace_period_seconds = Some(30);
    assert_eq!(finished_time(&d), ts(20));
}

/// Sidecars stop after the main containers: their end is the pod's finish time, and one still
/// running means no container time at all (SidecarContainers, GA).
#[test]
fn finished_time_includes_sidecars() {
    let p = pod("a")
        .failed()
        .exit("main", 1, 5)
        .sidecar("proxy", Some(20))
        .build();
    assert_eq!(finished_time(&p), ts(20));
    let p = pod("a")
        .failed()
        .exit("main", 1, 5)
        .init_exit("setup", 0)
        .sidecar("proxy", Some(3))
        .build();
    assert_eq!(finished_time(&p), ts(5), "a plain init container does not count");
    let p = pod("a")
        .failed()
        .exit("main", 1, 5)
        .sidecar("proxy", None)
        .created(2)
        .build();
    assert_eq!(finished_time(&p), ts(2), "a running sidecar: the fallbacks");
    // The main container never terminated (an image never pulled before an eviction): upstream's
    // sidecar step starts from nothing rather than giving up, so the sidecars' end is the pod's.
    let p = pod("a")
        .failed()
        .restarts(0)
        .sidecar("proxy", Some(20))
        .created(2)
        .build();
    assert_eq!(finished_time(&p), ts(20), "a main container that never ended");
}

#[test]
fn store_keeps_records_per_job() {
    let s = BackoffStore::default();
    let r = BackoffRecord {
        failures_after_last_success: 1,
        last_failure_time: Some(ts(1)),
    };
    s.update("ns/a", r);
    assert_eq!(s.get("ns/a"), r);
    assert_eq!(s.get("ns/b"), BackoffRecord::default());
    s.remove("ns/a");
    assert_eq!(s.get("ns/a"), BackoffRecord::default());
}
