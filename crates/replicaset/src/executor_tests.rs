//! The executor against a fake API server ([`crate::fake_server`]): what one sync writes when an
//! adoption finds its pod gone, when scaling takes time, and what the consistency store learns.

use controller::compact_pod::Pod;
use std::{collections::BTreeMap, sync::Arc, time::Duration};

use controller::{Clock, Expectations, consistency::ConsistencyStore, testing::pod};
use k8s_openapi::{
    api::{
        apps::v1::{ReplicaSet, ReplicaSetSpec},
        core::v1::PodTemplateSpec,
    },
    apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta},
    jiff::Timestamp,
};

use super::*;
use crate::{
    fake_server::FakeServer,
    plan::{BURST_REPLICAS, SyncInput, plan_sync},
    status::{REPLICA_FAILURE, condition},
};

const RS_UID: &str = "rs-uid";
const KEY: &str = "ns/web";

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn rs(replicas: i32, min_ready_seconds: Option<i32>) -> ReplicaSet {
    let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
    ReplicaSet {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("web".into()),
            uid: Some(RS_UID.into()),
            generation: Some(1),
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: None,
            }),
            min_ready_seconds,
        }),
        status: None,
    }
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

fn executor(server: &FakeServer) -> Executor<FakeServer> {
    Executor {
        control: server.clone(),
        client: server.client(),
        expectations: Arc::new(Expectations::new()),
        clock: server.clock.clone(),
        consistency: Arc::new(ConsistencyStore::new()),
    }
}

/// One sync, as `ReplicaSetController::sync` runs it, over caches showing `cache`.
async fn sync(
    server: &FakeServer,
    rs: &ReplicaSet,
    cache: &[Pod],
) -> (Executor<FakeServer>, Option<Duration>) {
    let candidates: Vec<Arc<Pod>> = cache.iter().cloned().map(Arc::new).collect();
    let input = SyncInput {
        rs,
        expectations_satisfied: true,
        candidates: &candidates,
        burst_replicas: BURST_REPLICAS,
        now: server.clock.now(),
        features: controller::FeatureGates::default(),
    };
    let plan = plan_sync(&input, Vec::new).expect("valid selector");
    let executor = executor(server);
    let requeue = executor.execute(rs, plan).await.expect("synced");
    (executor, requeue)
}

#[tokio::test]
async fn an_adoption_that_finds_the_pod_gone_is_skipped_and_the_sync_still_scales_and_writes_status() {
    let r = rs(3, None);
    let server = FakeServer::new(r.clone(), ts(100));
    let (a, o) = (owned("a", 50), orphan("o"));
    server.add_pod(a.clone());
    server.add_pod(o.clone());
    // "gone" is still cached but was deleted before the sync's adoption patch.
    let (_, requeue) = sync(&server, &r, &[a, orphan("gone"), o]).await;
    let w = server.world();
    assert_eq!(w.pod_writes, ["patch gone", "patch o", "create web1"]);
    assert_eq!(w.status_puts.len(), 1, "status written in the same sync");
    assert_eq!(
        w.status_puts[0].replicas, 2,
        "the claimed pods: not the vanished one, not yet the new one"
    );
    assert_eq!(requeue, None);
}

#[tokio::test]
async fn status_and_the_availability_requeue_use_the_time_after_scaling() {
    // minReadySeconds 10; "early" is Ready since 95 s, "late" since 104 s; the sync starts at 100 s.
    let r = rs(4, Some(10));
    let server = FakeServer::new(r.clone(), ts(100));
    let pods = [owned("early", 95), owned("late", 104)];
    for p in &pods {
        server.add_pod(p.clone());
    }
    {
        let mut w = server.world();
        // Two creates (slow start: 1, then 1) of 5 s each: scaling ends at 110 s; the status write
        // takes 1 s more.
        w.create_takes = Duration::from_secs(5);
        w.put_takes = Duration::from_secs(1);
    }
    let (_, requeue) = sync(&server, &r, &pods).await;
    let w = server.world();
    assert_eq!(w.pod_writes.len(), 2);
    let s = &w.status_puts[0];
    // At 110 s "early" (95 + 10) is available, "late" (104 + 10) is not yet.
    assert_eq!((s.ready_replicas, s.available_replicas), (Some(2), Some(1)));
    // "late" is due at 114 s, measured at 111 s after the status write; available strictly after.
    assert_eq!(requeue, Some(Duration::from_millis(3001)));
}

#[tokio::test]
async fn adoption_patches_feed_the_consistency_store() {
    let r = rs(1, None);
    let server = FakeServer::new(r.clone(), ts(100));
    let o = orphan("o");
    server.add_pod(o.clone());
    let (executor, _) = sync(&server, &r, &[o]).await;
    let adopted_rv: u64 = server.world().pods["o"]
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
    let server = FakeServer::new(r.clone(), ts(100));
    let pods = [owned("a", 50), owned("b", 60)];
    for p in &pods {
        server.add_pod(p.clone());
    }
    server.world().fail_deletes = Some("etcdserver: request timed out");
    let candidates: Vec<Arc<Pod>> = pods.iter().cloned().map(Arc::new).collect();
    let input = SyncInput {
        rs: &r,
        expectations_satisfied: true,
        candidates: &candidates,
        burst_replicas: BURST_REPLICAS,
        now: server.clock.now(),
        features: controller::FeatureGates::default(),
    };
    let plan = plan_sync(&input, Vec::new).expect("valid selector");
    let err = executor(&server).execute(&r, plan).await.unwrap_err();
    assert!(matches!(err, SyncError::Manage { .. }), "{err}");
    let w = server.world();
    let c = condition(&w.status_puts[0], REPLICA_FAILURE).expect("ReplicaFailure");
    assert_eq!(
        (c.reason.as_deref(), c.message.as_deref()),
        (
            Some("FailedDelete"),
            Some("unable to delete pods: etcdserver: request timed out")
        )
    );
}
