//! robfig/cron's own cases (its `TestNext` daylight-saving table, in five fields), its parser's
//! refusals, and a property: in UTC, `next` is the first matching minute, checked minute by minute.

use jiff::{Timestamp, tz::TimeZone};
use proptest::prelude::*;

use super::*;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn next(schedule: &str, after: &str) -> Option<Timestamp> {
    Schedule::parse(schedule, &TimeZone::UTC)
        .unwrap_or_else(|e| panic!("{schedule}: {e}"))
        .next(at(after))
}

fn error(schedule: &str) -> String {
    Schedule::parse(schedule, &TimeZone::UTC)
        .expect_err(schedule)
        .to_string()
}

#[test]
fn simple_schedules_fire_at_the_next_matching_minute() {
    let cases = [
        ("*/15 * * * *", "2012-07-09T14:45:00Z", "2012-07-09T15:00:00Z"),
        ("*/15 * * * *", "2012-07-09T14:59:59Z", "2012-07-09T15:00:00Z"),
        ("*/15 * * * *", "2012-07-09T14:45:00.5Z", "2012-07-09T15:00:00Z"),
        ("0 0 * * 1", "2012-07-09T00:00:00Z", "2012-07-16T00:00:00Z"),
        ("0 0 1 * *", "2012-07-09T23:35:00Z", "2012-08-01T00:00:00Z"),
        // Day of month OR day of week when neither is a star: the 15th or any Sunday.
        ("0 0 15 * 0", "2012-07-09T00:00:00Z", "2012-07-15T00:00:00Z"),
        ("0 0 10 * 0", "2012-07-09T00:00:00Z", "2012-07-10T00:00:00Z"),
        // A star on either side: AND.
        ("0 0 * * 0", "2012-07-09T00:00:00Z", "2012-07-15T00:00:00Z"),
        ("0 0 ? * 2", "2012-07-09T00:00:00Z", "2012-07-10T00:00:00Z"),
        // `*/1` keeps the star, `*/2` does not: every second day of month OR Sunday.
        ("0 0 */2 * 0", "2012-07-09T00:00:00Z", "2012-07-11T00:00:00Z"),
        ("0 0 29 2 *", "2013-01-01T00:00:00Z", "2016-02-29T00:00:00Z"),
        (
            "30 8 * JAN-MAR mon-FRI",
            "2012-12-31T09:00:00Z",
            "2013-01-01T08:30:00Z",
        ),
        ("5/20 * * * *", "2012-07-09T14:46:00Z", "2012-07-09T15:05:00Z"),
        ("@hourly", "2012-07-09T14:45:00Z", "2012-07-09T15:00:00Z"),
        ("@daily", "2012-07-09T14:45:00Z", "2012-07-10T00:00:00Z"),
        ("@weekly", "2012-07-09T14:45:00Z", "2012-07-15T00:00:00Z"),
        ("@monthly", "2012-07-09T14:45:00Z", "2012-08-01T00:00:00Z"),
        ("@yearly", "2012-07-09T14:45:00Z", "2013-01-01T00:00:00Z"),
        ("@every 1h30m", "2012-07-09T14:45:00.7Z", "2012-07-09T16:15:00Z"),
        ("@every 500ms", "2012-07-09T14:45:00Z", "2012-07-09T14:45:01Z"),
        ("@every 90.9s", "2012-07-09T14:45:00Z", "2012-07-09T14:46:30Z"),
        (
            "TZ=Asia/Tokyo 0 9 * * *",
            "2024-01-01T00:00:00Z",
            "2024-01-02T00:00:00Z",
        ),
        (
            "CRON_TZ=Asia/Tokyo 0 9 * * *",
            "2023-12-31T23:59:00Z",
            "2024-01-01T00:00:00Z",
        ),
    ];
    for (schedule, after, want) in cases {
        assert_eq!(next(schedule, after), Some(at(want)), "{schedule} after {after}");
    }
}

#[test]
fn schedules_that_never_come_give_none() {
    for schedule in ["0 0 30 2 *", "0 0 31 4 *", "0 0 , * *"] {
        assert_eq!(next(schedule, "2012-07-09T23:35:00Z"), None, "{schedule}");
    }
}

/// robfig's `TestNext` cases for America/New_York (2012) and America/Sao_Paulo (2018), whose
/// midnight did not exist on the transition day.
#[test]
fn daylight_saving_transitions_as_robfig() {
    let cases = [
        // 2 am EST → 3 am EDT: 2:30 does not exist on 2012-03-11.
        (
            "30 2 11 Mar ?",
            "2012-03-11T00:00:00-05:00",
            "2013-03-11T02:30:00-04:00",
        ),
        (
            "0 * * * ?",
            "2012-03-11T00:00:00-05:00",
            "2012-03-11T01:00:00-05:00",
        ),
        (
            "0 * * * ?",
            "2012-03-11T01:00:00-05:00",
            "2012-03-11T03:00:00-04:00",
        ),
        (
            "0 * * * ?",
            "2012-03-11T03:00:00-04:00",
            "2012-03-11T04:00:00-04:00",
        ),
        (
            "0 1 * * ?",
            "2012-03-11T01:00:00-05:00",
            "2012-03-12T01:00:00-04:00",
        ),
        (
            "0 2 * * ?",
            "2012-03-11T00:00:00-05:00",
            "2012-03-12T02:00:00-04:00",
        ),
        // 2 am EDT → 1 am EST: 1:00 to 1:59 twice on 2012-11-04.
        (
            "30 2 04 Nov ?",
            "2012-11-04T00:00:00-04:00",
            "2012-11-04T02:30:00-05:00",
        ),
        (
            "30 1 04 Nov ?",
            "2012-11-04T01:45:00-04:00",
            "2012-11-04T01:30:00-05:00",
        ),
        (
            "0 * * * ?",
            "2012-11-04T00:00:00-04:00",
            "2012-11-04T01:00:00-04:00",
        ),
        (
            "0 * * * ?",
            "2012-11-04T01:00:00-04:00",
            "2012-11-04T01:00:00-05:00",
        ),
        (
            "0 * * * ?",
            "2012-11-04T01:00:00-05:00",
            "2012-11-04T02:00:00-05:00",
        ),
        (
            "0 1 * * ?",
            "2012-11-04T00:00:00-04:00",
            "2012-11-04T01:00:00-04:00",
        ),
        (
            "0 1 * * ?",
            "2012-11-04T01:00:00-04:00",
            "2012-11-04T01:00:00-05:00",
        ),
        (
            "0 1 * * ?",
            "2012-11-04T01:00:00-05:00",
            "2012-11-05T01:00:00-05:00",
        ),
        (
            "0 2 * * ?",
            "2012-11-04T00:00:00-04:00",
            "2012-11-04T02:00:00-05:00",
        ),
        (
            "0 3 * * ?",
            "2012-11-04T00:00:00-04:00",
            "2012-11-04T03:00:00-05:00",
        ),
        (
            "0 3 3 * ?",
            "2012-11-04T00:00:00-04:00",
            "2012-12-03T03:00:00-05:00",
        ),
    ];
    for (fields, after, want) in cases {
        let schedule = format!("TZ=America/New_York {fields}");
        assert_eq!(next(&schedule, after), Some(at(want)), "{schedule} after {after}");
    }
    let sao_paulo = [
        (
            "0 9 10 * ?",
            "2018-10-17T05:00:00-04:00",
            "2018-11-10T06:00:00-05:00",
        ),
        (
            "0 9 22 * ?",
            "2018-02-14T05:00:00-05:00",
            "2018-02-22T07:00:00-05:00",
        ),
    ];
    for (fields, after, want) in sao_paulo {
        let schedule = format!("TZ=America/Sao_Paulo {fields}");
        assert_eq!(next(&schedule, after), Some(at(want)), "{schedule} after {after}");
    }
}

#[test]
fn refusals_read_as_robfigs() {
    let cases = [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        (
            "5-1 * * * *",
            "beginning of range (5) beyond end of range (1): 5-1",
        ),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("1/2/3 * * * *", "too many slashes: 1/2/3"),
        (
            "a * * * *",
            "failed to parse int from a: strconv.Atoi: parsing \"a\": invalid syntax",
        ),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("@every", "unrecognized descriptor: @every"),
        (
            "@every 1d",
            "failed to parse duration @every 1d: time: unknown unit \"d\" in duration \"1d\"",
        ),
        (
            "@every 5",
            "failed to parse duration @every 5: time: missing unit in duration \"5\"",
        ),
    ];
    for (schedule, want) in cases {
        assert_eq!(error(schedule), want, "{schedule:?}");
    }
    assert_eq!(
        error("TZ=Nowhere/Land 0 * * * *"),
        "provided bad location Nowhere/Land: unknown time zone Nowhere/Land"
    );
    // robfig panics here (it slices up to a space that is not there).
    assert!(error("TZ=UTC").starts_with("provided bad location UTC"));
}

/// Go's `time.LoadLocation` names two zones no database holds: "" (UTC) and `Local`.
#[test]
fn an_empty_zone_is_utc_and_local_the_controller_managers() {
    let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
    let next_in = |schedule: &str, local: &TimeZone| {
        Schedule::parse(schedule, local)
            .unwrap_or_else(|e| panic!("{schedule}: {e}"))
            .next(at("2024-01-01T00:00:00Z"))
    };
    assert_eq!(next_in("TZ= 0 9 * * *", &tokyo), Some(at("2024-01-01T09:00:00Z")));
    assert_eq!(
        next_in("TZ=UTC 0 9 * * *", &tokyo),
        Some(at("2024-01-01T09:00:00Z"))
    );
    assert_eq!(
        next_in("CRON_TZ=Local 0 9 * * *", &tokyo),
        Some(at("2024-01-02T00:00:00Z"))
    );
}

/// Whether minute `t` (UTC) matches `fields`, straight from the cron definition.
fn matches(fields: &[Vec<u32>; 5], dom_star: bool, dow_star: bool, t: Timestamp) -> bool {
    let z = t.to_zoned(TimeZone::UTC);
    let has = |i: usize, v: i8| fields[i].contains(&u32::try_from(v).unwrap());
    let dom = has(2, z.day());
    let dow = has(4, z.weekday().to_sunday_zero_offset());
    let day = if dom_star || dow_star {
        dom && dow
    } else {
        dom || dow
    };
    has(0, z.minute()) && has(1, z.hour()) && has(3, z.month()) && day
}

fn list(values: &[u32]) -> String {
    values.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn next_is_the_first_matching_minute_in_utc(
        minutes in proptest::collection::btree_set(0u32..60, 1..4),
        hours in proptest::collection::btree_set(0u32..24, 1..4),
        days in proptest::option::of(proptest::collection::btree_set(1u32..32, 1..6)),
        weekdays in proptest::option::of(proptest::collection::btree_set(0u32..7, 1..3)),
        start in 946_684_800i64..1_893_456_000,
    ) {
        let minutes: Vec<u32> = minutes.into_iter().collect();
        let hours: Vec<u32> = hours.into_iter().collect();
        let (dom_star, dom): (bool, Vec<u32>) =
            days.map_or((true, (1..32).collect()), |d| (false, d.into_iter().collect()));
        let (dow_star, dow): (bool, Vec<u32>) =
            weekdays.map_or((true, (0..7).collect()), |d| (false, d.into_iter().collect()));
        let text = format!(
            "{} {} {} * {}",
            list(&minutes),
            list(&hours),
            if dom_star { "*".to_owned() } else { list(&dom) },
            if dow_star { "*".to_owned() } else { list(&dow) },
        );
        let fields = [minutes, hours, dom, (1..13).collect(), dow];
        let after = Timestamp::from_second(start).unwrap();
        let got = Schedule::parse(&text, &TimeZone::UTC).unwrap().next(after).unwrap();
        prop_assert!(got > after);
        prop_assert!(matches(&fields, dom_star, dow_star, got), "{text}: {got} does not match");
        // Every whole minute strictly between does not match (bounded walk).
        let mut m = Timestamp::from_second(start - start.rem_euclid(60) + 60).unwrap();
        let mut steps = 0;
        while m < got && steps < 50_000 {
            prop_assert!(!matches(&fields, dom_star, dow_star, m), "{text}: {m} matched before {got}");
            m = Timestamp::from_second(m.as_second() + 60).unwrap();
            steps += 1;
        }
    }
}

/// robfig/cron's own answers (`hack/cron-oracle`: generated schedules, five of them in zones with
/// daylight saving, half the instants near a transition): kcm-rs must give the same next instant,
/// the same "never", and the same refusal text.
#[test]
fn every_generated_case_matches_robfig() {
    let mut wrong = Vec::new();
    let cases = include_str!("robfig_cases.tsv");
    for line in cases.lines() {
        let [schedule, after, want] = line.split('\t').collect::<Vec<_>>()[..] else {
            panic!("bad fixture line {line:?}");
        };
        let got = match Schedule::parse(schedule, &TimeZone::UTC) {
            Err(e) => format!("error: {e}"),
            Ok(s) => s.next(at(after)).map_or("never".to_owned(), |t| {
                t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
            }),
        };
        if got != want {
            wrong.push(format!("{schedule:?} after {after}: robfig {want}, kcm-rs {got}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases differ:\n{}",
        wrong.len(),
        cases.lines().count(),
        wrong.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
}
