//! Which pods a scale-down ranks by: those of every object sharing this one's controller for a
//! ReplicaSet, none for a ReplicationController, whose manager upstream never finds them for.

use std::collections::BTreeMap;

use informer::{NoopMetrics, SharedInformerFactory};
use k8s_openapi::{
    api::core::v1::ReplicationControllerSpec,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use testing::{ApiServer, pod, replica_set};

use super::*;

/// Both objects' controller: an OpenShift DeploymentConfig, say.
fn controlled(meta: &mut ObjectMeta) {
    meta.owner_references = Some(vec![OwnerReference {
        api_version: "apps.openshift.io/v1".into(),
        kind: "DeploymentConfig".into(),
        name: "app".into(),
        uid: "dc-uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
}

fn controller<K: ReplicaKind>(server: &ApiServer) -> ReplicaSetController<KubePodControl, K> {
    let factory = SharedInformerFactory::new(server.client());
    let cx = Context::new(&factory, server.client(), &NoopMetrics, K::COMPONENT);
    ReplicaSetController::build(cx, ReplicaSetOptions::default())
}

/// `objects` in the controller's cache, and a pod of each (labelled `app=<name>`) on node `n1`.
fn related_to_first<K: ReplicaKind>(objects: Vec<K>) -> Vec<String> {
    let server = ApiServer::new();
    let c = controller::<K>(&server);
    for obj in &objects {
        let name = obj.meta().name.clone().unwrap_or_default();
        let p = pod(&format!("p{name}")).label("app", &name).node("n1").build();
        c.pods.store().upsert(ObjectKey::of(&p), Arc::new(p));
        c.replica_sets
            .store()
            .upsert(ObjectKey::of(obj), Arc::new(obj.clone()));
    }
    let mut names: Vec<String> = c
        .related_pods(&objects[0])
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_replica_set_ranks_by_the_pods_of_its_controllers_replica_sets() {
    let objects = ["a", "b"]
        .map(|n| {
            let mut rs = replica_set(n).uid(&format!("uid-{n}")).selector("app", n).build();
            controlled(&mut rs.metadata);
            rs
        })
        .to_vec();
    assert_eq!(related_to_first(objects), ["pa", "pb"]);
}

#[tokio::test]
async fn a_replication_controller_ranks_by_none() {
    let objects = ["a", "b"]
        .map(|n| {
            let mut rc = ReplicationController {
                metadata: ObjectMeta {
                    name: Some(n.into()),
                    namespace: Some("ns".into()),
                    uid: Some(format!("uid-{n}")),
                    ..ObjectMeta::default()
                },
                spec: Some(ReplicationControllerSpec {
                    selector: Some(BTreeMap::from([("app".to_owned(), n.to_owned())])),
                    ..ReplicationControllerSpec::default()
                }),
                status: None,
            };
            controlled(&mut rc.metadata);
            rc
        })
        .to_vec();
    assert!(related_to_first(objects).is_empty());
}
