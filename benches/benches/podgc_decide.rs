//! One pass of the pod garbage collector's decision (`podgc::decide`) over a KWOK-sized cache:
//! 10,000 and 50,000 pods on 100 nodes, a fifth of them terminated, with the threshold below
//! (the oldest terminated pods sorted out) and above (nothing to sort); and a pass that finds the
//! pods of 5 deleted nodes (`podgc::orphans`).

use std::{
    collections::{BTreeSet, HashMap},
    hint::black_box,
    sync::Arc,
};

use controller::{
    CompactPod as Pod,
    compact_pod::{PodSpec, PodStatus},
};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use podgc::NodeState;

const NODES: usize = 100;

fn pods(n: usize) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| {
            let phase = if i % 5 == 0 { "Succeeded" } else { "Running" };
            Arc::new(Pod {
                metadata: ObjectMeta {
                    name: Some(format!("pod-{i}")),
                    namespace: Some(format!("ns-{}", i % 40)),
                    // Creation times out of order, as a cache holds them.
                    creation_timestamp: Some(Time(
                        Timestamp::from_second(1_800_000_000 + ((i * 7919) % n) as i64).unwrap(),
                    )),
                    ..ObjectMeta::default()
                },
                spec: Some(PodSpec {
                    node_name: Some(format!("node-{}", i % NODES)),
                    ..PodSpec::default()
                }),
                status: Some(PodStatus {
                    phase: Some(phase.into()),
                    ..PodStatus::default()
                }),
            })
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let nodes: HashMap<String, NodeState> = (0..NODES)
        .map(|i| {
            (
                format!("node-{i}"),
                NodeState {
                    ready: true,
                    out_of_service: false,
                },
            )
        })
        .collect();
    let mut g = c.benchmark_group("podgc_decide");
    for n in [10_000, 50_000] {
        let cache = pods(n);
        let terminated = i32::try_from(n / 5).unwrap();
        g.bench_with_input(BenchmarkId::new("over_threshold", n), &cache, |b, cache| {
            b.iter(|| podgc::decide(black_box(cache), &nodes, terminated / 2));
        });
        g.bench_with_input(BenchmarkId::new("under_threshold", n), &cache, |b, cache| {
            b.iter(|| podgc::decide(black_box(cache), &nodes, 12_500.max(terminated)));
        });
        let gone: BTreeSet<String> = (0..5).map(|i| format!("node-{i}")).collect();
        g.bench_with_input(BenchmarkId::new("orphans", n), &cache, |b, cache| {
            b.iter(|| podgc::orphans(black_box(cache), &gone));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
