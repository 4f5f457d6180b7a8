//! Reconcile latency of the Deployment sync's decision: `deployment::plan_sync` (claims, the new
//! ReplicaSet found by template, revisions and annotations, the rollout step, cleanup, status) over
//! what the listers hold, with 1, 10 and 100 ReplicaSets of history and 10, 1,000 and 5,000 pods.
//!
//! Steady: the newest ReplicaSet runs every pod, the old ones are at 0 (history limit high enough
//! that nothing is cleaned up, so every sync is the same). Mid-rollout: the template changed; the
//! newest old ReplicaSet still runs 80 % of the pods and the new one 20 %, all Ready, so the sync
//! plans a scale step. The pods are what the pod lister returns per ReplicaSet (the Deployment
//! controller asks for them only under Recreate, so a RollingUpdate sync does not pay for them,
//! unlike upstream, which lists them on every sync).

use controller::compact_pod::Pod;
use std::{collections::HashMap, hint::black_box, sync::Arc};

use controller::testing::pod;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use deployment::{Decision, SyncInput, compute_hash, plan_sync};
use k8s_openapi::{
    api::{
        apps::v1::{Deployment, ReplicaSet},
        core::v1::PodTemplateSpec,
    },
    jiff::Timestamp,
};
use serde_json::json;

const UID: &str = "deploy-uid";

fn template(image: &str) -> PodTemplateSpec {
    serde_json::from_value(json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": image}]}
    }))
    .unwrap()
}

fn deployment(pods: i32, image: &str, history: usize) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {
            "namespace": "ns", "name": "web", "uid": UID, "generation": 2,
            "annotations": {"deployment.kubernetes.io/revision": history.to_string()}
        },
        "spec": {
            "replicas": pods,
            "revisionHistoryLimit": 1000,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(image),
        },
        "status": {"observedGeneration": 1, "replicas": pods, "updatedReplicas": pods}
    }))
    .unwrap()
}

/// ReplicaSet `revision` of the Deployment, running `replicas` Ready pods of `image`.
fn replica_set(revision: usize, image: &str, replicas: i32, total: i32) -> ReplicaSet {
    let hash = compute_hash(&template(image), None);
    let mut t = template(image);
    t.metadata
        .as_mut()
        .unwrap()
        .labels
        .as_mut()
        .unwrap()
        .insert("pod-template-hash".into(), hash.clone());
    serde_json::from_value(json!({
        "metadata": {
            "namespace": "ns", "name": format!("web-{hash}"), "uid": format!("rs-{revision}"),
            "labels": {"app": "web", "pod-template-hash": hash},
            "creationTimestamp": Timestamp::from_second(1_000_000 + i64::try_from(revision).unwrap()).unwrap().to_string(),
            "annotations": {
                "deployment.kubernetes.io/revision": revision.to_string(),
                "deployment.kubernetes.io/desired-replicas": total.to_string(),
                "deployment.kubernetes.io/max-replicas": (total + total / 4 + 1).to_string(),
            },
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": UID, "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": hash}}, "template": t},
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas, "fullyLabeledReplicas": replicas, "observedGeneration": 1}
    }))
    .unwrap()
}

struct World {
    deployment: Deployment,
    replica_sets: Vec<Arc<ReplicaSet>>,
    pods: HashMap<String, Vec<Arc<Pod>>>,
}

fn world(history: usize, pods: i32, rolling: bool) -> World {
    let mut replica_sets = Vec::new();
    for r in 1..history {
        replica_sets.push(replica_set(r, &format!("img:{r}"), 0, pods));
    }
    let image = if rolling {
        format!("img:{}", history + 1)
    } else {
        format!("img:{history}")
    };
    let (old, new) = if rolling {
        (pods * 4 / 5, pods - pods * 4 / 5)
    } else {
        (0, pods)
    };
    if rolling {
        replica_sets.push(replica_set(history, &format!("img:{history}"), old, pods));
        replica_sets.push(replica_set(history + 1, &image, new, pods));
    } else {
        replica_sets.push(replica_set(history, &image, new, pods));
    }
    let mut by_rs: HashMap<String, Vec<Arc<Pod>>> = HashMap::new();
    for rs in &replica_sets {
        let n = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let uid = rs.metadata.uid.clone().unwrap();
        let name = rs.metadata.name.clone().unwrap();
        let labels = rs.metadata.labels.clone().unwrap();
        let list = (0..n)
            .map(|i| {
                let mut p = pod(&format!("{name}-{i}"))
                    .owner("ReplicaSet", &name, &uid)
                    .ready_at(Timestamp::from_second(1_000_000).unwrap())
                    .build();
                p.metadata.labels = Some(labels.clone());
                Arc::new(p)
            })
            .collect();
        by_rs.insert(uid, list);
    }
    World {
        deployment: deployment(pods, &image, history),
        replica_sets: replica_sets.into_iter().map(Arc::new).collect(),
        pods: by_rs,
    }
}

fn bench(c: &mut Criterion) {
    let now = Timestamp::from_second(1_200_000).unwrap();
    let mut g = c.benchmark_group("deployment_plan");
    g.sample_size(20);
    for history in [1usize, 10, 100] {
        for pods in [10, 1_000, 5_000] {
            for (state, rolling) in [("steady", false), ("mid-rollout", true)] {
                let w = world(history, pods, rolling);
                let pods_of = |uid: &str| w.pods.get(uid).cloned().unwrap_or_default();
                let id = BenchmarkId::new(format!("{state}/history={history}"), pods);
                g.bench_with_input(id, &pods, |b, _| {
                    b.iter(|| {
                        let input = SyncInput {
                            deployment: &w.deployment,
                            replica_sets: &w.replica_sets,
                            pods_of: &pods_of,
                            now,
                        };
                        let plan = plan_sync(&input).unwrap();
                        assert!(matches!(plan.decision, Decision::Sync(_)));
                        black_box(plan)
                    });
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
