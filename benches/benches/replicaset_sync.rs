//! Reconcile latency of the ReplicaSet sync's decision: `plan_sync` over what the listers hold, for
//! 10 to 5,000 pods, at steady state, scaling up (half the pods missing) and scaling down (twice too
//! many, with the deletion ranking over all of them). The ReplicationController controller's, at
//! steady state: the same plan on the object's ReplicaSet view, converted in each sync.

use controller::compact_pod::Pod;
use std::{hint::black_box, sync::Arc};

use controller::Owner;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::{
    api::{apps::v1::ReplicaSet, core::v1::ReplicationController},
    jiff::Timestamp,
};
use replicaset::{BURST_REPLICAS, ReplicaKind, SyncInput, plan_sync, plan_sync_for};
use testing::{pod, replica_set};

fn rs(replicas: i32) -> ReplicaSet {
    replica_set("web")
        .uid("rs-uid")
        .generation(1)
        .replicas(replicas)
        .selector("app", "web")
        .template_label("app", "web")
        .min_ready_seconds(0)
        .build()
}

/// `n` ready pods of the ReplicaSet spread over 50 nodes, of varied age and readiness time.
fn pods(n: usize) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| {
            let ready = Timestamp::from_second(1_000_000 + (i as i64 * 37) % 100_000).unwrap();
            let created = Timestamp::from_second(900_000 + (i as i64 * 53) % 100_000).unwrap();
            Arc::new(
                pod(&format!("web-{i:05}"))
                    .uid(&format!("uid-{:08x}", (i * 2_654_435_761) % 4_294_967_296))
                    .label("app", "web")
                    .owner("ReplicaSet", "web", "rs-uid")
                    .node(&format!("node-{}", i % 50))
                    .ready_at(ready)
                    .created_at(created)
                    .build(),
            )
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let now = Timestamp::from_second(1_200_000).unwrap();
    let mut g = c.benchmark_group("replicaset_plan");
    g.sample_size(20);
    for n in [10usize, 100, 1_000, 5_000] {
        let replicas = i32::try_from(n).unwrap();
        let cases = [
            ("steady", rs(replicas), pods(n)),
            ("scale-up", rs(replicas), pods(n / 2)),
            ("scale-down", rs(replicas), pods(n * 2)),
        ];
        for (name, rs, pods) in &cases {
            g.bench_with_input(BenchmarkId::new(*name, n), &n, |b, _| {
                b.iter(|| {
                    let input = SyncInput {
                        rs,
                        expectations_satisfied: true,
                        candidates: pods,
                        burst_replicas: BURST_REPLICAS,
                        now,
                        features: controller::FeatureGates::default(),
                    };
                    black_box(plan_sync(&input, || pods.clone()).unwrap())
                });
            });
        }
    }
    g.finish();

    let mut g = c.benchmark_group("replication_controller_plan");
    g.sample_size(20);
    for n in [10usize, 100, 1_000, 5_000] {
        let rc = rc(i32::try_from(n).unwrap());
        let pods = pods(n);
        g.bench_with_input(BenchmarkId::new("steady", n), &n, |b, _| {
            b.iter(|| {
                let view = rc.as_replica_set();
                let input = SyncInput {
                    rs: &view,
                    expectations_satisfied: true,
                    candidates: &pods,
                    burst_replicas: BURST_REPLICAS,
                    now,
                    features: ReplicationController::plan_gates(controller::FeatureGates::default()),
                };
                black_box(plan_sync_for(&input, Owner::of(&rc), || pods.clone()).unwrap())
            });
        });
    }
    g.finish();
}

/// `rs(replicas)` as a ReplicationController with the same UID, so that the same pods are its own.
fn rc(replicas: i32) -> ReplicationController {
    let rs = rs(replicas);
    let spec = rs.spec.unwrap();
    ReplicationController {
        metadata: rs.metadata,
        spec: Some(k8s_openapi::api::core::v1::ReplicationControllerSpec {
            replicas: spec.replicas,
            min_ready_seconds: spec.min_ready_seconds,
            selector: spec.selector.match_labels,
            template: spec.template,
        }),
        status: None,
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
