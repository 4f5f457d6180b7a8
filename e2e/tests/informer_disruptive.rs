//! crates/informer across control-plane failures. These restart kube-apiserver, so they run one at a
//! time, in their own test binary (cargo runs test binaries one after another).

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use informer::{MetricsProvider, ReflectorMetrics};
use k8s_openapi::api::core::v1::Pod;
use kcm_rs_e2e::{
    Cluster,
    pods::{assert_converges, create_pods, synced_pod_informer},
    with_namespace,
};
use kube::api::DeleteParams;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Counts full snapshots (LISTs or streaming lists) the reflectors took.
#[derive(Default)]
struct Snapshots(Arc<AtomicUsize>);

impl MetricsProvider for Snapshots {
    fn reflector_metrics(&self, _resource: &str) -> Arc<dyn ReflectorMetrics> {
        Arc::new(SnapshotCount(self.0.clone()))
    }
}

struct SnapshotCount(Arc<AtomicUsize>);

impl ReflectorMetrics for SnapshotCount {
    fn list(&self, _items: usize) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn disruptive_cache_converges_after_kube_apiserver_is_killed_mid_watch() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "inf-restart", |ns| async move {
        let (pods, cancel) = synced_pod_informer(&ns, None).await;
        create_pods(&ns, "before", 50).await;
        assert_converges(&ns, &pods).await;

        cluster.hack(&["restart", "kube-apiserver", "--kill"]);
        create_pods(&ns, "after", 30).await;
        for i in 0..10 {
            ns.api::<Pod>()
                .delete(&format!("before-{i}"), &DeleteParams::default())
                .await
                .unwrap();
        }
        assert_converges(&ns, &pods).await;
        cancel.cancel();
    })
    .await;
}

#[tokio::test]
async fn disruptive_etcd_compaction_forces_a_relist_and_the_cache_converges() {
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "inf-compact", |ns| async move {
        let snapshots = Arc::new(AtomicUsize::new(0));
        let (pods, cancel) = synced_pod_informer(&ns, Some(Arc::new(Snapshots(snapshots.clone())))).await;
        create_pods(&ns, "old", 20).await;
        assert_converges(&ns, &pods).await;
        assert_eq!(snapshots.load(Ordering::SeqCst), 1);

        // Move etcd's revision past everything the pod informer has seen (ConfigMap writes it does not
        // watch), compact, and crash the apiserver (a graceful stop would send a last bookmark): its
        // new watch cache starts past the informer's resourceVersion, so the re-watch should get
        // 410 Gone and the informer must relist. Whether the restarted apiserver answers 410 or still
        // serves the old resourceVersion is its own timing, so the crash is tried up to three times;
        // the test fails unless one of them produced the relist.
        let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = ns.api();
        let mut relisted = false;
        for attempt in 0..3 {
            // Bookmarks can carry the informer past the compaction; bump until it is behind it.
            let mut behind = false;
            for round in 0..10 {
                for i in 0..5 {
                    let name = format!("bump-{attempt}-{round}-{i}");
                    let cm = serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
                    configmaps
                        .create(&kube::api::PostParams::default(), &cm)
                        .await
                        .unwrap();
                }
                let compacted: u64 = cluster
                    .hack(&["compact"])
                    .trim()
                    .parse()
                    .expect("compact prints the revision");
                if pods.last_synced_resource_version() < compacted {
                    behind = true;
                    break;
                }
            }
            assert!(behind, "the informer stayed at etcd's head: no 410 can be forced");
            let before = snapshots.load(Ordering::SeqCst);
            cluster.hack(&["restart", "kube-apiserver", "--kill"]);
            create_pods(&ns, &format!("new-{attempt}"), 10).await;
            assert_converges(&ns, &pods).await;
            if snapshots.load(Ordering::SeqCst) > before {
                relisted = true;
                break;
            }
        }
        assert!(relisted, "the reflector relisted after 410 Gone");
        cancel.cancel();
    })
    .await;
}
