//! The active list against the cache, as upstream's `syncCronJob` reconciles it (its
//! "prev ran but done", "still active", "slow job lister" and lastSuccessfulTime cases).

use serde_json::json;

use super::*;

fn job(uid: &str, condition: Option<&str>, completed: Option<&str>) -> Arc<Job> {
    crate::fixtures::job(
        json!({"name": format!("job-{uid}"), "namespace": "snazzycats", "uid": uid}),
        json!({"completionTime": completed}),
        condition,
    )
}

fn cron_job(active: &[&str], last_successful: Option<&str>) -> CronJob {
    let active: Vec<_> = active
        .iter()
        .map(
            |uid| json!({"kind": "Job", "namespace": "snazzycats", "name": format!("job-{uid}"), "uid": uid}),
        )
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": "mycronjob", "namespace": "snazzycats", "uid": "1a2b3c"},
        "spec": {"schedule": "0 * * * ?", "jobTemplate": {}},
        "status": {"active": active, "lastSuccessfulTime": last_successful},
    }))
    .unwrap()
}

fn uids(review: &ActiveReview) -> Vec<&str> {
    review
        .status
        .active
        .iter()
        .flatten()
        .filter_map(|r| r.uid.as_deref())
        .collect()
}

fn reasons(review: &ActiveReview) -> Vec<&str> {
    review.events.iter().map(|e| e.reason.as_ref()).collect()
}

#[test]
fn a_finished_job_leaves_the_list_and_a_succeeded_one_sets_last_successful_time() {
    let jobs = [
        job("done", Some("Complete"), Some("2016-05-19T10:00:10Z")),
        job("failed", Some("Failed"), None),
        job("running", None, None),
    ];
    let review = review_active(&cron_job(&["done", "failed", "running"], None), &jobs);
    assert_eq!(uids(&review), ["running"]);
    assert_eq!(
        reasons(&review),
        [REASON_SAW_COMPLETED_JOB, REASON_SAW_COMPLETED_JOB]
    );
    assert_eq!(
        review.events[0].message,
        "Saw completed job: job-done, condition: Complete"
    );
    assert_eq!(
        review.events[1].message,
        "Saw completed job: job-failed, condition: Failed"
    );
    assert_eq!(
        review.status.last_successful_time.map(|t| t.0.to_string()),
        Some("2016-05-19T10:00:10Z".into())
    );
    assert!(review.changed && review.unlisted.is_empty() && review.unseen.is_empty());
}

#[test]
fn still_active_changes_nothing() {
    let review = review_active(&cron_job(&["running"], None), &[job("running", None, None)]);
    assert_eq!((uids(&review), review.changed), (vec!["running"], false));
    assert!(review.events.is_empty());
}

#[test]
fn last_successful_time_only_moves_forward_and_counts_unlisted_successes() {
    let later = job("later", Some("Complete"), Some("2016-05-19T11:00:00Z"));
    let earlier = job("earlier", Some("Complete"), Some("2016-05-19T09:00:00Z"));
    let review = review_active(&cron_job(&[], Some("2016-05-19T10:00:00Z")), &[earlier, later]);
    assert_eq!(
        review.status.last_successful_time.map(|t| t.0.to_string()),
        Some("2016-05-19T11:00:00Z".into())
    );
    assert!(review.changed);
    assert!(review.events.is_empty(), "neither was in the list");
}

#[test]
fn doubts_go_to_the_api_server() {
    // "slow job lister": listed but not cached; "slow cronjob cache": cached but not listed.
    let review = review_active(&cron_job(&["lagging"], None), &[job("new", None, None)]);
    assert_eq!(review.unlisted.len(), 1);
    assert_eq!(
        review
            .unseen
            .iter()
            .filter_map(|r| r.uid.as_deref())
            .collect::<Vec<_>>(),
        ["lagging"]
    );
    assert!(!review.changed, "nothing decided yet");
    let mut review = review;
    let missing = review.unseen.clone();
    drop_missing(&mut review, &missing);
    assert!(uids(&review).is_empty());
    assert_eq!(reasons(&review), [REASON_MISSING_JOB]);
    assert_eq!(review.events[0].message, "Active job went missing: job-lagging");
    assert_eq!(
        unexpected(&review.unlisted[0]).message,
        "Saw a job that the controller did not create or forgot: job-new"
    );
}
