//! Leader-for-life (`--leader-elect-mode=for-life`): the lock is owned by the leader's Pod; a second
//! candidate waits, and leads once the leader's Pod is deleted and the garbage collector removes the
//! lock. The candidates run no controller here (the election is what is tested), so upstream's
//! controllers can stay on.

use std::time::Duration;

use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kcm_rs_e2e::{Cluster, KcmRs, with_namespace};
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

const LOCK: &str = "kcm-rs-for-life";

#[tokio::test]
async fn leader_for_life_hands_over_when_the_leaders_pod_is_deleted() {
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "for-life", |ns| async move {
        for name in ["cand-a", "cand-b"] {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"containers": [{"name": "kcm-rs", "image": "kcm-rs:dev"}]}
            }))
            .unwrap();
            ns.api::<Pod>()
                .create(&PostParams::default(), &pod)
                .await
                .unwrap();
        }
        let args = [
            "--controllers=-replicaset-controller,-deployment-controller,-job-controller",
            "--leader-elect=true",
            "--leader-elect-mode=for-life",
            &format!("--leader-elect-resource-name={LOCK}"),
        ];
        let a = KcmRs::spawn_env(
            &ns.cluster,
            "for-life-a",
            &args,
            None,
            &[("POD_NAME", "cand-a"), ("POD_NAMESPACE", &ns.name)],
        );
        a.wait_log("became the leader for life", Duration::from_secs(30))
            .await;
        let b = KcmRs::spawn_env(
            &ns.cluster,
            "for-life-b",
            &args,
            None,
            &[("POD_NAME", "cand-b"), ("POD_NAMESPACE", &ns.name)],
        );
        b.wait_log("not the leader; waiting", Duration::from_secs(30))
            .await;

        let lock = ns.api::<Lease>().get(LOCK).await.unwrap();
        let owners: Vec<String> = lock
            .metadata
            .owner_references
            .iter()
            .flatten()
            .map(|o| format!("{}/{}", o.kind, o.name))
            .collect();
        assert_eq!(owners, ["Pod/cand-a"], "the lock is owned by the leader's Pod");
        assert!(
            !b.log_text().contains("became the leader"),
            "no second leader while the first Pod lives"
        );

        // The leader's Pod goes: the garbage collector deletes the lock, and b takes it.
        ns.api::<Pod>()
            .delete("cand-a", &DeleteParams::default())
            .await
            .unwrap();
        b.wait_log("became the leader for life", Duration::from_secs(90))
            .await;
        let lock = ns.api::<Lease>().get(LOCK).await.unwrap();
        assert_eq!(
            lock.spec.and_then(|s| s.holder_identity).as_deref(),
            Some("cand-b")
        );
        drop(a);
    })
    .await;
}
