//! The executor against an in-memory API server ([`testing::ApiServer`]): what one sync writes when
//! an adoption finds its pod gone, when scaling takes time, and what the consistency store learns.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use controller::Clock;
use controller::ConsistencyStore;
use controller::EventRecorder;
use controller::Expectations;
use controller::KubePodControl;
use k8s_openapi::{
    api::apps::v1::{ReplicaSet, ReplicaSetStatus},
    jiff::Timestamp,
};
use testing::{ApiServer, FakeClock, Verb, pod, replica_set};

use super::*;
use crate::{
    plan::{BURST_REPLICAS, SyncInput, plan_sync},
    status::{REPLICA_FAILURE, condition},
};

const RS_UID: &str = "rs-uid";
const KEY: &str = "ns/web";

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn rs(replicas: i32, min_ready_seconds: Option<i32>) -> ReplicaSet {
    let rs = replica_set("web")
        .uid(RS_UID)
        .generation(1)
        .resource_version("1")
        .replicas(replicas)
        .selector("app", "web")
        .template_label("app", "web");
    match min_ready_seconds {
        Some(s) => rs.min_ready_seconds(s).build(),
        None => rs.build(),
    }
}

/// A server holding `rs`, its clock at `now`.
fn server(rs: &ReplicaSet, now: Timestamp) -> ApiServer {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(now)));
    server.insert(rs);
    server
}

/// Every status the executor wrote, in order.
fn status_puts(server: &ApiServer) -> Vec<ReplicaSetStatus> {
    server
        .requests()
        .iter()
        .filter(|r| r.verb == Some(Verb::Update) && r.subresource.as_deref() == Some("status"))
        .map(|r| r.body_as::<ReplicaSet>().status.unwrap_or_default())
        .collect()
}

/// A pod of the ReplicaSet, Ready since `ready_at` seconds.
fn owned(name: &str, ready_at: i64) -> Pod {
    pod(name)
        .label("app", "web")
        .owner("ReplicaSet", "web", RS_UID)
        .node("n1")
        .ready_at(ts(ready_at))
        .build()
}

fn orphan(name: &str) -> Pod {
    pod(name).label("app", "web").node("n1").ready_at(ts(1)).build()
}

/// An executor for kind `K` (a ReplicaSet unless the caller names another) writing to `server`.
fn executor<K>(server: &ApiServer) -> Executor<KubePodControl, K> {
    Executor {
        control: KubePodControl::new(server.client(), EventRecorder::in_memory()),
        client: server.client(),
        expectations: Arc::new(Expectations::new()),
        clock: server.clock(),
        consistency: Arc::new(ConsistencyStore::new()),
        kind: std::marker::PhantomData,
    }
}

/// One sync, as `ReplicaSetController::sync` runs it, over caches showing `cache`.
async fn sync(
    server: &ApiServer,
    rs: &ReplicaSet,
    cache: &[Pod],
) -> (Executor<KubePodControl>, Option<Duration>) {
    let candidates: Vec<Arc<Pod>> = cache.iter().cloned().map(Arc::new).collect();
    let input = SyncInput {
        rs,
        expectations_satisfied: true,
        candidates: &candidates,
        burst_replicas: BURST_REPLICAS,
        now: server.clock().now(),
        features: controller::FeatureGates::default(),
    };
    let plan = plan_sync(&input, Vec::new).expect("valid selector");
    let executor = executor(server);
    let key = ObjectKey::of(rs);
    let gone = executor.claim(&key, &plan).await.expect("claimed");
    let plan = plan.without(rs, &gone);
    let requeue = executor.execute(&key, rs, rs, plan).await.expect("synced");
    (executor, requeue)
}

#[tokio::test]
async fn an_adoption_that_finds_the_pod_gone_is_skipped_and_the_sync_still_scales_and_writes_status() {
    let r = rs(3, None);
    let server = server(&r, ts(100));
    let (a, o) = (owned("a", 50), orphan("o"));
    server.insert(&a);
    server.insert(&o);
    // "gone" is still cached but was deleted before the sync's adoption patch.
    let (_, requeue) = sync(&server, &r, &[a, orphan("gone"), o]).await;
    // The server names a created pod `<generateName><n>`.
    assert_eq!(server.writes("pods"), ["patch gone", "patch o", "create web-1"]);
    let status_puts = status_puts(&server);
    assert_eq!(status_puts.len(), 1, "status written in the same sync");
    assert_eq!(
        status_puts[0].replicas, 2,
        "the claimed pods: not the vanished one, not yet the new one"
    );
    assert_eq!(requeue, None);
}

#[tokio::test]
async fn status_and_the_availability_requeue_use_the_time_after_scaling() {
    // minReadySeconds 10; "early" is Ready since 95 s, "late" since 104 s; the sync starts at 100 s.
    let r = rs(4, Some(10));
    let server = server(&r, ts(100));
    let pods = [owned("early", 95), owned("late", 104)];
    for p in &pods {
        server.insert(p);
    }
    // Two creates (slow start: 1, then 1) of 5 s each: scaling ends at 110 s; the status write
    // takes 1 s more.
    server.on(Verb::Create, "pods").takes(Duration::from_secs(5));
    server
        .on(Verb::Update, "replicasets")
        .subresource("status")
        .takes(Duration::from_secs(1));
    let (_, requeue) = sync(&server, &r, &pods).await;
    assert_eq!(server.writes("pods").len(), 2);
    let s = &status_puts(&server)[0];
    // At 110 s "early" (95 + 10) is available, "late" (104 + 10) is not yet.
    assert_eq!((s.ready_replicas, s.available_replicas), (Some(2), Some(1)));
    // "late" is due at 114 s, measured at 111 s after the status write; available strictly after.
    assert_eq!(requeue, Some(Duration::from_millis(3001)));
}

#[tokio::test]
async fn adoption_patches_feed_the_consistency_store() {
    let r = rs(1, None);
    let server = server(&r, ts(100));
    let o = orphan("o");
    server.insert(&o);
    let (executor, _) = sync(&server, &r, &[o]).await;
    let adopted_rv: u64 = server
        .get::<Pod>("ns", "o")
        .expect("the adopted pod")
        .metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("a version");
    let read = |pods: u64| move |gr: &'static str| if gr == GR_PODS { pods } else { u64::MAX };
    let stale = executor
        .consistency
        .ensure_ready(KEY, read(adopted_rv - 1))
        .expect_err("the pod cache has not seen the adoption");
    assert_eq!((stale.group_resource, stale.written), (GR_PODS, adopted_rv));
    assert!(executor.consistency.ensure_ready(KEY, read(adopted_rv)).is_ok());
}

#[tokio::test]
async fn a_failed_delete_writes_replica_failure_with_upstreams_message() {
    let r = rs(1, None);
    let server = server(&r, ts(100));
    let pods = [owned("a", 50), owned("b", 60)];
    for p in &pods {
        server.insert(p);
    }
    server
        .on(Verb::Delete, "pods")
        .fail(500, "InternalError", "etcdserver: request timed out");
    let candidates: Vec<Arc<Pod>> = pods.iter().cloned().map(Arc::new).collect();
    let input = SyncInput {
        rs: &r,
        expectations_satisfied: true,
        candidates: &candidates,
        burst_replicas: BURST_REPLICAS,
        now: server.clock().now(),
        features: controller::FeatureGates::default(),
    };
    let plan = plan_sync(&input, Vec::new).expect("valid selector");
    let err = executor(&server)
        .execute(&ObjectKey::of(&r), &r, &r, plan)
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Manage { .. }), "{err}");
    let status_puts = status_puts(&server);
    let c = condition(&status_puts[0], REPLICA_FAILURE).expect("ReplicaFailure");
    assert_eq!(
        (c.reason.as_deref(), c.message.as_deref()),
        (
            Some("FailedDelete"),
            Some("unable to delete pods: etcdserver: request timed out")
        )
    );
}

/// A ReplicationController's sync, as the replication manager runs it: planned on its ReplicaSet
/// view, written as itself.
#[tokio::test]
async fn a_replication_controller_adopts_creates_and_writes_its_own_status() {
    use k8s_openapi::api::core::v1::{Pod as FullPod, ReplicationController};
    let rc: ReplicationController = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "web", "namespace": "ns", "uid": RS_UID, "generation": 1, "resourceVersion": "1"},
        "spec": {"replicas": 2, "selector": {"app": "web"},
                 "template": {"metadata": {"labels": {"app": "web"}}}},
    }))
    .unwrap();
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(ts(100))));
    server.insert(&rc);
    let o = orphan("o");
    server.insert(&o);
    let candidates = [Arc::new(o)];
    let view = rc.as_replica_set();
    let input = SyncInput {
        rs: &view,
        expectations_satisfied: true,
        candidates: &candidates,
        burst_replicas: BURST_REPLICAS,
        now: server.clock().now(),
        features: ReplicationController::plan_gates(controller::FeatureGates::default()),
    };
    let plan = crate::plan::plan_sync_for(&input, Owner::of(&rc), Vec::new).unwrap();
    let executor = executor::<ReplicationController>(&server);
    let key = ObjectKey::of(&rc);
    executor.claim(&key, &plan).await.expect("claimed");
    executor.execute(&key, &rc, &view, plan).await.expect("synced");
    assert_eq!(server.writes("pods"), ["patch o", "create web-1"]);
    for name in ["o", "web-1"] {
        let pod: FullPod = server.get("ns", name).unwrap();
        let owner = &pod.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.api_version.as_str(), owner.kind.as_str()),
            ("v1", "ReplicationController")
        );
    }
    assert_eq!(server.writes("replicationcontrollers"), ["update web/status"]);
    let written: ReplicationController = server.get("ns", "web").unwrap();
    let status = written.status.unwrap();
    assert_eq!((status.replicas, status.observed_generation), (1, Some(1)));
    assert!(
        executor.consistency.ensure_ready(KEY, |_| 0).is_ok(),
        "no consistency store for ReplicationControllers"
    );
}
