use controller::testing::pod;
use informer::Store;
use testing::drain;

use super::*;
use crate::fixtures::{deployment, rs};

fn setup(recreate: bool) -> Handlers {
    let ds = Store::new();
    ds.add_index(
        informer::store::NAMESPACE_INDEX,
        informer::store::namespace_index(),
    );
    let d = if recreate {
        deployment("foo", 1).recreate().build()
    } else {
        deployment("foo", 1).build()
    };
    ds.upsert(ObjectKey::of(&d), Arc::new(d));
    let rss = Store::new();
    rss.add_index(
        informer::store::NAMESPACE_INDEX,
        informer::store::namespace_index(),
    );
    let r = rs("foo-1", 1, 1).build();
    rss.upsert(ObjectKey::of(&r), Arc::new(r));
    Handlers {
        deployments: Lister::new(ds),
        replica_sets: Lister::new(rss),
        queue: WorkQueue::new(),
    }
}

#[tokio::test]
async fn replica_sets_wake_their_owner_and_orphans_every_matching_deployment() {
    let h = setup(false);
    let handler = ReplicaSetHandler(h.clone());
    handler.on_add(&rs("foo-1", 1, 1).arc(), false);
    assert_eq!(drain(&h.queue), ["ns/foo"]);
    handler.on_add(&rs("orphan", 1, 1).orphan().arc(), false);
    assert_eq!(drain(&h.queue), ["ns/foo"]);
    let mut stranger = rs("stranger", 1, 1).build();
    stranger.metadata.owner_references.as_mut().unwrap()[0].uid = "other".into();
    handler.on_add(&Arc::new(stranger), false);
    assert!(drain(&h.queue).is_empty(), "another Deployment's (unknown UID)");
    // Same resourceVersion: a resync, ignored.
    let a = rs("foo-1", 1, 1).arc();
    handler.on_update(&a, &a);
    assert!(drain(&h.queue).is_empty());
    handler.on_delete(&DeletedObject::Final(rs("orphan", 1, 1).orphan().arc()));
    assert!(drain(&h.queue).is_empty(), "orphans going away concern nobody");
}

#[tokio::test]
async fn pod_deletions_wake_only_recreate_deployments() {
    for recreate in [false, true] {
        let h = setup(recreate);
        let p = pod("p").owner("ReplicaSet", "foo-1", "uid-foo-1").build();
        PodHandler(h.clone()).on_delete(&DeletedObject::Final(Arc::new(p)));
        let want: Vec<String> = if recreate { vec!["ns/foo".into()] } else { vec![] };
        assert_eq!(drain(&h.queue), want);
    }
}

#[tokio::test]
async fn a_deployment_resync_enqueues_it() {
    // `--min-resync-period` relies on this: upstream's updateDeployment queues on every update,
    // resyncs (old == new) included, while ReplicaSet resyncs are ignored (above).
    let h = setup(false);
    let d = Arc::new(deployment("foo", 1).build());
    DeploymentHandler(h.clone()).on_update(&d, &d);
    assert_eq!(drain(&h.queue), ["ns/foo"]);
}

#[tokio::test]
async fn an_unlabelled_orphan_wakes_nobody() {
    // A selector of only NotIn/DoesNotExist matches empty labels, but upstream's
    // GetDeploymentsForReplicaSet gives up on a ReplicaSet without labels first.
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    let h = setup(false);
    let mut d = deployment("notin", 1).build();
    d.metadata.uid = Some("notin-uid".into());
    d.spec.as_mut().unwrap().selector = LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "tier".into(),
            operator: "NotIn".into(),
            values: Some(vec!["db".into()]),
        }]),
        match_labels: None,
    };
    h.deployments.store().upsert(ObjectKey::of(&d), Arc::new(d));
    for labels in [None, Some(Default::default())] {
        let mut orphan = rs("bare", 1, 1).orphan().build();
        orphan.metadata.labels = labels;
        ReplicaSetHandler(h.clone()).on_add(&Arc::new(orphan), false);
        assert!(drain(&h.queue).is_empty());
    }
    let mut labelled = rs("labelled", 1, 1).orphan().build();
    labelled.metadata.labels = Some([("tier".to_owned(), "web".to_owned())].into());
    ReplicaSetHandler(h.clone()).on_add(&Arc::new(labelled), false);
    assert_eq!(drain(&h.queue), ["ns/notin"]);
}
