//! Upstream's `TestControllerV2SyncCronJob` cases for what a sync decides once the active list is
//! reconciled: its fixtures (CronJob `mycronjob` in `snazzycats`, Thursday 2016-05-19) and
//! expected requeues, starts and events.

use jiff::{SignedDuration, Timestamp, tz::TimeZone};
use k8s_openapi::api::batch::v1::CronJob;
use serde_json::json;

use super::*;
use crate::NEXT_SCHEDULE_DELTA;

fn top() -> Timestamp {
    "2016-05-19T10:00:00Z".parse().unwrap()
}

fn at(minutes: i64) -> Timestamp {
    top() + SignedDuration::from_mins(minutes)
}

fn mins(m: i64) -> SignedDuration {
    SignedDuration::from_mins(m) + NEXT_SCHEDULE_DELTA
}

/// The fixture: `schedule`, created `created`, last scheduled `last`, with `active` Jobs.
fn cron_job(schedule: &str, created: Timestamp, last: Option<Timestamp>, active: usize) -> CronJob {
    let active: Vec<_> = (0..active)
        .map(|i| json!({"kind": "Job", "namespace": "snazzycats", "name": format!("running-{i}"), "uid": format!("u{i}")}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": "mycronjob", "namespace": "snazzycats", "uid": "1a2b3c",
                     "creationTimestamp": created.to_string()},
        "spec": {"schedule": schedule, "concurrencyPolicy": "Allow",
                 "jobTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": {"spec": {"containers": []}}}}},
        "status": {"lastScheduleTime": last.map(|t| t.to_string()), "active": active},
    }))
    .unwrap()
}

fn with(mut cj: CronJob, change: impl FnOnce(&mut k8s_openapi::api::batch::v1::CronJobSpec)) -> CronJob {
    change(&mut cj.spec);
    cj
}

fn reasons(d: &Decided) -> Vec<&str> {
    d.events.iter().map(|e| e.reason.as_ref()).collect()
}

const ON_THE_HOUR: &str = "0 * * * ?";

#[test]
fn a_schedule_or_zone_that_cannot_be_used_warns_and_idles() {
    let bad = decide(
        &cron_job("obvious error schedule", at(-1), None, 0),
        at(1),
        &TimeZone::UTC,
    );
    assert_eq!(
        (bad.decision.clone(), reasons(&bad)),
        (Decision::Idle, vec![REASON_UNPARSEABLE_SCHEDULE])
    );
    assert_eq!(
        bad.events[0].message,
        "unparseable schedule: \"obvious error schedule\" : expected exactly 5 fields, found 3: [obvious error schedule]"
    );
    let zone = with(cron_job(ON_THE_HOUR, at(-1), None, 0), |s| {
        s.time_zone = Some("bad timezone".into())
    });
    let bad = decide(&zone, at(1), &TimeZone::UTC);
    assert_eq!(
        (bad.decision.clone(), reasons(&bad)),
        (Decision::Idle, vec![REASON_UNKNOWN_TIME_ZONE])
    );
    assert_eq!(
        bad.events[0].message,
        "invalid timeZone: \"bad timezone\": unknown time zone bad timezone"
    );
    let never = decide(&cron_job("59 23 31 2 *", at(-1), None, 0), at(1), &TimeZone::UTC);
    assert_eq!(
        (never.decision.clone(), reasons(&never)),
        (Decision::Idle, vec![REASON_INVALID_SCHEDULE])
    );
}

#[test]
fn never_ran_waits_for_the_slot_then_starts_it() {
    for zone in [None, Some("America/New_York")] {
        let cj = with(cron_job(ON_THE_HOUR, at(-1), None, 0), |s| {
            s.time_zone = zone.map(Into::into)
        });
        let early = decide(&cj, at(-1), &TimeZone::UTC);
        assert_eq!(early.decision, Decision::Wait { requeue: mins(1) }, "{zone:?}");
        let due = decide(&cj, at(1), &TimeZone::UTC);
        assert_eq!(
            due.decision,
            Decision::Start {
                scheduled: top(),
                replace: false,
                requeue: mins(59)
            },
            "{zone:?}"
        );
        assert!(due.events.is_empty());
    }
}

#[test]
fn a_schedule_with_its_own_zone_starts_with_an_unsupported_schedule_warning() {
    let cj = with(cron_job(&format!("TZ=UTC {ON_THE_HOUR}"), at(-1), None, 0), |s| {
        s.time_zone = Some("America/New_York".into());
    });
    let d = decide(&cj, at(1), &TimeZone::UTC);
    assert!(matches!(d.decision, Decision::Start { scheduled, .. } if scheduled == top()));
    assert_eq!(reasons(&d), [REASON_UNSUPPORTED_SCHEDULE]);
}

#[test]
fn suspended_or_deleted_does_nothing() {
    let suspended = with(cron_job(ON_THE_HOUR, at(-1), None, 0), |s| s.suspend = Some(true));
    assert_eq!(
        decide(&suspended, at(1), &TimeZone::UTC),
        Decided {
            decision: Decision::Idle,
            events: vec![]
        }
    );
    let mut deleted = cron_job(ON_THE_HOUR, at(-1), None, 0);
    deleted.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)));
    assert_eq!(decide(&deleted, at(1), &TimeZone::UTC).decision, Decision::Idle);
}

#[test]
fn a_starting_deadline_passed_skips_the_slot_without_a_warning() {
    let short = with(cron_job(ON_THE_HOUR, at(-1), None, 0), |s| {
        s.starting_deadline_seconds = Some(10)
    });
    let d = decide(&short, at(12), &TimeZone::UTC);
    assert_eq!(
        d,
        Decided {
            decision: Decision::Wait { requeue: mins(48) },
            events: vec![]
        }
    );
    let long = with(cron_job(ON_THE_HOUR, at(-1), None, 0), |s| {
        s.starting_deadline_seconds = Some(1_000_000)
    });
    assert!(matches!(
        decide(&long, at(12), &TimeZone::UTC).decision,
        Decision::Start { .. }
    ));
    // After an earlier run (last 09:01), a short deadline at 10:01 skips 10:00 as well.
    let ran = with(cron_job(ON_THE_HOUR, at(-61), Some(at(-59)), 0), |s| {
        s.starting_deadline_seconds = Some(10)
    });
    assert_eq!(
        decide(&ran, at(1), &TimeZone::UTC).decision,
        Decision::Wait { requeue: mins(59) }
    );
}

#[test]
fn after_a_run_the_next_slot_starts_and_the_same_slot_never_twice() {
    let cj = cron_job(ON_THE_HOUR, at(-61), Some(at(-59)), 0);
    assert_eq!(
        decide(&cj, at(-1), &TimeZone::UTC).decision,
        Decision::Wait { requeue: mins(1) }
    );
    assert!(
        matches!(decide(&cj, at(1), &TimeZone::UTC).decision, Decision::Start { scheduled, .. } if scheduled == top())
    );
    let done = cron_job(ON_THE_HOUR, at(-61), Some(top()), 0);
    assert_eq!(
        decide(&done, at(1), &TimeZone::UTC).decision,
        Decision::Wait { requeue: mins(59) }
    );
}

#[test]
fn concurrency_policies_with_a_job_still_active() {
    let base = cron_job(ON_THE_HOUR, at(-61), Some(at(-59)), 1);
    let policy = |p: &str| with(base.clone(), |s| s.concurrency_policy = Some(p.into()));
    let allow = decide(&policy(ALLOW), at(1), &TimeZone::UTC);
    assert!(matches!(allow.decision, Decision::Start { replace: false, .. }));
    let forbid = decide(&policy(FORBID), at(1), &TimeZone::UTC);
    assert_eq!(forbid.decision, Decision::Wait { requeue: mins(59) });
    assert_eq!(reasons(&forbid), [REASON_JOB_ALREADY_ACTIVE]);
    let replace = decide(&policy(REPLACE), at(1), &TimeZone::UTC);
    assert!(matches!(replace.decision, Decision::Start { replace: true, .. }));
    // Still active, not time yet: nothing whatever the policy.
    for p in [ALLOW, FORBID, REPLACE] {
        assert_eq!(
            decide(&policy(p), at(-1), &TimeZone::UTC).decision,
            Decision::Wait { requeue: mins(1) }
        );
    }
}

#[test]
fn long_overdue_starts_the_latest_slot_and_warns_unless_a_deadline_bounds_the_count() {
    let week = at(7 * 24 * 60);
    let cj = cron_job(ON_THE_HOUR, at(-61), Some(at(-59)), 0);
    let d = decide(&cj, week, &TimeZone::UTC);
    assert_eq!(
        d.decision,
        Decision::Start {
            scheduled: week,
            replace: false,
            requeue: mins(60)
        }
    );
    assert_eq!(reasons(&d), [REASON_TOO_MANY_MISSED]);
    let bounded = with(cj, |s| s.starting_deadline_seconds = Some(2 * 3600));
    let d = decide(&bounded, week, &TimeZone::UTC);
    assert!(matches!(d.decision, Decision::Start { scheduled, .. } if scheduled == week));
    assert!(d.events.is_empty());
}

#[test]
fn every_hour_counts_from_creation_or_the_last_run() {
    let fresh = cron_job("@every 1h", at(-1), None, 0);
    assert_eq!(
        decide(&fresh, at(0), &TimeZone::UTC).decision,
        Decision::Wait { requeue: mins(59) }
    );
    let due = cron_job("@every 1h", at(-61), None, 0);
    assert_eq!(
        decide(&due, at(-1), &TimeZone::UTC).decision,
        Decision::Start {
            scheduled: at(-1),
            replace: false,
            requeue: mins(60)
        }
    );
}
