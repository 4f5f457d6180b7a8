//! The cleanup against an in-memory API server ([`testing::ApiServer`]): what it deletes, with which
//! options, and what it leaves.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use testing::{ApiServer, FakeClock, Verb};

use super::*;

const FINISHED: &str = "2026-01-01T00:00:00Z";

fn job(ttl: i32) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid"},
        "spec": {"ttlSecondsAfterFinished": ttl, "template": {}},
        "status": {"conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": FINISHED}
        ]}
    }))
    .unwrap()
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn server(j: &Job, now: &str) -> (ApiServer, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::at(at(now)));
    let server = ApiServer::with_clock(clock.clone());
    server.insert(j);
    (server, clock)
}

fn key() -> ObjectKey {
    ObjectKey::new(Some("ns"), "j")
}

#[tokio::test]
async fn a_due_job_is_deleted_in_the_foreground_on_its_uid() {
    let (server, clock) = server(&job(10), "2026-01-01T00:00:12.5Z");
    let done = delete_if_due(&server.client(), &*clock, &key()).await.unwrap();
    assert_eq!(done, Cleanup::Deleted { late_seconds: 2.5 });
    let delete = server
        .requests()
        .into_iter()
        .find(|r| r.verb == Some(Verb::Delete))
        .expect("a delete");
    assert_eq!(delete.body["propagationPolicy"], "Foreground");
    let uid = server.get::<Job>("ns", "j").map(|j| j.metadata.uid);
    assert_eq!(uid, None, "deleted");
    assert!(
        delete.body["preconditions"]["uid"].is_string(),
        "{:?}",
        delete.body
    );
}

#[tokio::test]
async fn a_ttl_raised_since_the_cache_saw_it_waits() {
    let (server, clock) = server(&job(600), "2026-01-01T00:00:12Z");
    let done = delete_if_due(&server.client(), &*clock, &key()).await.unwrap();
    assert_eq!(done, Cleanup::Later(Duration::from_secs(588)));
    assert!(server.get::<Job>("ns", "j").is_some());
    assert!(server.requests().iter().all(|r| r.verb != Some(Verb::Delete)));
}

#[tokio::test]
async fn a_job_already_gone_is_nothing_and_a_refused_delete_an_error() {
    let (server, clock) = server(&job(1), "2026-01-01T00:00:12Z");
    server.remove::<Job>("ns", "j");
    let done = delete_if_due(&server.client(), &*clock, &key()).await.unwrap();
    assert_eq!(done, Cleanup::Nothing);
    server.insert(&job(1));
    server
        .on(Verb::Delete, "jobs")
        .fail(409, "Conflict", "Precondition failed: UID in precondition");
    let err = delete_if_due(&server.client(), &*clock, &key())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cleaning up Job ns/j"), "{err}");
}
