//! The watch cache's rules on its state, and views driving real informers over one fake API server.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, ResourceExt as _};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    WatchCache,
    state::{Change, Keep, Out, Refused, State},
};
use crate::{
    informer::{Scope, SharedInformer},
    reflector::{ReflectorConfig, ReflectorEvent, Snapshot},
    testing::fake_api::{FakeApi, bookmark, event, name_of, pod},
    wait_for_cache_sync,
};

/// The view the state tests serve, made before the cache listed.
const A: u64 = 7;

fn state(capacity: usize) -> State<Pod> {
    let mut s = State::new(capacity);
    s.register(A, 0, in_ns("a"));
    s.start();
    s
}

fn p(ns: &str, name: &str, rv: &str) -> Pod {
    serde_json::from_value(pod(ns, name, rv)).unwrap()
}

fn in_ns(ns: &'static str) -> Keep<Pod> {
    Arc::new(move |o: &Pod| o.namespace().as_deref() == Some(ns))
}

fn listed(objects: &[Pod], rv: &str) -> ReflectorEvent<Pod> {
    let objects: Snapshot<Pod> = objects
        .iter()
        .map(|o| (crate::key::ObjectKey::of(o), Arc::new(o.clone())))
        .collect();
    ReflectorEvent::Replace {
        objects,
        resource_version: rv.into(),
    }
}

fn describe(out: &Out<Pod>) -> String {
    match out {
        Out::Change(Change::Added(o)) => format!("added {}", name_of(o)),
        Out::Change(Change::Modified(o)) => format!("modified {}", name_of(o)),
        Out::Change(Change::Deleted(o)) => format!("deleted {}", name_of(o)),
        Out::Bookmark(rv) => format!("bookmark@{rv}"),
        Out::InitialEventsEnd(rv) => format!("end@{rv}"),
        Out::Expired => "expired".into(),
    }
}

fn drain(rx: &mut mpsc::UnboundedReceiver<Out<Pod>>) -> Vec<String> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .map(|o| describe(&o))
        .collect()
}

#[test]
fn a_watch_from_a_listed_version_replays_what_came_after_it_in_its_part() {
    let mut s = state(16);
    let (tx, _rx) = mpsc::unbounded_channel();
    assert_eq!(
        s.subscribe(A, "0", false, in_ns("a"), tx).unwrap_err(),
        Refused::NotSynced
    );
    s.apply(listed(&[p("a", "x", "5"), p("b", "y", "6")], "10"));
    let (items, rv) = s.list(A).unwrap();
    assert_eq!((items.len(), rv.as_str()), (1, "10"));
    s.apply(ReflectorEvent::Added(p("a", "z", "11")));
    s.apply(ReflectorEvent::Added(p("b", "w", "12")));
    s.apply(ReflectorEvent::Modified(p("a", "x", "13")));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let first: Vec<_> = s
        .subscribe(A, "11", false, in_ns("a"), tx)
        .unwrap()
        .iter()
        .map(describe)
        .collect();
    assert_eq!(first, ["modified x"], "after 11, namespace a only");
    s.apply(ReflectorEvent::Deleted(p("a", "z", "14")));
    s.apply(ReflectorEvent::Deleted(p("b", "w", "15")));
    s.apply(ReflectorEvent::Bookmark {
        resource_version: "16".into(),
    });
    assert_eq!(drain(&mut rx), ["deleted z", "bookmark@16"]);
}

#[test]
fn a_streaming_list_gets_the_current_objects_then_its_end_marker() {
    let mut s = state(16);
    s.apply(listed(&[p("a", "x", "5"), p("b", "y", "6")], "10"));
    s.apply(ReflectorEvent::Added(p("a", "z", "11")));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut first: Vec<_> = s
        .subscribe(A, "", true, in_ns("a"), tx)
        .unwrap()
        .iter()
        .map(describe)
        .collect();
    assert_eq!(first.pop().as_deref(), Some("end@11"));
    first.sort();
    assert_eq!(first, ["added x", "added z"]);
    s.apply(ReflectorEvent::Added(p("a", "v", "12")));
    assert_eq!(drain(&mut rx), ["added v"]);
}

#[test]
fn versions_outside_the_window_are_refused_as_expired() {
    let mut s = state(2);
    s.apply(listed(&[], "10"));
    for rv in 11..=14 {
        s.apply(ReflectorEvent::Added(p("a", &format!("p{rv}"), &rv.to_string())));
    }
    let try_from = |s: &mut State<Pod>, rv: &str| {
        let (tx, _rx) = mpsc::unbounded_channel();
        s.subscribe(A, rv, false, in_ns("a"), tx).map(|v| v.len())
    };
    // The window holds 13 and 14: a watch from 12 on replays them, one from 11 would miss 12.
    assert_eq!(try_from(&mut s, "11"), Err(Refused::Expired));
    assert_eq!(try_from(&mut s, "12"), Ok(2));
    assert_eq!(try_from(&mut s, "14"), Ok(0));
    assert_eq!(
        try_from(&mut s, "15"),
        Ok(0),
        "ahead of the cache: from the API server's list"
    );
    assert_eq!(try_from(&mut s, "x"), Err(Refused::Expired), "not a number");
}

#[test]
fn without_its_objects_the_cache_serves_the_stream_after_a_server_list() {
    let mut s = state(16);
    s.apply(listed(&[p("a", "x", "5")], "10"));
    s.drop_objects();
    assert_eq!(s.list(A).unwrap_err(), Refused::NotCached);
    let (tx, _rx) = mpsc::unbounded_channel();
    assert_eq!(
        s.subscribe(A, "", true, in_ns("a"), tx).unwrap_err(),
        Refused::NotCached,
        "no streaming list: the reflector falls back to a LIST"
    );
    // The view listed from the API server at 12, ahead of the cache at 10: 11 and 12 are in its
    // list already, 13 is not.
    let (tx, mut rx) = mpsc::unbounded_channel();
    assert!(s.subscribe(A, "12", false, in_ns("a"), tx).unwrap().is_empty());
    s.apply(ReflectorEvent::Added(p("a", "y", "11")));
    s.apply(ReflectorEvent::Bookmark {
        resource_version: "12".into(),
    });
    s.apply(ReflectorEvent::Modified(p("a", "y", "13")));
    assert_eq!(drain(&mut rx), ["modified y"]);
    // A relist still expires the views, and keeps no objects.
    s.apply(listed(&[p("a", "z", "20")], "20"));
    assert_eq!(drain(&mut rx), ["expired"]);
    assert_eq!(s.list(A).unwrap_err(), Refused::NotCached);
    s.close();
    let (tx, _rx) = mpsc::unbounded_channel();
    assert_eq!(
        s.subscribe(A, "20", false, in_ns("a"), tx).unwrap_err(),
        Refused::Closed
    );
}

#[test]
fn a_view_made_after_the_list_began_lists_from_the_server_and_not_from_before_it() {
    let mut s = state(16);
    s.apply(listed(&[p("a", "x", "5")], "10"));
    const LATE: u64 = 9;
    // The stream had been read up to 12 when the view was made.
    s.register(LATE, 12, in_ns("a"));
    assert_eq!(s.list(LATE).unwrap_err(), Refused::NotCached);
    let (tx, _rx) = mpsc::unbounded_channel();
    assert_eq!(
        s.subscribe(LATE, "11", false, in_ns("a"), tx).unwrap_err(),
        Refused::Expired,
        "a list older than the view may lack changes the cache dropped before it"
    );
    let (tx, _rx) = mpsc::unbounded_channel();
    assert!(s.subscribe(LATE, "12", false, in_ns("a"), tx).is_ok());
    assert!(s.list(A).is_ok(), "the early view still lists from the cache");
}

#[test]
fn a_view_takes_its_objects_out_of_the_cache() {
    let mut s = State::new(16);
    const B: u64 = 8;
    s.register(A, 0, in_ns("a"));
    s.register(B, 0, in_ns("b"));
    s.start();
    s.apply(listed(&[p("a", "x", "5"), p("b", "y", "6")], "10"));
    let (items, _) = s.list(A).unwrap();
    assert_eq!(Arc::strong_count(&items[0]), 1, "moved, not copied");
    assert_eq!(s.list(A).unwrap_err(), Refused::NotCached, "once only");
    s.apply(ReflectorEvent::Added(p("a", "z", "11")));
    s.apply(ReflectorEvent::Added(p("b", "w", "12")));
    let (items, _) = s.list(B).unwrap();
    let mut names: Vec<_> = items.iter().map(|o| name_of(o)).collect();
    names.sort();
    assert_eq!(
        names,
        ["w", "y"],
        "b's changes kept until b listed; a's not kept after"
    );
}

#[test]
fn a_relist_of_the_cache_expires_every_watcher() {
    let mut s = state(16);
    s.apply(listed(&[p("a", "x", "5")], "10"));
    let (tx, mut rx) = mpsc::unbounded_channel();
    s.subscribe(A, "10", false, in_ns("a"), tx).unwrap();
    s.apply(listed(&[p("a", "y", "30")], "30"));
    assert_eq!(drain(&mut rx), ["expired"]);
    assert_eq!(s.subscribers(), 0);
    let (items, rv) = s.list(A).unwrap();
    assert_eq!((name_of(&items[0]), rv.as_str()), ("y".into(), "30"));
}

#[test]
fn a_gone_watcher_is_dropped_only_when_something_is_sent_to_it() {
    let mut s = state(16);
    s.apply(listed(&[], "10"));
    let (tx, rx) = mpsc::unbounded_channel();
    s.subscribe(A, "10", false, in_ns("a"), tx).unwrap();
    drop(rx);
    s.apply(ReflectorEvent::Added(p("b", "y", "11")));
    assert_eq!(s.subscribers(), 1, "not its namespace: nothing sent");
    s.apply(ReflectorEvent::Added(p("a", "x", "12")));
    assert_eq!(s.subscribers(), 0);
}

fn informer(cache: &Arc<WatchCache<Pod>>, ns: &'static str, watch_list: bool) -> SharedInformer<Pod> {
    let view = cache.view(move |o: &Pod| o.namespace().as_deref() == Some(ns));
    let config = ReflectorConfig {
        watch_list,
        ..ReflectorConfig::default()
    };
    SharedInformer::new("pods", vec![Scope::new(view, None)], config)
}

fn names(i: &SharedInformer<Pod>) -> Vec<String> {
    let mut n: Vec<_> = i.store().list().iter().map(|p| name_of(p)).collect();
    n.sort();
    n
}

/// After the warm-up a new view lists from the API server, keeps its namespace, and follows the
/// shared watch from that list's resourceVersion: by a LIST, or (`streaming`) by a streaming list
/// it leaves at the end marker.
async fn late_view(streaming: bool) {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("a", "x", "5"), pod("b", "y", "6")]);
    let w = api.watch();
    let now = [pod("a", "x", "5"), pod("b", "y", "6"), pod("a", "v", "11")];
    let server_list = streaming.then(|| api.watch());
    if let Some(list) = &server_list {
        for p in &now {
            list.send(event("ADDED", p.clone())).unwrap();
        }
        list.send(bookmark("11", true)).unwrap();
    } else {
        api.list_pods("11", &now);
    }
    let cancel = CancellationToken::new();
    let config = ReflectorConfig {
        watch_list: false,
        ..ReflectorConfig::default()
    };
    let cache = WatchCache::start(Api::<Pod>::all(api.client()), "pods", config, 64, &cancel);
    let early = informer(&cache, "b", false);
    early.run(cancel.clone());
    assert!(wait_for_cache_sync(&cancel, &[&early]).await);
    tokio::time::sleep(super::OBJECTS_KEPT_FOR + Duration::from_secs(1)).await;
    w.send(event("ADDED", pod("a", "v", "11"))).unwrap();
    let late = informer(&cache, "a", streaming);
    late.run(cancel.clone());
    assert!(wait_for_cache_sync(&cancel, &[&late]).await);
    assert_eq!(names(&late), ["v", "x"]);
    w.send(event("MODIFIED", pod("a", "x", "12"))).unwrap();
    w.send(event("DELETED", pod("a", "v", "13"))).unwrap();
    let settled = async {
        while names(&late) != ["x"] {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), settled)
        .await
        .expect("the late view follows the shared watch");
    let requests = api.requests();
    let lists = requests.iter().filter(|r| r.starts_with("LIST")).count();
    let watches = requests.iter().filter(|r| r.starts_with("WATCH")).count();
    let want = if streaming { (1, 2) } else { (2, 1) };
    assert_eq!((lists, watches), want, "{requests:?}");
    drop(server_list);
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_view_made_after_the_warm_up_lists_from_the_server() {
    late_view(false).await;
}

#[tokio::test(start_paused = true)]
async fn a_view_made_after_the_warm_up_streams_its_list_from_the_server() {
    late_view(true).await;
}

/// Two informers over views of one cache: each holds its namespace only, both follow the one watch,
/// and the API server saw one list and one watch.
#[tokio::test]
async fn informers_on_views_share_one_list_and_watch() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("a", "x", "5"), pod("b", "y", "6")]);
    let w = api.watch();
    let cancel = CancellationToken::new();
    let config = ReflectorConfig {
        watch_list: false,
        ..ReflectorConfig::default()
    };
    let cache = WatchCache::start(Api::<Pod>::all(api.client()), "pods", config, 64, &cancel);
    let (a, b) = (informer(&cache, "a", false), informer(&cache, "b", true));
    a.run(cancel.clone());
    b.run(cancel.clone());
    assert!(wait_for_cache_sync(&cancel, &[&a, &b]).await);
    assert_eq!(
        (names(&a), names(&b)),
        (vec!["x".to_owned()], vec!["y".to_owned()])
    );
    w.send(event("ADDED", pod("a", "z", "11"))).unwrap();
    w.send(event("DELETED", pod("b", "y", "12"))).unwrap();
    let settled = async {
        while names(&a).len() != 2 || !names(&b).is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), settled)
        .await
        .expect("both informers follow the cache");
    assert_eq!(cache.watchers(), 2);
    let reqs = api.requests();
    assert_eq!(reqs.len(), 2, "one list and one watch at the server: {reqs:?}");
    cancel.cancel();
}
