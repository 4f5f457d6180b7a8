use k8s_openapi::api::batch::v1::CronJob;
use serde_json::{Value, json};

use super::*;
use crate::random_differential::program::CRON;

const SCHEDULE: &str = "*/1 * * * *";
const INSTANTIATE: &str = "cronjob.kubernetes.io/instantiate";

fn cron_job(active: &[&str], last_schedule: Option<&str>, limits: Value) -> CronJob {
    let active: Vec<Value> = active.iter().map(|u| json!({"uid": u, "name": u})).collect();
    let mut spec = json!({"schedule": SCHEDULE, "jobTemplate": {"spec": {"template": {}}}});
    crate::json::merge(&mut spec, limits);
    serde_json::from_value(json!({
        "metadata": {"name": CRON, "uid": "cj"},
        "spec": spec,
        "status": {"active": active, "lastScheduleTime": last_schedule}
    }))
    .unwrap()
}

/// A scheduled Job of `minute` (its name and annotation), in `zone`'s offset, or a manual one.
fn job(uid: &str, minute: Option<i64>, condition: Option<&str>) -> Job {
    let (name, annotations) = match minute {
        Some(m) => {
            let t = Timestamp::from_second(m * 60).unwrap();
            (format!("cron-{m}"), json!({SCHEDULED: t.to_string()}))
        }
        None => (format!("cron-manual-{uid}"), json!({INSTANTIATE: "manual"})),
    };
    let status = match condition {
        Some(c) => json!({"conditions": [{"type": c, "status": "True"}]}),
        None => json!({"active": 1, "ready": 1}),
    };
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": uid, "annotations": annotations,
                     "labels": {"from": "template"},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": CRON,
                                          "uid": "cj", "controller": true}]},
        "spec": {"template": {}},
        "status": status
    }))
    .unwrap()
}

fn snapshot(cj: CronJob, jobs: Vec<Job>) -> Snapshot {
    Snapshot {
        cron_job: Some(cj),
        jobs,
        ..Snapshot::default()
    }
}

/// Two runs minutes apart, whose Jobs' names and slots differ, project the same; the role of each
/// Job (its order among the scheduled ones, a manual one's step) is what is compared.
#[test]
fn jobs_are_compared_by_role_not_by_minute() {
    let a = snapshot(
        cron_job(&["a2"], Some("1970-01-01T00:02:00Z"), json!({})),
        vec![
            job("a1", Some(1), Some("Complete")),
            job("a2", Some(2), None),
            job("3", None, None),
        ],
    );
    let b = snapshot(
        cron_job(&["b2"], Some("1970-01-01T00:08:00Z"), json!({})),
        vec![
            job("b2", Some(8), None),
            job("3", None, None),
            job("b1", Some(5), Some("Complete")),
        ],
    );
    let (pa, pb) = (project(&a), project(&b));
    assert_eq!(pa, pb);
    assert_eq!(pa["status.lastScheduleTime"], "the newest scheduled Job's slot");
    assert!(
        pa["job scheduled 1"].contains("in the active list true"),
        "{pa:?}"
    );
    assert!(
        pa["job scheduled 0"].contains("annotation is the name's minute: true, zone Some(\"Z\")"),
        "{pa:?}"
    );
    assert!(pa["job cron-manual-3"].contains("zone None"), "{pa:?}");
    let c = snapshot(
        cron_job(&[], Some("1970-01-01T00:08:00Z"), json!({})),
        b.jobs.clone(),
    );
    assert_ne!(project(&c), pb, "the active list differs");
}

#[test]
fn an_active_list_naming_a_finished_job_or_history_above_its_limit_is_not_settled() {
    let settled = snapshot(
        cron_job(&["2"], None, json!({"failedJobsHistoryLimit": 1})),
        vec![job("1", Some(1), Some("Failed")), job("2", Some(2), None)],
    );
    let mut out = Vec::new();
    unsettled(&settled, &mut out);
    assert_eq!(out, Vec::<String>::new());
    let stale = snapshot(cron_job(&["1", "2"], None, json!({})), settled.jobs.clone());
    unsettled(&stale, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    out.clear();
    let kept = snapshot(
        cron_job(&["2"], None, json!({"failedJobsHistoryLimit": 0})),
        settled.jobs.clone(),
    );
    unsettled(&kept, &mut out);
    assert_eq!(out, vec!["finished Jobs above the history limits".to_owned()]);
}

#[test]
fn missing_job_is_left_out_of_the_reasons() {
    let reasons = "CronJob/MissingJob, CronJob/SuccessfulCreate, Job/SuccessfulCreate";
    assert_eq!(
        without_missing_job(reasons),
        "CronJob/SuccessfulCreate, Job/SuccessfulCreate"
    );
    assert_eq!(without_missing_job("CronJob/MissingJob"), "");
    assert_eq!(without_missing_job(""), "");
}
