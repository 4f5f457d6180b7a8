//! Reflector edge cases against the in-process fake API (see `testing::fake_api`).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Resource as _;
use tokio::sync::mpsc::UnboundedReceiver;

use super::*;
use crate::testing::fake_api::{Answer, FakeApi, bookmark, event, name_of, pod, status};

fn start(api: &FakeApi, watch_list: bool) -> (UnboundedReceiver<ReflectorEvent<Pod>>, CancellationToken) {
    let config = ReflectorConfig {
        watch_list,
        transform: Some(crate::transform::strip_managed_fields()),
        ..ReflectorConfig::default()
    };
    // The path the shared informers take for a kind read as JSON.
    let list_watch = crate::json::JsonListWatch::<Pod>::new(api.client(), Pod::url_path(&(), None));
    let reflector = Reflector::new(list_watch, "pods", config);
    let (tx, rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    tokio::spawn(reflector.run(tx, cancel.clone()));
    (rx, cancel)
}

async fn next(rx: &mut UnboundedReceiver<ReflectorEvent<Pod>>) -> ReflectorEvent<Pod> {
    tokio::time::timeout(Duration::from_secs(120), rx.recv())
        .await
        .expect("an event in time")
        .expect("open")
}

fn describe(e: &ReflectorEvent<Pod>) -> String {
    match e {
        ReflectorEvent::Replace {
            objects,
            resource_version,
        } => {
            assert!(
                objects.iter().all(|(key, p)| *key == ObjectKey::of(&**p)),
                "every object is under its own key"
            );
            let mut names: Vec<_> = objects.values().map(|p| name_of(p)).collect();
            names.sort();
            format!("replace@{resource_version} {names:?}")
        }
        ReflectorEvent::Added(p) => format!("added {}", name_of(p)),
        ReflectorEvent::Modified(p) => format!("modified {}", name_of(p)),
        ReflectorEvent::Deleted(p) => format!("deleted {}", name_of(p)),
        ReflectorEvent::Bookmark { resource_version } => format!("bookmark@{resource_version}"),
    }
}

fn param<'a>(request: &'a str, key: &str) -> Option<&'a str> {
    request
        .split_once(' ')?
        .1
        .split('&')
        .find_map(|p| p.strip_prefix(key)?.strip_prefix('='))
}

#[tokio::test(start_paused = true)]
async fn lists_at_zero_then_watches_from_the_list_rv_in_order() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "5"), pod("ns", "b", "6")]);
    let w = api.watch();
    let (mut rx, cancel) = start(&api, false);
    let first = next(&mut rx).await;
    assert_eq!(describe(&first), "replace@10 [\"a\", \"b\"]");
    if let ReflectorEvent::Replace { objects, .. } = &first {
        assert!(
            objects.values().all(|p| p.metadata.managed_fields.is_none()),
            "transform applied"
        );
    }
    w.send(event("ADDED", pod("ns", "c", "11"))).unwrap();
    w.send(event("MODIFIED", pod("ns", "a", "12"))).unwrap();
    w.send(event("DELETED", pod("ns", "b", "13"))).unwrap();
    let got = [
        describe(&next(&mut rx).await),
        describe(&next(&mut rx).await),
        describe(&next(&mut rx).await),
    ];
    assert_eq!(got, ["added c", "modified a", "deleted b"]);
    let reqs = api.requests();
    assert_eq!(param(&reqs[0], "resourceVersion"), Some("0"), "{reqs:?}");
    assert_eq!(
        param(&reqs[0], "limit"),
        Some("500"),
        "paged at \"0\" as client-go's pager: {reqs:?}"
    );
    assert!(reqs[1].starts_with("WATCH"), "{reqs:?}");
    assert_eq!(param(&reqs[1], "resourceVersion"), Some("10"));
    assert_eq!(param(&reqs[1], "allowWatchBookmarks"), Some("true"));
    let timeout: u64 = param(&reqs[1], "timeoutSeconds").unwrap().parse().unwrap();
    assert!(
        (300..600).contains(&timeout),
        "watch timeout {timeout}s drawn from 5-10 min"
    );
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn gone_during_watch_relists_at_last_rv_then_from_etcd() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "5")]);
    let w = api.watch();
    // Relist at the last RV is also too old: the next one must be a consistent read ("").
    api.list(Answer::Json(
        410,
        status(410, "Expired", "too old resource version: 12 (15)"),
    ));
    api.list_pods("20", &[pod("ns", "z", "19")]);
    let (mut rx, cancel) = start(&api, false);
    next(&mut rx).await;
    w.send(event("MODIFIED", pod("ns", "a", "12"))).unwrap();
    next(&mut rx).await;
    w.send(event("ERROR", status(410, "Expired", "too old resource version")))
        .unwrap();
    assert_eq!(describe(&next(&mut rx).await), "replace@20 [\"z\"]");
    let reqs = api.requests();
    let lists: Vec<_> = reqs.iter().filter(|r| r.starts_with("LIST")).collect();
    assert_eq!(param(lists[1], "resourceVersion"), Some("12"), "{reqs:?}");
    assert_eq!(
        param(lists[2], "resourceVersion"),
        None,
        "consistent read after Expired: {reqs:?}"
    );
    assert_eq!(
        param(lists[2], "limit"),
        Some("500"),
        "consistent reads are paginated"
    );
    cancel.cancel();
}

/// client-go's pager: a continue token that expired while paging ends in one list of the whole,
/// not in a backoff and paging again from the first page.
#[tokio::test(start_paused = true)]
async fn an_expired_continue_token_ends_in_one_whole_list() {
    let api = FakeApi::default();
    // The first list at "0" is refused as too old: the next is a consistent, paginated read.
    api.list(Answer::Json(
        410,
        status(410, "Expired", "too old resource version"),
    ));
    api.list(Answer::Json(
        200,
        serde_json::json!({"apiVersion": "v1", "kind": "PodList",
            "metadata": {"resourceVersion": "30", "continue": "page-2"}, "items": [pod("ns", "a", "29")]}),
    ));
    api.list(Answer::Json(
        410,
        status(410, "Expired", "The provided continue parameter is too old"),
    ));
    api.list_pods("31", &[pod("ns", "a", "29"), pod("ns", "b", "30")]);
    let _w = api.watch();
    let (mut rx, cancel) = start(&api, false);
    let t0 = tokio::time::Instant::now();
    assert_eq!(describe(&next(&mut rx).await), "replace@31 [\"a\", \"b\"]");
    assert_eq!(t0.elapsed(), Duration::ZERO, "no backoff");
    let reqs = api.requests();
    let lists: Vec<_> = reqs.iter().filter(|r| r.starts_with("LIST")).collect();
    assert_eq!(lists.len(), 4, "{reqs:?}");
    assert_eq!(param(lists[2], "continue"), Some("page-2"), "{reqs:?}");
    assert_eq!(param(lists[3], "limit"), None, "the whole, unpaginated: {reqs:?}");
    assert_eq!(param(lists[3], "continue"), None, "{reqs:?}");
    cancel.cancel();
}

/// A watch that ends with 429 is opened again after the backoff, from the last RV, with no relist.
#[tokio::test(start_paused = true)]
async fn a_watch_ended_with_429_backs_off_without_relisting() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "5")]);
    let w = api.watch();
    let w2 = api.watch();
    let (mut rx, cancel) = start(&api, false);
    next(&mut rx).await;
    let t0 = tokio::time::Instant::now();
    w.send(event("ERROR", status(429, "TooManyRequests", "slow down")))
        .unwrap();
    w2.send(event("ADDED", pod("ns", "b", "11"))).unwrap();
    assert_eq!(describe(&next(&mut rx).await), "added b");
    assert!(t0.elapsed() >= BACKOFF_INITIAL, "waited {:?}", t0.elapsed());
    let reqs = api.requests();
    assert_eq!(
        reqs.iter().filter(|r| r.starts_with("LIST")).count(),
        1,
        "{reqs:?}"
    );
    let watches: Vec<_> = reqs.iter().filter(|r| r.starts_with("WATCH")).collect();
    assert_eq!(param(watches[1], "resourceVersion"), Some("10"), "{reqs:?}");
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn bookmarks_and_dropped_connections_resume_the_watch_without_relisting() {
    let api = FakeApi::default();
    api.list_pods("10", &[]);
    let w1 = api.watch();
    let w2 = api.watch();
    let (mut rx, cancel) = start(&api, false);
    next(&mut rx).await;
    w1.send(event("ADDED", pod("ns", "a", "11"))).unwrap();
    next(&mut rx).await;
    w1.send(bookmark("30", false)).unwrap();
    assert_eq!(
        describe(&next(&mut rx).await),
        "bookmark@30",
        "bookmarks reach the sink"
    );
    drop(w1); // the connection drops
    w2.send(event("ADDED", pod("ns", "b", "31"))).unwrap();
    assert_eq!(describe(&next(&mut rx).await), "added b");
    let reqs = api.requests();
    assert_eq!(
        reqs.iter().filter(|r| r.starts_with("LIST")).count(),
        1,
        "no relist: {reqs:?}"
    );
    assert_eq!(
        param(&reqs[2], "resourceVersion"),
        Some("30"),
        "resumes from the bookmark: {reqs:?}"
    );
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_replaces_at_the_end_bookmark_and_keeps_the_stream() {
    let api = FakeApi::default();
    let w = api.watch();
    let (mut rx, cancel) = start(&api, true);
    w.send(event("ADDED", pod("ns", "a", "3"))).unwrap();
    w.send(event("ADDED", pod("ns", "b", "4"))).unwrap();
    w.send(bookmark("4", false)).unwrap(); // an ordinary bookmark does not end the initial events
    w.send(event("DELETED", pod("ns", "b", "5"))).unwrap();
    w.send(bookmark("5", true)).unwrap();
    assert_eq!(describe(&next(&mut rx).await), "replace@5 [\"a\"]");
    w.send(event("ADDED", pod("ns", "c", "6"))).unwrap();
    assert_eq!(describe(&next(&mut rx).await), "added c");
    let reqs = api.requests();
    assert_eq!(reqs.len(), 1, "one request for list and watch: {reqs:?}");
    assert_eq!(param(&reqs[0], "sendInitialEvents"), Some("true"));
    assert_eq!(param(&reqs[0], "resourceVersionMatch"), Some("NotOlderThan"));
    cancel.cancel();
}

/// A streaming list cut before its end bookmark (a restarting API server) is asked again at once, as
/// client-go's `watchList` loops; one that ends at once with nothing in it (client-go's
/// `VeryShortWatchError`) falls back to LIST.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_cut_before_its_bookmark_is_asked_again() {
    let api = FakeApi::default();
    let cut = api.watch();
    let again = api.watch();
    let (mut rx, cancel) = start(&api, true);
    cut.send(event("ADDED", pod("ns", "a", "3"))).unwrap();
    drop(cut);
    again.send(event("ADDED", pod("ns", "a", "3"))).unwrap();
    again.send(bookmark("4", true)).unwrap();
    assert_eq!(describe(&next(&mut rx).await), "replace@4 [\"a\"]");
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert!(reqs.iter().all(|r| r.starts_with("WATCH")), "{reqs:?}");
    cancel.cancel();

    let api = FakeApi::default();
    drop(api.watch());
    api.list_pods("7", &[pod("ns", "a", "7")]);
    let _w = api.watch();
    let (mut rx, cancel) = start(&api, true);
    assert_eq!(describe(&next(&mut rx).await), "replace@7 [\"a\"]");
    let reqs = api.requests();
    assert!(reqs[1].starts_with("LIST"), "{reqs:?}");
    cancel.cancel();
}

/// client-go falls back to LIST at once on any streaming-list failure but throttling, a refused
/// connection or an expired resourceVersion (the server without the feature, or failing): progress
/// rather than a backoff and the same request.
#[tokio::test(start_paused = true)]
async fn a_refused_or_failing_streaming_list_falls_back_to_list_at_once() {
    for (code, reason, message) in [
        (422, "Invalid", "sendInitialEvents is forbidden for watch"),
        (500, "InternalError", "etcd is sad"),
    ] {
        let api = FakeApi::default();
        api.watch_answer(Answer::Json(code, status(code, reason, message)));
        api.list_pods("7", &[pod("ns", "a", "7")]);
        let (mut rx, cancel) = start(&api, true);
        let t0 = tokio::time::Instant::now();
        assert_eq!(describe(&next(&mut rx).await), "replace@7 [\"a\"]");
        assert_eq!(t0.elapsed(), Duration::ZERO, "{code}: no backoff");
        let reqs = api.requests();
        assert!(
            reqs[0].starts_with("WATCH") && reqs[1].starts_with("LIST"),
            "{code}: {reqs:?}"
        );
        cancel.cancel();
    }
}

/// A throttled streaming list is asked again after the reflector's backoff, still streaming,
/// whether the 429 answers the request or ends its stream.
#[tokio::test(start_paused = true)]
async fn a_throttled_streaming_list_is_asked_again_after_a_backoff() {
    for in_stream in [false, true] {
        a_throttled_streaming_list_case(in_stream).await;
    }
}

async fn a_throttled_streaming_list_case(in_stream: bool) {
    let api = FakeApi::default();
    let throttled = status(429, "TooManyRequests", "slow down");
    if in_stream {
        api.watch().send(event("ERROR", throttled)).unwrap();
    } else {
        api.watch_answer(Answer::Json(429, throttled));
    }
    let w = api.watch();
    let (mut rx, cancel) = start(&api, true);
    w.send(event("ADDED", pod("ns", "a", "7"))).unwrap();
    w.send(bookmark("8", true)).unwrap();
    let t0 = tokio::time::Instant::now();
    assert_eq!(describe(&next(&mut rx).await), "replace@8 [\"a\"]");
    assert!(t0.elapsed() >= BACKOFF_INITIAL, "waited {:?}", t0.elapsed());
    let reqs = api.requests();
    assert!(
        reqs.len() == 2 && reqs.iter().all(|r| r.starts_with("WATCH")),
        "{reqs:?}"
    );
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn list_errors_back_off_and_retry() {
    let api = FakeApi::default();
    api.list(Answer::Json(500, status(500, "InternalError", "etcd is sad")));
    api.list_pods("9", &[]);
    let (mut rx, cancel) = start(&api, false);
    let t0 = tokio::time::Instant::now();
    assert_eq!(describe(&next(&mut rx).await), "replace@9 []");
    assert!(t0.elapsed() >= BACKOFF_INITIAL, "waited {:?}", t0.elapsed());
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_the_reflector() {
    let api = FakeApi::default();
    api.list_pods("1", &[]);
    let config = ReflectorConfig {
        watch_list: false,
        ..ReflectorConfig::default()
    };
    let reflector = Reflector::<Pod>::new(kube::Api::all(api.client()), "pods", config);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(reflector.run(tx, cancel.clone()));
    next(&mut rx).await;
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(1), task)
        .await
        .expect("stops at once")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_watch_body_cut_anywhere_gives_every_event_once_in_order() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "5"), pod("ns", "b", "6")]);
    let mut body = Vec::new();
    for e in [
        event("ADDED", pod("ns", "c", "11")),
        event("MODIFIED", pod("ns", "a", "12")),
        event("DELETED", pod("ns", "b", "13")),
    ] {
        body.extend(serde_json::to_vec(&e).unwrap());
        body.extend(b"\n\n"); // an empty line between events is skipped
    }
    // Chunks of 7 bytes: lines start and end mid-chunk, and span many chunks.
    let chunks = body.chunks(7).map(bytes::Bytes::copy_from_slice).collect();
    api.watch_answer(Answer::Lines(chunks));
    let (mut rx, cancel) = start(&api, false);
    next(&mut rx).await;
    let got = [
        describe(&next(&mut rx).await),
        describe(&next(&mut rx).await),
        describe(&next(&mut rx).await),
    ];
    assert_eq!(got, ["added c", "modified a", "deleted b"]);
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_watch_refused_as_expired_relists_at_the_last_rv() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "5")]);
    api.watch_answer(Answer::Json(
        410,
        status(410, "Expired", "too old resource version: 10 (15)"),
    ));
    api.list_pods("20", &[pod("ns", "z", "19")]);
    let (mut rx, cancel) = start(&api, false);
    next(&mut rx).await;
    assert_eq!(describe(&next(&mut rx).await), "replace@20 [\"z\"]");
    let reqs = api.requests();
    assert!(reqs[1].starts_with("WATCH"), "{reqs:?}");
    assert_eq!(param(&reqs[2], "resourceVersion"), Some("10"), "{reqs:?}");
    cancel.cancel();
}
