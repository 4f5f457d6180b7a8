//! The executor's failed create against an in-memory API server ([`testing::ApiServer`]):
//! upstream's three outcomes when the new ReplicaSet cannot be created (`getNewReplicaSet`).

use std::sync::Arc;

use controller::{EventRecorder, compact_pod::Pod};
use informer::Store;
use k8s_openapi::api::apps::v1::{DeploymentStatus, ReplicaSet};
use testing::{ApiServer, FakeClock, Verb};

use super::*;
use crate::{
    conditions,
    fixtures::*,
    plan::{SyncInput, plan_sync},
    replica_sets as rsu,
};

fn no_pods(_: &str) -> Vec<Arc<Pod>> {
    Vec::new()
}

/// The Deployment `foo` (3 replicas, with a progress deadline), stored on a new server.
fn deployment_on_server() -> (Deployment, ApiServer) {
    let server = ApiServer::with_clock(Arc::new(FakeClock::at(ts(1000))));
    let mut d = deployment("foo", 3).rolling(int(1), int(0)).deadline(600).build();
    d.metadata.resource_version = Some("1".into());
    server.insert(&d);
    (d, server)
}

/// An executor over `server` whose ReplicaSet cache holds `cached`.
fn executor(server: &ApiServer, cached: &[ReplicaSet]) -> Executor {
    let store = Store::new();
    for rs in cached {
        let key = ObjectKey::new(rs.metadata.namespace.as_deref(), rsu::name(rs));
        store.upsert(key, Arc::new(rs.clone()));
    }
    Executor {
        client: server.client(),
        recorder: EventRecorder::in_memory(),
        replica_sets: Lister::new(store),
        clock: server.clock(),
    }
}

/// The plan of a first sync (no ReplicaSet in the cache it read): create the new ReplicaSet. Also
/// that ReplicaSet, as it would be created.
fn first_sync(d: &Deployment) -> (SyncPlan, ReplicaSet) {
    let plan = plan_sync(&SyncInput {
        deployment: d,
        replica_sets: &[],
        pods_of: &no_pods,
        now: ts(1000),
    })
    .unwrap();
    let Decision::Sync(a) = &plan.decision else {
        panic!("a sync")
    };
    let new = a.create.as_ref().expect("a create").rs.clone();
    (plan, new)
}

fn status_puts(server: &ApiServer) -> Vec<DeploymentStatus> {
    server
        .requests()
        .iter()
        .filter(|r| r.verb == Some(Verb::Update) && r.subresource.as_deref() == Some("status"))
        .map(|r| r.body_as::<Deployment>().status.unwrap_or_default())
        .collect()
}

fn key() -> ObjectKey {
    ObjectKey::new(Some("ns"), "foo")
}

/// Ours, with the template: the cache was behind. Plan again at once; nothing written.
#[tokio::test]
async fn an_existing_replica_set_of_ours_is_planned_again() {
    let (d, server) = deployment_on_server();
    let (plan, new) = first_sync(&d);
    server.insert(&new);
    let exec = executor(&server, &[new]);
    let out = exec.execute(&key(), &d, plan).await;
    assert!(matches!(out, Ok(Some(Duration::ZERO))), "{out:?}");
    assert!(status_puts(&server).is_empty());
    assert!(exec.recorder.recorded().is_empty());
}

/// Someone else's ReplicaSet under the name (or one with another template): a hash collision.
/// collisionCount goes up by one in the status, so the next name differs; the sync fails.
#[tokio::test]
async fn a_replica_set_not_ours_under_the_name_raises_the_collision_count() {
    for foreign in [true, false] {
        let (mut d, server) = deployment_on_server();
        if !foreign {
            d.status = Some(DeploymentStatus {
                collision_count: Some(4),
                ..DeploymentStatus::default()
            });
            server.insert(&d);
        }
        let (plan, new) = first_sync(&d);
        let mut existing = new.clone();
        if foreign {
            existing.metadata.owner_references = None;
        } else {
            let other = rs("x", 1, 1).image("other/image").build();
            existing.spec.as_mut().unwrap().template = other.spec.unwrap().template;
        }
        server.insert(&existing);
        let exec = executor(&server, &[existing]);
        let out = exec.execute(&key(), &d, plan).await;
        assert!(
            matches!(&out, Err(SyncError::Collision { name, .. }) if *name == rsu::name(&new)),
            "{out:?}"
        );
        let puts = status_puts(&server);
        let want = if foreign { 1 } else { 5 };
        assert_eq!(
            puts.iter().map(|s| s.collision_count).collect::<Vec<_>>(),
            [Some(want)]
        );
    }
}

/// Any other failure (a 409 that is not AlreadyExists among them): Progressing=False with
/// ReplicaSetCreateError in the status, a Warning of that reason, and the sync fails.
#[tokio::test]
async fn another_failure_is_reported_on_progressing_and_in_a_warning() {
    let (d, server) = deployment_on_server();
    let (plan, new) = first_sync(&d);
    server
        .on(Verb::Create, "replicasets")
        .fail(409, "Conflict", "the object has been modified");
    let exec = executor(&server, &[]);
    let out = exec.execute(&key(), &d, plan).await;
    assert!(matches!(out, Err(SyncError::Create { .. })), "{out:?}");
    let puts = status_puts(&server);
    assert_eq!(puts.len(), 1, "{puts:?}");
    let progressing = puts[0]
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == conditions::PROGRESSING)
        .expect("Progressing");
    assert_eq!(progressing.status, "False");
    assert_eq!(progressing.reason.as_deref(), Some(conditions::FAILED_RS_CREATE));
    let events = exec.recorder.recorded();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].type_, &*events[0].reason),
        (TYPE_WARNING, conditions::FAILED_RS_CREATE)
    );
    assert!(
        events[0].message.starts_with(&format!(
            "Failed to create new replica set \"{}\": ",
            rsu::name(&new)
        )),
        "{}",
        events[0].message
    );
}

/// Created while the cache has not seen it yet: retried, nothing written or told.
#[tokio::test]
async fn an_existing_replica_set_not_yet_cached_is_retried_quietly() {
    let (d, server) = deployment_on_server();
    let (plan, new) = first_sync(&d);
    server.insert(&new);
    let exec = executor(&server, &[]);
    let out = exec.execute(&key(), &d, plan).await;
    assert!(matches!(out, Err(SyncError::Create { .. })), "{out:?}");
    assert!(status_puts(&server).is_empty());
    assert!(exec.recorder.recorded().is_empty());
}

#[test]
fn only_the_already_exists_reason_is_an_existing_replica_set() {
    use kube::core::{Status, response::reason};
    let api = |reason: &str, code| kube::Error::Api(Status::failure("x", reason).with_code(code).boxed());
    assert!(is_already_exists(&api(reason::ALREADY_EXISTS, 409)));
    assert!(!is_already_exists(&api(reason::CONFLICT, 409)));
    assert!(!is_already_exists(&api(reason::UNKNOWN, 409)));
    assert!(!is_already_exists(&api(reason::INVALID, 422)));
}

/// An orphan ReplicaSet that matches is adopted only after a fresh GET finds the Deployment as
/// planned for: not when it is being deleted, nor when a new object took its name (upstream
/// `RecheckDeletionTimestamp` in `ClaimReplicaSets`).
#[tokio::test]
async fn adoption_waits_for_a_fresh_get_of_the_deployment() {
    // (what the server's Deployment is changed by, adopted)
    type Change = fn(&mut Deployment);
    let cases: [(Change, bool); 3] = [
        (|_| {}, true),
        (
            |d| d.metadata.deletion_timestamp = d.metadata.creation_timestamp.clone(),
            false,
        ),
        (|d| d.metadata.uid = Some("a-new-uid".into()), false),
    ];
    for (fresh, adopted) in cases {
        let (mut d, server) = deployment_on_server();
        d.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(1)));
        let mut orphan = rs("foo-orphan", 3, 1).build();
        orphan.metadata.owner_references = None;
        server.insert(&orphan);
        let mut on_server = d.clone();
        fresh(&mut on_server);
        server.insert(&on_server);
        let plan = plan_sync(&SyncInput {
            deployment: &d,
            replica_sets: &[Arc::new(orphan)],
            pods_of: &no_pods,
            now: ts(1000),
        })
        .unwrap();
        let exec = executor(&server, &[]);
        let out = exec.claim(&key(), &plan.owner, &plan.claims).await;
        let patches = server.writes("replicasets");
        assert_eq!(out.is_ok(), adopted, "{out:?}");
        assert_eq!(!patches.is_empty(), adopted, "{patches:?}");
    }
}
