//! The background writer as a stopping controller sees it.

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kcm_testing::{ApiServer, Verb};

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

/// Polls the server (on paused time) until it holds `n` events, or a minute of tries passed.
async fn events_after_tries(server: &ApiServer, n: usize) -> Vec<Event> {
    for _ in 0..600 {
        let events = server.list::<Event>();
        if events.len() >= n {
            return events;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    server.list::<Event>()
}

fn creates(server: &ApiServer) -> Vec<String> {
    server
        .writes("events")
        .into_iter()
        .filter(|w| w.starts_with("create"))
        .collect()
}

/// A lost connection does not lose the event: it is sent again under the same name (client-go's
/// `recordToSink`), so a create applied whose answer was lost meets AlreadyExists, not a twin.
#[tokio::test(start_paused = true)]
async fn an_event_whose_connection_dropped_is_sent_again_under_its_name() {
    let server = ApiServer::new();
    server.on(Verb::Create, "events").times(1).drop_connection();
    server.on(Verb::Create, "events").times(1).lose_answer();
    let recorder = EventRecorder::new(server.client(), "cronjob-controller", "test");
    recorder.record(&object("web"), TYPE_NORMAL, "SuccessfulCreate", "made".into());
    let events = events_after_tries(&server, 1).await;
    assert_eq!(events.len(), 1);
    // One more try: the one after the lost answer, refused as AlreadyExists.
    tokio::time::sleep(EVENT_RETRY_WAIT * 2).await;
    let creates = creates(&server);
    assert_eq!(creates.len(), 3, "{creates:?}");
    let names: Vec<_> = server.requests().iter().filter_map(|r| r.name.clone()).collect();
    assert!(names.windows(2).all(|w| w[0] == w[1]), "one name: {names:?}");
    assert_eq!(server.list::<Event>().len(), 1);
}

/// The server's own answer is final, as client-go gives up on a `StatusError`; a connection that
/// keeps failing gets [`EVENT_TRIES`] tries.
#[tokio::test(start_paused = true)]
async fn an_answer_is_final_and_a_failing_connection_gets_twelve_tries() {
    for (fail, tries) in [(false, 1), (true, EVENT_TRIES as usize)] {
        let server = ApiServer::new();
        let rule = server.on(Verb::Create, "events");
        if fail {
            rule.drop_connection();
        } else {
            rule.fail(500, "InternalError", "etcd");
        }
        let recorder = EventRecorder::new(server.client(), "cronjob-controller", "test");
        recorder.record(&object("web"), TYPE_NORMAL, "SuccessfulCreate", "made".into());
        tokio::time::sleep(EVENT_RETRY_WAIT * (EVENT_TRIES + 2)).await;
        assert_eq!(creates(&server).len(), tries, "connection dropped: {fail}");
        assert!(server.list::<Event>().is_empty());
    }
}

/// A stopping controller's flush gives up on an event waiting to be tried again, rather than hold
/// the stop (and a shard's release) for up to two minutes of tries.
#[tokio::test(start_paused = true)]
async fn flush_ends_the_wait_for_another_try() {
    let server = ApiServer::new();
    server.on(Verb::Create, "events").drop_connection();
    let recorder = EventRecorder::new(server.client(), "cronjob-controller", "test");
    recorder.record(&object("web"), TYPE_NORMAL, "SuccessfulCreate", "made".into());
    tokio::task::yield_now().await;
    let start = tokio::time::Instant::now();
    recorder.flush().await;
    assert_eq!(start.elapsed(), std::time::Duration::ZERO);
    assert_eq!(creates(&server).len(), 1);
}

/// What gets another try: the transport's failures, not the server's answers nor a refusal by a
/// layer of this process's client (a shard's fence).
#[test]
fn only_transport_failures_are_transient() {
    #[derive(Debug, thiserror::Error)]
    #[error("refused: this replica does not hold the shard")]
    struct Refused(#[source] crate::RefusedHere);
    #[derive(Debug, thiserror::Error)]
    #[error("connection timed out")]
    struct ConnectTimedOut;
    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    assert!(transient(&kube::Error::Service(Box::new(reset))));
    assert!(transient(&kube::Error::Service(Box::new(ConnectTimedOut))));
    assert!(!transient(&kube::Error::Service(Box::new(Refused(
        crate::RefusedHere
    )))));
    let status = kube::core::Status::failure("etcd", "InternalError").with_code(500);
    assert!(!transient(&kube::Error::Api(Box::new(status))));
}

fn only_event(server: &ApiServer) -> Event {
    let mut events = server.list::<Event>();
    assert_eq!(events.len(), 1, "{events:?}");
    events.remove(0)
}

/// A repeat whose event is gone (expired after the API server's hour, or deleted) brings it back
/// under its name, first timestamp and next count, as client-go's recorder does: its cache holds the
/// event it observed, and the create after the patch's 404 is of that event.
#[tokio::test]
async fn a_repeat_whose_event_is_gone_comes_back_under_its_name_and_count() {
    let server = ApiServer::new();
    let recorder = EventRecorder::new(server.client(), "job-controller", "test");
    let again = || recorder.record(&object("web"), TYPE_NORMAL, "SuccessfulCreate", "made".into());
    again();
    again();
    recorder.flush().await;
    let first = only_event(&server);
    assert_eq!(first.count, Some(2));
    let name = first.metadata.name.clone().expect("a name");
    server.remove::<Event>("ns", &name).expect("the event");
    again();
    recorder.flush().await;
    let back = only_event(&server);
    assert_eq!(back.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(back.count, Some(3));
    assert_eq!(back.first_timestamp, first.first_timestamp);
}

/// An event the server refused still counts: the next identical one patches its name with count 2
/// and, finding nothing, creates it so (client-go records an observation before writing it).
#[tokio::test]
async fn a_refused_event_is_counted_by_the_next_one() {
    let server = ApiServer::new();
    server
        .on(Verb::Create, "events")
        .times(1)
        .fail(500, "InternalError", "etcd");
    let recorder = EventRecorder::new(server.client(), "job-controller", "test");
    recorder.record(&object("web"), TYPE_NORMAL, "SuccessfulCreate", "made".into());
    recorder.flush().await;
    assert!(server.list::<Event>().is_empty());
    let refused = server.requests()[0].name.clone();
    recorder.record(&object("web"), TYPE_NORMAL, "SuccessfulCreate", "made".into());
    recorder.flush().await;
    let event = only_event(&server);
    assert_eq!(event.metadata.name, refused);
    assert_eq!(event.count, Some(2));
}

/// An object name too long for `<name>.<nanoseconds>` (more than 236 characters) gets an event
/// named by a UUID, as client-go's, and its repeat patches that event rather than creating another.
#[tokio::test]
async fn an_event_about_a_long_name_is_named_by_a_uuid_and_its_repeat_patches_it() {
    let server = ApiServer::new();
    let recorder = EventRecorder::new(server.client(), "deployment-controller", "test");
    let long = "d".repeat(240);
    let again = || recorder.record(&object(&long), TYPE_NORMAL, "ScalingReplicaSet", "scaled".into());
    again();
    recorder.flush().await;
    let first = only_event(&server);
    let name = first.metadata.name.clone().expect("a name");
    let parsed = uuid::Uuid::parse_str(&name).expect("a UUID");
    assert_eq!(parsed.get_version_num(), 4, "{name}");
    again();
    recorder.flush().await;
    let repeat = only_event(&server);
    assert_eq!(repeat.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(repeat.count, Some(2));
    let patch = server
        .requests()
        .into_iter()
        .find(|r| r.verb == Some(Verb::Patch))
        .expect("a patch");
    assert_eq!(patch.name, Some(name));
    // client-go's sink patches events with a strategic merge patch.
    assert_eq!(
        patch.content_type.as_deref(),
        Some("application/strategic-merge-patch+json")
    );
}

/// A name with room for the suffix keeps client-go's `<name>.<nanoseconds in hex>`.
#[tokio::test]
async fn an_event_is_named_after_its_object_and_time() {
    let server = ApiServer::new();
    let recorder = EventRecorder::new(server.client(), "deployment-controller", "test");
    recorder.record(
        &object(&"d".repeat(236)),
        TYPE_NORMAL,
        "ScalingReplicaSet",
        "scaled".into(),
    );
    recorder.flush().await;
    let name = only_event(&server).metadata.name.expect("a name");
    let (object, stamp) = name.rsplit_once('.').expect("a dot");
    assert_eq!(object, "d".repeat(236));
    assert_eq!(stamp.len(), 16, "{name}");
}
