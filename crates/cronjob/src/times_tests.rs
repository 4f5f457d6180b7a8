//! Upstream's `utils_test.go` tables for the schedule arithmetic: `TestMostRecentScheduleTime`,
//! `TestNextScheduleTime`, `TestNextScheduleTimeDuration`, and the Job name.

use jiff::{SignedDuration, Timestamp, tz::TimeZone};

use super::*;

/// Upstream's `topOfTheHour`: Thursday 2016-05-19, 10:00 UTC.
fn top() -> Timestamp {
    "2016-05-19T10:00:00Z".parse().unwrap()
}

fn plus(minutes: i64) -> Timestamp {
    top() + SignedDuration::from_mins(minutes)
}

fn schedule(text: &str) -> Schedule {
    Schedule::parse(text, &TimeZone::UTC).unwrap()
}

fn history(created: Timestamp, last: Option<Timestamp>) -> History {
    History {
        created,
        last_scheduled: last,
        starting_deadline_seconds: None,
    }
}

const H: i64 = 60;
const D: i64 = 24 * H;

#[test]
fn most_recent_schedule_time_as_upstreams_table() {
    // (schedule, created, last, now, earliest, most recent, missed)
    let cases = [
        (
            "0 * * * *",
            plus(0),
            None,
            top() + SignedDuration::from_secs(30),
            plus(0),
            None,
            Missed::None,
        ),
        (
            "0 * * * *",
            plus(0),
            None,
            plus(H + 1),
            plus(0),
            Some(plus(H)),
            Missed::None,
        ),
        (
            "0 * * * *",
            top() + SignedDuration::from_secs(10),
            None,
            plus(5 * H + 1),
            top() + SignedDuration::from_secs(10),
            Some(plus(5 * H)),
            Missed::Few,
        ),
        (
            "30 6-16/4 * * 1-5",
            plus(0),
            Some(plus(30)),
            plus(24 * H + 31),
            plus(30),
            Some(plus(24 * H + 30)),
            Missed::Few,
        ),
        // Irregular: the estimate starts past Friday's slots and the walk finds none.
        (
            "30 10,11,12 * * 1-5",
            plus(0),
            Some(plus(30)),
            plus(30 * H + 30),
            plus(30),
            None,
            Missed::Few,
        ),
        (
            "30 6-16/4 * * 1-5",
            plus(0),
            Some(plus(30)),
            plus(96 * H + 31),
            plus(30),
            Some(plus(96 * H + 30)),
            Missed::Few,
        ),
        (
            "30 6-16/4 * * 1-5",
            plus(0),
            None,
            plus(24 * H + 31),
            plus(0),
            Some(plus(24 * H + 30)),
            Missed::Few,
        ),
        (
            "@every 1h",
            plus(-59),
            Some(plus(1)),
            plus(7 * D),
            plus(1),
            Some(plus(6 * D + 23 * H + 1)),
            Missed::Many,
        ),
        (
            "0 * * * *",
            plus(0),
            Some(plus(0)),
            top() + SignedDuration::from_secs(30),
            plus(0),
            None,
            Missed::None,
        ),
        (
            "*/5 * * * *",
            plus(0),
            Some(plus(30)),
            plus(31),
            plus(30),
            None,
            Missed::None,
        ),
    ];
    for (text, created, last, now, earliest, recent, missed) in cases {
        let got = most_recent(&history(created, last), now, &schedule(text), false).unwrap();
        assert_eq!(
            got,
            Window {
                earliest,
                most_recent: recent,
                missed
            },
            "{text} created {created} last {last:?} now {now}"
        );
    }
}

#[test]
fn the_starting_deadline_moves_the_earliest_time_when_asked_to() {
    let mut h = history(plus(0), Some(plus(30)));
    h.starting_deadline_seconds = Some(60);
    let every5 = schedule("*/5 * * * *");
    assert_eq!(
        most_recent(&h, plus(31), &every5, false).unwrap().earliest,
        plus(30)
    );
    let got = most_recent(&h, plus(32), &every5, true).unwrap();
    assert_eq!((got.earliest, got.most_recent), (plus(31), None));
}

#[test]
fn a_schedule_that_never_fires_has_no_gap() {
    let err = most_recent(&history(plus(0), None), plus(H), &schedule("59 23 31 2 *"), false);
    assert_eq!(err, Err(NoGap { earliest: plus(0) }));
    assert_eq!(
        err.unwrap_err().to_string(),
        "time difference between two schedules is less than 1 second"
    );
}

#[test]
fn the_slot_to_act_on_as_upstreams_next_schedule_time() {
    let hourly = schedule("0 * * * ?");
    let (t1, t2) = (plus(0), plus(H));
    let at = |created, last, now| slot_to_act_on(&history(created, last), now, &hourly).unwrap();
    assert_eq!(at(plus(-10), None, plus(-7)), None, "not yet");
    assert_eq!(
        at(plus(-10), None, t1 + SignedDuration::from_secs(2)),
        Some((t1, Missed::None))
    );
    assert_eq!(at(plus(-10), Some(t1), plus(2)), None, "already ran");
    assert_eq!(
        at(plus(-10), Some(t1), t2 + SignedDuration::from_mins(5)),
        Some((t2, Missed::None))
    );
    assert_eq!(
        at(plus(-2 * H), Some(plus(-H)), t2 + SignedDuration::from_mins(5)),
        Some((t2, Missed::Few))
    );
    let long_ago = at(plus(-2 * H), Some(plus(-H)), t2 + SignedDuration::from_hours(240));
    assert!(matches!(long_ago, Some((_, Missed::Many))), "{long_ago:?}");
    let mut deadline = history(plus(-2 * H), Some(plus(-H)));
    deadline.starting_deadline_seconds = Some(2 * 3600);
    let now = t2 + SignedDuration::from_hours(240);
    let within = slot_to_act_on(&deadline, now, &hourly).unwrap();
    assert!(matches!(within, Some((t, _)) if t <= now), "{within:?}");
    assert!(slot_to_act_on(&history(plus(0), None), plus(H), &schedule("59 23 31 2 *")).is_err());
}

#[test]
fn requeue_after_as_upstreams_next_schedule_time_duration() {
    let delta = NEXT_SCHEDULE_DELTA;
    let cases = [
        (
            "30 6-16/4 * * 1-5",
            Some(plus(30)),
            plus(24 * H + 31),
            SignedDuration::from_mins(3 * 60 + 59),
        ),
        (
            "30 10,11,12 * * 1-5",
            Some(plus(30)),
            plus(30 * H + 30),
            SignedDuration::from_hours(66),
        ),
        (
            "0 12 * * 4",
            Some(plus(2 * H)),
            plus(19 * D + H + 30),
            SignedDuration::from_mins(48 * 60 + 30),
        ),
        ("0 12 * * 5", None, plus(6 * H), SignedDuration::from_hours(20)),
    ];
    for (text, last, now, want) in cases {
        let got = requeue_after(&history(plus(0), last), now, &schedule(text));
        assert_eq!(got, want + delta, "{text} last {last:?} now {now}");
    }
}

#[test]
fn jobs_are_named_by_the_minutes_since_1970() {
    assert_eq!(job_name("mycronjob", top()), "mycronjob-24394200");
    assert_eq!(
        job_name("mycronjob", top() + SignedDuration::from_secs(59)),
        "mycronjob-24394200"
    );
}

/// A schedule whose slots are a constant gap apart.
fn regular() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        prop::sample::select(vec![1, 2, 3, 5, 10, 15, 30]).prop_map(|k| format!("*/{k} * * * *")),
        (0..60).prop_map(|m| format!("{m} * * * *")),
        (0..60, 0..24).prop_map(|(m, h)| format!("{m} {h} * * *")),
        prop::sample::select(vec![45, 90, 3600]).prop_map(|s| format!("@every {s}s")),
    ]
}

/// The slots after `from` up to `now`, walked one by one with the schedule itself: what upstream's
/// arithmetic must agree with when the gap is constant.
fn walked(schedule: &Schedule, from: Timestamp, now: Timestamp) -> (Option<Timestamp>, i64) {
    let (mut last, mut count, mut t) = (None, 0, from);
    while let Some(next) = schedule.next(t).filter(|n| *n <= now) {
        last = Some(next);
        count += 1;
        t = next;
    }
    (last, count)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// On a regular schedule, the slot a sync acts on is the latest one not after now and after the
    /// last schedule (or the creation, or now less the starting deadline); "many missed" means more
    /// than 100 of them; and the requeue lands 100 ms after the first slot after now.
    #[test]
    fn the_slot_and_the_requeue_agree_with_walking_the_schedule(
        text in regular(),
        created in 1_600_000_000i64..1_800_000_000,
        last_after in proptest::option::of(0i64..200_000),
        elapsed in 0i64..1_000_000,
        deadline in proptest::option::of(1i64..100_000),
    ) {
        let schedule = Schedule::parse(&text, &TimeZone::UTC).unwrap();
        let created = Timestamp::from_second(created).unwrap();
        // A last schedule time is one of the schedule's own slots.
        let last = last_after.and_then(|s| schedule.next(created + SignedDuration::from_secs(s)));
        let from = last.unwrap_or(created);
        let now = from + SignedDuration::from_secs(elapsed);
        let h = History { created, last_scheduled: last, starting_deadline_seconds: deadline };

        let earliest = match deadline {
            Some(d) if now - SignedDuration::from_secs(d) > from => now - SignedDuration::from_secs(d),
            _ => from,
        };
        let (want, count) = walked(&schedule, earliest, now);
        let got = slot_to_act_on(&h, now, &schedule).unwrap();
        proptest::prop_assert_eq!(got.map(|(t, _)| t), want, "{} from {} to {}", text, earliest, now);
        if let Some((_, missed)) = got {
            let many = count > MANY_MISSED;
            proptest::prop_assert_eq!(missed == Missed::Many, many, "{} slots", count);
        }

        let (latest, _) = walked(&schedule, from, now);
        let next = schedule.next(latest.unwrap_or(from)).unwrap();
        proptest::prop_assert!(next > now);
        proptest::prop_assert_eq!(requeue_after(&h, now, &schedule), next.duration_since(now) + NEXT_SCHEDULE_DELTA);
    }
}
