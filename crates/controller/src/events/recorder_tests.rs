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

/// A cluster-scoped object's events are written to `default`, whether its reference leaves the
/// namespace out or gives it empty (client-go's recorder treats both alike).
#[tokio::test]
async fn a_cluster_scoped_objects_events_go_to_default() {
    let server = ApiServer::new();
    let recorder = EventRecorder::new(server.client(), "garbage-collector-controller", "test");
    for (name, namespace) in [("a", None), ("b", Some(String::new()))] {
        let role = ObjectReference {
            kind: Some("ClusterRole".into()),
            namespace,
            name: Some(name.into()),
            ..ObjectReference::default()
        };
        recorder.record(
            &role,
            TYPE_WARNING,
            "OwnerRefInvalidNamespace",
            format!("about {name}"),
        );
    }
    recorder.flush().await;
    let namespaces: Vec<Option<String>> = server
        .list::<Event>()
        .into_iter()
        .map(|e| e.metadata.namespace)
        .collect();
    assert_eq!(
        namespaces,
        [Some("default".to_owned()), Some("default".to_owned())]
    );
}
