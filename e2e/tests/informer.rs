//! crates/informer against the real control plane: the cache converges to the server's state under
//! churn, and informers asked for by several consumers share one watch.

use std::{sync::Arc, time::Duration};

use futures::{StreamExt as _, stream};
use informer::{HandlerFns, InformerOptions, SharedInformerFactory, wait_for_cache_sync};
use k8s_openapi::api::core::v1::Pod;
use kcm_rs_e2e::{
    Cluster, counting_client,
    pods::{assert_converges, create_pods, pod, synced_pod_informer},
    wait_for, with_namespace,
};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn cache_equals_a_fresh_list_after_2000_pods_of_churn() {
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "inf-churn", |ns| async move {
        let (pods, cancel) = synced_pod_informer(&ns, None).await;

        create_pods(&ns, "p", 2000).await;
        let api = ns.api::<Pod>();
        // Relabel every 4th pod and delete every 5th while the kubelet simulation is still updating them.
        stream::iter(0..2000)
            .filter(|i| std::future::ready(i % 4 == 0 || i % 5 == 0))
            .map(|i| {
                let api = api.clone();
                async move {
                    let name = format!("p-{i}");
                    if i % 5 == 0 {
                        api.delete(&name, &DeleteParams::default()).await.map(|_| ())
                    } else {
                        let patch = json!({"metadata": {"labels": {"touched": "yes"}}});
                        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .map(|_| ())
                    }
                }
            })
            .buffer_unordered(32)
            .for_each(|r| async move { r.expect("update or delete pod") })
            .await;
        assert_converges(&ns, &pods).await;
        let touched = pods
            .store()
            .list()
            .iter()
            .filter(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("touched"))
            })
            .count();
        assert_eq!(
            touched,
            2000 / 4 - 2000 / 20,
            "relabelled pods that were not deleted"
        );
        assert!(
            pods.store()
                .list()
                .iter()
                .all(|p| p.metadata.managed_fields.is_none()),
            "managedFields stripped"
        );
        cancel.cancel();
        // Delete the pods here so that namespace deletion is quick.
        api.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test]
async fn two_consumers_of_pods_share_one_watch() {
    let cluster = Cluster::connect().await;
    let config = cluster.config().await;
    with_namespace(cluster, "inf-shared", |ns| async move {
        let (client, counter) = counting_client(config, "/pods");
        let factory = SharedInformerFactory::new(client).with_namespaces(vec![ns.name.clone()]);
        // Two "controllers" each ask the factory for pods and register a handler.
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut registrations = Vec::new();
        for _ in 0..2 {
            let informer = factory.namespaced::<Pod>(InformerOptions::default());
            let seen = seen.clone();
            registrations.push(informer.add_event_handler(
                HandlerFns::new().on_add(move |_, _| {
                    seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }),
                None,
            ));
        }
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        let synced: Vec<&dyn informer::HasSynced> = registrations.iter().map(|r| r as _).collect();
        assert!(wait_for_cache_sync(&cancel, &synced).await);
        ns.api::<Pod>()
            .create(&PostParams::default(), &pod("one", 0))
            .await
            .unwrap();
        wait_for(
            "both handlers to see the pod",
            Duration::from_secs(30),
            || async {
                let n = seen.load(std::sync::atomic::Ordering::SeqCst);
                if n == 2 { Ok(()) } else { Err(n) }
            },
        )
        .await;
        assert_eq!(counter.watches(), 1, "one WATCH for both consumers");
        assert_eq!(
            counter.lists(),
            0,
            "the streaming list replaced the LIST (server supports watch-list)"
        );
        cancel.cancel();
    })
    .await;
}
