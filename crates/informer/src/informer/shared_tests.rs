//! Shared-informer behaviour against the in-process fake API.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use parking_lot::Mutex;

use super::*;
use crate::{
    informer::{DeletedObject, EventHandler, HandlerFns, wait_for_cache_sync},
    testing::fake_api::{FakeApi, event, name_of, pod, status},
};
use tokio_util::sync::CancellationToken;

/// Records notifications as strings.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
}

impl EventHandler<Pod> for Recorder {
    fn on_add(&self, obj: &Arc<Pod>, initial: bool) {
        self.0.lock().push(format!(
            "add {}{}",
            name_of(obj),
            if initial { " (initial)" } else { "" }
        ));
    }
    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        let rv = |p: &Pod| p.metadata.resource_version.clone().unwrap_or_default();
        self.0
            .lock()
            .push(format!("update {} {}->{}", name_of(new), rv(old), rv(new)));
    }
    fn on_delete(&self, obj: &DeletedObject<Pod>) {
        let how = match obj {
            DeletedObject::Final(_) => "final",
            DeletedObject::Unknown { .. } => "unknown",
        };
        let rv = obj.object().metadata.resource_version.clone().unwrap_or_default();
        self.0
            .lock()
            .push(format!("delete {} {how}@{rv}", name_of(obj.object())));
    }
}

fn informer(api: &FakeApi) -> SharedInformer<Pod> {
    let config = crate::ReflectorConfig {
        watch_list: false,
        ..crate::ReflectorConfig::default()
    };
    SharedInformer::new("pods", vec![Scope::new(Api::all(api.client()), None)], config)
}

async fn settle() {
    // Paused time: lets the reflector, delivery and listener tasks run to quiescence.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test(start_paused = true)]
async fn relist_deletes_vanished_objects_with_their_last_known_state() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "1"), pod("ns", "b", "2")]);
    let w = api.watch();
    api.list_pods("30", &[pod("ns", "a", "1"), pod("ns", "c", "25")]);
    let inf = informer(&api);
    let rec = Recorder::default();
    let reg = inf.add_event_handler(rec.clone(), None);
    let cancel = CancellationToken::new();
    inf.run(cancel.clone());
    assert!(wait_for_cache_sync(&cancel, &[&reg]).await);
    let mut initial = rec.take();
    initial.sort();
    assert_eq!(initial, ["add a (initial)", "add b (initial)"]);

    w.send(event("MODIFIED", pod("ns", "b", "12"))).unwrap();
    w.send(event("ERROR", status(410, "Expired", "too old"))).unwrap();
    // The relist comes after the reflector's backoff (800 ms, jittered).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut after = rec.take();
    after.sort();
    // b vanished while the watch was down: deleted with the state last seen (rv 12), not the listed
    // one; a is unchanged (same RV), redelivered to a syncing handler as upstream's; c is new.
    assert_eq!(
        after,
        ["add c", "delete b unknown@12", "update a 1->1", "update b 2->12"]
    );
    assert_eq!(inf.store().len(), 2);
    assert!(inf.lister().get(Some("ns"), "b").is_none());
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn late_handler_gets_the_cache_first_and_syncs_on_its_own() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "1"), pod("ns", "b", "2")]);
    let w = api.watch();
    let inf = informer(&api);
    let cancel = CancellationToken::new();
    inf.run(cancel.clone());
    assert!(wait_for_cache_sync(&cancel, &[&inf]).await);
    assert_eq!(
        inf.last_synced_resource_version(),
        10,
        "the list's resourceVersion"
    );

    let rec = Recorder::default();
    let reg = inf.add_event_handler(rec.clone(), None);
    w.send(event("ADDED", pod("ns", "c", "11"))).unwrap();
    assert!(wait_for_cache_sync(&cancel, &[&reg]).await);
    settle().await;
    let got = rec.take();
    let mut initial = got[..2].to_vec();
    initial.sort();
    assert_eq!(initial, ["add a (initial)", "add b (initial)"]);
    assert_eq!(
        got[2..],
        ["add c"],
        "no gap and no duplicate between the cache and the event"
    );
    cancel.cancel();
}

/// An informer over `api` with two handlers: one resyncing every 30 s, one never.
fn fast_and_none(api: &FakeApi) -> (SharedInformer<Pod>, Recorder, Recorder) {
    let inf = informer(api);
    let (fast, none) = (Recorder::default(), Recorder::default());
    inf.add_event_handler(fast.clone(), Some(Duration::from_secs(30)));
    inf.add_event_handler(none.clone(), None);
    (inf, fast, none)
}

#[tokio::test(start_paused = true)]
async fn resync_redelivers_only_to_handlers_that_asked() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "1")]);
    let _w = api.watch();
    let (inf, fast, none) = fast_and_none(&api);
    let cancel = CancellationToken::new();
    inf.run(cancel.clone());
    settle().await;
    fast.take();
    none.take();
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(fast.take(), ["update a 1->1", "update a 1->1"]);
    assert!(none.take().is_empty());
    cancel.cancel();
}

/// A relist's unchanged objects reach the handlers that are syncing: all of them until the first
/// resync check, then those whose resync that check found due (client-go's `isSyncing`).
#[tokio::test(start_paused = true)]
async fn a_relists_unchanged_objects_reach_the_syncing_handlers() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "1")]);
    let w = api.watch();
    api.list_pods("20", &[pod("ns", "a", "1")]);
    let _w2 = api.watch();
    let (inf, fast, none) = fast_and_none(&api);
    let cancel = CancellationToken::new();
    inf.run(cancel.clone());
    settle().await;
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(
        fast.take(),
        ["add a (initial)", "update a 1->1"],
        "the check at 30 s"
    );
    assert_eq!(none.take(), ["add a (initial)"]);
    w.send(event("ERROR", status(410, "Expired", "too old"))).unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(fast.take(), ["update a 1->1"], "the relist's unchanged a");
    assert!(none.take().is_empty(), "not syncing since the check");
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_does_not_stop_delivery() {
    let api = FakeApi::default();
    api.list_pods("10", &[pod("ns", "a", "1")]);
    let w = api.watch();
    let inf = informer(&api);
    let rec = Recorder::default();
    let r2 = rec.clone();
    inf.add_event_handler(
        HandlerFns::new().on_add(move |p: &Arc<Pod>, _| {
            assert_ne!(name_of(p), "a", "handler bug");
            r2.0.lock().push(name_of(p));
        }),
        None,
    );
    let cancel = CancellationToken::new();
    inf.run(cancel.clone());
    w.send(event("ADDED", pod("ns", "b", "11"))).unwrap();
    settle().await;
    assert_eq!(rec.take(), ["b"]);
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn namespace_scopes_replace_only_their_own_objects() {
    let api = FakeApi::default();
    // Two scopes, one reflector each; the fake answers in request order.
    api.list_pods("10", &[pod("a", "x", "1")]);
    api.list_pods("11", &[pod("b", "y", "2")]);
    let config = crate::ReflectorConfig {
        watch_list: false,
        ..crate::ReflectorConfig::default()
    };
    let inf = SharedInformer::<Pod>::new(
        "pods",
        vec![
            Scope::new(Api::namespaced(api.client(), "a"), Some("a".into())),
            Scope::new(Api::namespaced(api.client(), "b"), Some("b".into())),
        ],
        config,
    );
    let cancel = CancellationToken::new();
    inf.run(cancel.clone());
    assert!(wait_for_cache_sync(&cancel, &[&inf]).await);
    assert_eq!(
        inf.store().len(),
        2,
        "each scope's list leaves the other's objects alone"
    );
    cancel.cancel();
}
