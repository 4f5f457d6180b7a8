use informer::Store;
use testing::{drain, pod, replica_set};

use super::*;

fn rs(name: &str, uid: &str, app: &str, min_ready: i32) -> ReplicaSet {
    replica_set(name)
        .uid(uid)
        .selector("app", app)
        .min_ready_seconds(min_ready)
        .build()
}

fn setup() -> (PodHandler, Handlers) {
    let store = Store::new();
    store.add_index(
        informer::store::NAMESPACE_INDEX,
        informer::store::namespace_index(),
    );
    for r in [rs("a", "uid-a", "web", 0), rs("b", "uid-b", "db", 5)] {
        store.upsert(ObjectKey::of(&r), Arc::new(r));
    }
    let h = Handlers {
        replica_sets: Lister::new(store),
        expectations: Arc::new(Expectations::new()),
        consistency: Arc::new(ConsistencyStore::new()),
        queue: WorkQueue::new(),
    };
    (PodHandler(h.clone()), h)
}

#[tokio::test]
async fn owned_pod_add_observes_the_creation() {
    let (ph, h) = setup();
    h.expectations.expect_creations("ns/a", 1);
    ph.on_add(
        &Arc::new(pod("p").owner("ReplicaSet", "a", "uid-a").build()),
        false,
    );
    assert!(h.expectations.satisfied("ns/a"));
    assert_eq!(drain(&h.queue), ["ns/a"]);
}

#[tokio::test]
async fn pod_owned_by_an_unknown_uid_is_ignored() {
    let (ph, h) = setup();
    ph.on_add(
        &Arc::new(pod("p").owner("ReplicaSet", "a", "stale-uid").build()),
        false,
    );
    ph.on_add(&Arc::new(pod("q").owner("Job", "a", "uid-a").build()), false);
    assert!(drain(&h.queue).is_empty());
}

#[tokio::test]
async fn orphan_add_wakes_matching_replicasets() {
    let (ph, h) = setup();
    ph.on_add(&Arc::new(pod("p").label("app", "db").build()), false);
    assert_eq!(drain(&h.queue), ["ns/b"]);
}

#[tokio::test]
async fn controller_ref_change_enqueues_old_and_new_owner() {
    let (ph, h) = setup();
    let old = pod("p")
        .label("app", "web")
        .owner("ReplicaSet", "a", "uid-a")
        .build();
    let mut new = pod("p")
        .label("app", "web")
        .owner("ReplicaSet", "b", "uid-b")
        .build();
    new.metadata.resource_version = Some("2".into());
    ph.on_update(&Arc::new(old), &Arc::new(new));
    assert_eq!(drain(&h.queue), ["ns/a", "ns/b"]);
}

#[tokio::test]
async fn resync_updates_are_ignored() {
    let (ph, h) = setup();
    let p = Arc::new(pod("p").owner("ReplicaSet", "a", "uid-a").build());
    ph.on_update(&p, &p);
    assert!(drain(&h.queue).is_empty());
}

#[tokio::test]
async fn deletion_timestamp_counts_as_the_deletion_once() {
    let (ph, h) = setup();
    h.expectations.expect_deletions("ns/a", ["ns/p".to_owned()]);
    let old = pod("p").owner("ReplicaSet", "a", "uid-a").build();
    let mut dying = pod("p").owner("ReplicaSet", "a", "uid-a").deleting().build();
    dying.metadata.resource_version = Some("2".into());
    let dying = Arc::new(dying);
    ph.on_update(&Arc::new(old), &dying);
    assert!(h.expectations.satisfied("ns/a"));
    ph.on_delete(&DeletedObject::Final(dying));
    assert_eq!(h.expectations.pending("ns/a"), Some((0, 0)), "not counted twice");
    assert_eq!(drain(&h.queue), ["ns/a"]);
}

#[tokio::test(start_paused = true)]
async fn becoming_ready_schedules_an_availability_check() {
    let (ph, h) = setup();
    let old = pod("p")
        .label("app", "db")
        .owner("ReplicaSet", "b", "uid-b")
        .not_ready()
        .build();
    let mut ready = pod("p")
        .label("app", "db")
        .owner("ReplicaSet", "b", "uid-b")
        .ready_at(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
        .build();
    ready.metadata.resource_version = Some("2".into());
    ph.on_update(&Arc::new(old), &Arc::new(ready));
    assert_eq!(drain(&h.queue), ["ns/b"]);
    tokio::time::sleep(Duration::from_millis(5001)).await;
    assert_eq!(drain(&h.queue), ["ns/b"], "again after minReadySeconds");
}

#[tokio::test]
async fn replicaset_recreated_under_the_same_name_drops_old_expectations() {
    let (_, h) = setup();
    let rh = ReplicaSetHandler(h.clone());
    h.expectations.expect_creations("ns/a", 3);
    let old = Arc::new(rs("a", "uid-a", "web", 0));
    let new = Arc::new(rs("a", "uid-a2", "web", 0));
    h.consistency.wrote_at("ns/a", "uid-a", "pods", Some("900"));
    rh.on_update(&old, &new);
    assert!(h.expectations.satisfied("ns/a"));
    assert_eq!(
        h.consistency.ensure_ready("ns/a", |_| 1),
        Ok(()),
        "the new one waits for none of the old one's writes, as upstream's deleteRS clears them"
    );
    assert_eq!(drain(&h.queue), ["ns/a"]);
}

#[tokio::test]
async fn replicaset_resync_enqueues_it() {
    // `--min-resync-period` relies on this: upstream's updateRS enqueues on every update, resyncs
    // (old == new) included, so a ReplicaSet left waiting by a missed event is synced again.
    let (_, h) = setup();
    let rh = ReplicaSetHandler(h.clone());
    let mut a = rs("a", "uid-a", "web", 0);
    a.metadata.resource_version = Some("7".into());
    let a = Arc::new(a);
    rh.on_update(&a, &a);
    assert_eq!(drain(&h.queue), ["ns/a"]);
}
