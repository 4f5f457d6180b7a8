//! Reconcile latency of the CronJob controller's plan, what a sync computes before any write: the
//! active list against the cached Jobs and the history limits (`review_active`, `jobs_to_delete`,
//! over 20 finished Jobs and 3 running), then the decision (`decide`: the schedule parsed and walked)
//! for a slot not yet due, a slot due now, a week of missed minutes, and a schedule in a time zone.

use std::{hint::black_box, sync::Arc};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    jiff::{Timestamp, tz::TimeZone},
};
use serde_json::{Value, json};

fn cron_job(schedule: &str, last: &str, extra: Value) -> CronJob {
    let active: Vec<Value> = (0..3)
        .map(|i| json!({"kind": "Job", "namespace": "ns", "name": format!("running-{i}"), "uid": format!("r{i}")}))
        .collect();
    let mut spec = json!({"schedule": schedule, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                          "jobTemplate": {"spec": {"template": {}}}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
        "status": {"lastScheduleTime": last, "active": active},
    }))
    .expect("a CronJob")
}

fn jobs() -> Vec<Arc<Job>> {
    let job = |name: String, uid: String, minute: usize, condition: Option<&str>| {
        let conditions: Vec<Value> = condition
            .map(|c| json!({"type": c, "status": "True"}))
            .into_iter()
            .collect();
        Arc::new(
            serde_json::from_value::<Job>(json!({
                "metadata": {"name": name, "namespace": "ns", "uid": uid},
                "status": {"startTime": format!("2026-01-01T01:{minute:02}:00Z"), "conditions": conditions,
                           "completionTime": format!("2026-01-01T01:{minute:02}:30Z")},
            }))
            .expect("a Job"),
        )
    };
    let mut all: Vec<_> = (0..20)
        .map(|i| {
            job(
                format!("done-{i}"),
                format!("d{i}"),
                i,
                Some(if i % 4 == 0 { "Failed" } else { "Complete" }),
            )
        })
        .collect();
    all.extend((0..3).map(|i| job(format!("running-{i}"), format!("r{i}"), 30 + i, None)));
    all
}

fn bench(c: &mut Criterion) {
    let at = |s: &str| s.parse::<Timestamp>().expect("a time");
    let jobs = jobs();
    let mut g = c.benchmark_group("cronjob_plan");
    let cj = cron_job("*/5 * * * *", "2026-01-01T02:00:00Z", json!({}));
    g.bench_function("review_20_finished_3_running", |b| {
        b.iter(|| {
            let review = cronjob::review_active(black_box(&cj), black_box(&jobs));
            (review, cronjob::jobs_to_delete(&cj, &jobs))
        });
    });
    let cases = [
        (
            "not_due",
            cron_job("*/5 * * * *", "2026-01-01T02:00:00Z", json!({})),
            at("2026-01-01T02:03:00Z"),
        ),
        (
            "due",
            cron_job("*/5 * * * *", "2026-01-01T02:00:00Z", json!({})),
            at("2026-01-01T02:05:01Z"),
        ),
        (
            "week_missed",
            cron_job("* * * * *", "2026-01-01T02:00:00Z", json!({})),
            at("2026-01-08T02:00:30Z"),
        ),
        (
            "time_zone",
            cron_job(
                "30 9 * * 1-5",
                "2026-01-01T14:30:00Z",
                json!({"timeZone": "America/New_York"}),
            ),
            at("2026-01-02T14:30:01Z"),
        ),
    ];
    for (name, cj, now) in &cases {
        g.bench_with_input(BenchmarkId::new("decide", name), &(cj, now), |b, (cj, now)| {
            b.iter(|| cronjob::decide(black_box(cj), **now, &TimeZone::UTC));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
