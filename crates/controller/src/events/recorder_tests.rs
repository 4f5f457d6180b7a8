//! The background writer as a stopping controller sees it.

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kcm_testing::ApiServer;

use super::*;

fn object(name: &str) -> ObjectReference {
    ObjectReference {
        kind: Some("ReplicaSet".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        ..ObjectReference::default()
    }
}

#[tokio::test]
async fn flush_returns_once_every_event_recorded_before_it_is_written() {
    let server = ApiServer::new();
    let recorder = EventRecorder::new(server.client(), "replicaset-controller", "test");
    for (i, reason) in ["SuccessfulCreate", "SuccessfulDelete", "FailedCreate"]
        .into_iter()
        .enumerate()
    {
        recorder.record(
            &object(&format!("web-{i}")),
            TYPE_NORMAL,
            reason,
            format!("event {i}"),
        );
    }
    recorder.flush().await;
    let mut reasons: Vec<String> = server
        .list::<Event>()
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    reasons.sort();
    assert_eq!(reasons, ["FailedCreate", "SuccessfulCreate", "SuccessfulDelete"]);
}

#[tokio::test]
async fn an_in_memory_recorder_flushes_at_once() {
    let recorder = EventRecorder::in_memory();
    recorder.record(&object("web"), TYPE_NORMAL, "SuccessfulCreate", "made".into());
    recorder.flush().await;
    assert_eq!(recorder.recorded().len(), 1);
}
