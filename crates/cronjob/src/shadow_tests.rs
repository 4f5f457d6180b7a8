//! What the shadow reports for a CronJob, from the caches alone.

use serde_json::json;

use super::*;

fn cron_job(last: &str, active: &[&str]) -> CronJob {
    let active: Vec<_> = active
        .iter()
        .map(|n| json!({"kind": "Job", "namespace": "ns", "name": n, "uid": n}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "creationTimestamp": "2016-05-19T08:00:00Z"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {}},
        "status": {"lastScheduleTime": last, "active": active},
    }))
    .unwrap()
}

fn now() -> Timestamp {
    "2016-05-19T10:00:05Z".parse().unwrap()
}

fn job(name: &str, condition: Option<&str>) -> Arc<Job> {
    crate::fixtures::job(
        json!({"name": name, "namespace": "ns", "uid": name}),
        json!({}),
        condition,
    )
}

#[test]
fn a_slot_upstream_has_not_started_is_a_job_kcm_rs_would_create() {
    let (lines, again) = differences(&cron_job("2016-05-19T09:00:00Z", &[]), &[], now(), &TimeZone::UTC);
    assert_eq!(
        lines,
        ["jobs: kcm-rs would create c-24394200 for 2016-05-19T10:00:00Z"]
    );
    assert!(again.is_some());
}

#[test]
fn a_slot_upstream_started_and_listed_is_agreement() {
    let cj = cron_job("2016-05-19T10:00:00Z", &["c-24394200"]);
    let (lines, again) = differences(&cj, &[job("c-24394200", None)], now(), &TimeZone::UTC);
    assert_eq!(lines, Vec::<String>::new());
    assert_eq!(again, Some(Duration::from_millis(3_595_100)));
}

#[test]
fn a_finished_job_still_listed_is_a_status_difference() {
    let cj = cron_job("2016-05-19T10:00:00Z", &["c-24394200"]);
    let (lines, _) = differences(&cj, &[job("c-24394200", Some("Complete"))], now(), &TimeZone::UTC);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("status.active: upstream"), "{lines:?}");
}
