//! The protobuf path against pods recorded from the local control plane (`benches/fixtures`): one
//! namespace with a Deployment's pods (a sidecar and a plain init container), Jobs' succeeded, failed
//! (exit 3) and running pods (Indexed, with tracking finalizers), and a bare pod held terminating by a
//! finalizer, annotated with a deletion cost and a note nobody reads. The same list was taken as JSON
//! and as protobuf at resourceVersion 348, and a streaming list as protobuf.

use std::time::Duration;

use bytes::Bytes;
use informer::{
    ListerWatcher as _, Reflector, ReflectorConfig, ReflectorEvent,
    protobuf::{CONTENT_TYPE_PROTOBUF, ProtobufListWatch, ProtobufObject as _, decode, encode},
    testing::fake_api::{Answer, FakeApi},
};
use kube::api::{ListParams, ObjectList, WatchEvent, WatchParams};
use proptest::prelude::*;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Pod;

const PODS_JSON: &str = include_str!("../../../../benches/fixtures/pods.json");
const PODS_PB: &[u8] = include_bytes!("../../../../benches/fixtures/pods.pb");
const WATCH_PB: &[u8] = include_bytes!("../../../../benches/fixtures/pods-watch.pb");
const SHARDED_JSON: &str = include_str!("../../../../benches/fixtures/pods-sharded.json");
const SHARDED_PB: &[u8] = include_bytes!("../../../../benches/fixtures/pods-sharded.pb");
const NOT_FOUND_PB: &[u8] = include_bytes!("../../../../benches/fixtures/status-notfound.pb");
const STREAM: &str = "application/vnd.kubernetes.protobuf;stream=watch";
const PATH: &str = "/api/v1/namespaces/rec/pods";

fn json_pods() -> ObjectList<Pod> {
    serde_json::from_str(PODS_JSON).unwrap()
}

/// A protobuf answer with this status code.
fn answer(code: u16, body: &'static [u8]) -> Answer {
    Answer::Raw {
        code,
        content_type: CONTENT_TYPE_PROTOBUF,
        body: Bytes::from_static(body),
    }
}

fn protobuf(api: &FakeApi) -> ProtobufListWatch<Pod> {
    ProtobufListWatch::new(api.client(), PATH)
}

/// Every string and list of a cached pod that holds more room than its contents: the JSON path copies
/// each at its exact length, so the protobuf path must too, or the same pod costs more by content type.
fn spare_room(p: &Pod) -> Vec<String> {
    let mut spare = Vec::new();
    let mut text = |what: &str, s: &str, capacity: usize| {
        if s.len() != capacity {
            spare.push(format!("{what} {s:?}: {capacity} bytes for {}", s.len()));
        }
    };
    let m = &p.metadata;
    for (what, s) in [
        ("name", &m.name),
        ("namespace", &m.namespace),
        ("uid", &m.uid),
        ("resourceVersion", &m.resource_version),
    ] {
        if let Some(s) = s {
            text(what, s, s.capacity());
        }
    }
    for (k, v) in m.labels.iter().chain(&m.annotations).flatten() {
        text("map key", k, k.capacity());
        text("map value", v, v.capacity());
    }
    for f in m.finalizers.iter().flatten() {
        text("finalizer", f, f.capacity());
    }
    for o in m.owner_references.iter().flatten() {
        for s in [&o.api_version, &o.kind, &o.name, &o.uid] {
            text("ownerReference", s, s.capacity());
        }
    }
    let (spec, status) = (p.spec.as_ref().unwrap(), p.status.as_ref().unwrap());
    if let Some(n) = &spec.node_name {
        text("nodeName", n, n.capacity());
    }
    for c in spec.init_containers.iter().flatten() {
        text("initContainer", &c.name, c.name.capacity());
    }
    let statuses = status
        .container_statuses
        .iter()
        .chain(&status.init_container_statuses);
    for c in statuses.clone().flatten() {
        text("containerStatus", &c.name, c.name.capacity());
    }
    let mut list = |what: &str, len: usize, capacity: usize| {
        if len != capacity {
            spare.push(format!("{what}: room for {capacity}, holds {len}"));
        }
    };
    if let Some(v) = &status.conditions {
        list("conditions", v.len(), v.capacity());
    }
    if let Some(v) = &spec.init_containers {
        list("initContainers", v.len(), v.capacity());
    }
    for v in statuses {
        list("containerStatuses", v.len(), v.capacity());
    }
    if let Some(v) = &m.owner_references {
        list("ownerReferences", v.len(), v.capacity());
    }
    if let Some(v) = &m.finalizers {
        list("finalizers", v.len(), v.capacity());
    }
    spare
}

fn name(p: &Pod) -> &str {
    p.metadata.name.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn recorded_pods_decode_as_their_json() {
    let api = FakeApi::default();
    api.list(answer(200, PODS_PB));
    let list = protobuf(&api).list(&ListParams::default()).await.unwrap();
    let json = json_pods();
    assert_eq!(list.metadata.resource_version.as_deref(), Some("348"));
    assert_eq!(list.metadata.resource_version, json.metadata.resource_version);
    assert_eq!(list.items.len(), 11);
    for (p, j) in list.items.iter().zip(&json.items) {
        assert_eq!(p, j, "{} decodes from protobuf as from JSON", name(j));
    }
    for (p, j) in list.items.iter().zip(&json.items) {
        assert_eq!(
            spare_room(j),
            Vec::<String>::new(),
            "{}: the JSON path's baseline",
            name(j)
        );
        assert_eq!(
            spare_room(p),
            Vec::<String>::new(),
            "{}: strings and lists hold no spare room, as on the JSON path",
            name(p)
        );
    }
    // The fixture holds what makes the comparison worth something.
    let held = list.items.iter().find(|p| name(p) == "held").unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some() && held.metadata.deletion_grace_period_seconds.is_some()
    );
    assert_eq!(
        held.metadata.finalizers.as_deref(),
        Some(&["kcm-rs.test/hold".to_owned()][..])
    );
    let kept: Vec<_> = held
        .metadata
        .annotations
        .iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        kept,
        ["controller.kubernetes.io/pod-deletion-cost"],
        "unread annotations are dropped"
    );
    let exit_codes: Vec<i32> = list
        .items
        .iter()
        .filter_map(|p| {
            p.status.as_ref()?.container_statuses.as_ref()?[0]
                .state
                .as_ref()?
                .terminated
                .as_ref()
        })
        .map(|t| t.exit_code)
        .collect();
    assert!(
        exit_codes.contains(&3) && exit_codes.contains(&0),
        "{exit_codes:?}"
    );
    let web = list.items.iter().find(|p| name(p).starts_with("web-")).unwrap();
    let init = web.spec.as_ref().unwrap().init_containers.as_ref().unwrap();
    assert_eq!(init[0].restart_policy.as_deref(), Some("Always"), "sidecar");
    assert_eq!(init[1].restart_policy, None, "plain init container");
    assert_eq!(
        web.metadata.owner_references.as_ref().unwrap()[0].controller,
        Some(true)
    );
    let idx = list.items.iter().find(|p| name(p).starts_with("idx-1")).unwrap();
    assert_eq!(
        idx.metadata.annotations.as_ref().unwrap()["batch.kubernetes.io/job-completion-index"],
        "1"
    );
}

#[tokio::test]
async fn recorded_watch_decodes_as_the_list_whatever_the_chunking() {
    let json = json_pods();
    for chunk in [WATCH_PB.len(), 4096, 7, 1] {
        let api = FakeApi::default();
        api.watch_answer(Answer::Chunks {
            content_type: STREAM,
            chunks: WATCH_PB.chunks(chunk).map(Bytes::copy_from_slice).collect(),
        });
        let stream = protobuf(&api).watch(&WatchParams::default(), "0").await.unwrap();
        let events: Vec<_> = futures::StreamExt::collect::<Vec<_>>(stream).await;
        assert_eq!(events.len(), 12, "11 pods and the bookmark, in chunks of {chunk}");
        for event in &events[..11] {
            let Ok(WatchEvent::Added(p)) = event else {
                panic!("{event:?}")
            };
            let j = json.items.iter().find(|j| name(j) == name(p)).unwrap();
            if j.metadata.resource_version == p.metadata.resource_version {
                assert_eq!(p, j);
            }
        }
        let Ok(WatchEvent::Bookmark(b)) = &events[11] else {
            panic!("{:?}", events[11])
        };
        assert_eq!(b.metadata.annotations["k8s.io/initial-events-end"], "true");
    }
}

fn start(
    api: &FakeApi,
    watch_list: bool,
) -> (mpsc::UnboundedReceiver<ReflectorEvent<Pod>>, CancellationToken) {
    let config = ReflectorConfig {
        watch_list,
        ..ReflectorConfig::default()
    };
    let reflector = Reflector::new(protobuf(api), "pods", config);
    let (tx, rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    tokio::spawn(reflector.run(tx, cancel.clone()));
    (rx, cancel)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<ReflectorEvent<Pod>>) -> ReflectorEvent<Pod> {
    tokio::time::timeout(Duration::from_secs(120), rx.recv())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_in_protobuf_ends_at_its_bookmark() {
    let api = FakeApi::default();
    api.watch_answer(Answer::Chunks {
        content_type: STREAM,
        chunks: vec![Bytes::from_static(WATCH_PB)],
    });
    let (mut rx, cancel) = start(&api, true);
    let ReflectorEvent::Replace {
        objects,
        resource_version,
    } = next(&mut rx).await
    else {
        panic!()
    };
    assert_eq!(objects.len(), 11);
    let bookmark_rv = decode::event::<Pod>(Bytes::from_static(&WATCH_PB[WATCH_PB.len() - 144..]));
    let Ok(WatchEvent::Bookmark(b)) = bookmark_rv else {
        panic!()
    };
    assert_eq!(resource_version, b.metadata.resource_version);
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn an_expired_watch_in_protobuf_relists() {
    let api = FakeApi::default();
    for _ in 0..2 {
        api.list(answer(200, PODS_PB));
    }
    let gone = encode::status(410, "Expired", "too old resource version: 300 (348)");
    api.watch_answer(Answer::Chunks {
        content_type: STREAM,
        chunks: vec![encode::frame("ERROR", gone)],
    });
    let (mut rx, cancel) = start(&api, false);
    for _ in 0..2 {
        let ReflectorEvent::Replace { objects, .. } = next(&mut rx).await else {
            panic!()
        };
        assert_eq!(objects.len(), 11);
    }
    let requests = api.requests();
    assert!(requests[0].starts_with("LIST") && requests[1].starts_with("WATCH"));
    assert!(
        requests[2].starts_with("LIST") && requests[2].contains("resourceVersion=348"),
        "relists after 410 Gone: {requests:?}"
    );
    cancel.cancel();
}

/// A list a shard selector filtered carries `shardInfo` (1.36 `ShardedListAndWatch`), recorded with
/// the gate on (four namespaces' pods, the upper half of the hash space, at one resourceVersion in
/// both content types): the same pods as its JSON, and the selector echoed, from which the sharded
/// lister-watcher learns that the server filters (`informer::sharded`).
#[test]
fn a_sharded_list_in_protobuf_keeps_its_shard_info() {
    let json: ObjectList<Pod> = serde_json::from_str(SHARDED_JSON).unwrap();
    let decoded = decode::list::<Pod>(&Bytes::from_static(SHARDED_PB)).unwrap();
    assert_eq!(decoded.items.len(), 4);
    assert_eq!(decoded.items, json.items);
    assert_eq!(decoded.metadata, json.metadata, "resourceVersion and shardInfo");
    assert_eq!(
        decoded.metadata.shard_info.map(|s| s.selector).as_deref(),
        Some("shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')")
    );
    let unsharded = decode::list::<Pod>(&Bytes::from_static(PODS_PB)).unwrap();
    assert_eq!(unsharded.metadata.shard_info, None);
}

#[tokio::test]
async fn an_error_answer_carries_its_status() {
    let api = FakeApi::default();
    api.list(answer(404, NOT_FOUND_PB));
    let err = protobuf(&api).list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(status.message, "pods \"nope\" not found");
}

#[tokio::test]
async fn a_json_answer_is_still_read() {
    let api = FakeApi::default();
    api.list(Answer::Json(200, serde_json::from_str(PODS_JSON).unwrap()));
    let list = protobuf(&api).list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items, json_pods().items);
}

#[tokio::test]
async fn undecodable_bytes_are_an_error_naming_the_request() {
    let api = FakeApi::default();
    api.list(answer(200, &PODS_PB[..PODS_PB.len() / 2]));
    let err = protobuf(&api).list(&ListParams::default()).await.unwrap_err();
    assert!(
        err.to_string().contains(PATH) || format!("{err:?}").contains(PATH),
        "{err:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Truncated, corrupted or arbitrary bytes: an error or a pod, never a panic.
    #[test]
    fn garbage_is_an_error_not_a_panic(
        cut in 0..PODS_PB.len(),
        flips in proptest::collection::vec((0..PODS_PB.len(), any::<u8>()), 0..8),
        noise in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = PODS_PB.to_vec();
        for (i, b) in flips {
            bytes[i] = b;
        }
        let _ = decode::list::<Pod>(&Bytes::from(bytes.clone()));
        let _ = decode::list::<Pod>(&Bytes::copy_from_slice(&bytes[..cut]));
        let _ = Pod::decode_protobuf(Bytes::from(noise.clone()));
        let _ = decode::event::<Pod>(Bytes::from(noise));
        let frame_cut = cut.min(WATCH_PB.len() - 4);
        let _ = decode::event::<Pod>(Bytes::copy_from_slice(&WATCH_PB[4..4 + frame_cut]));
    }
}
