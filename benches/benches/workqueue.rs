//! Workqueue add/get/done throughput with 1 and 5 workers.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use informer::WorkQueue;

const ITEMS: usize = 10_000;

async fn run(workers: usize, keys: &[String]) {
    let q: WorkQueue<String> = WorkQueue::new();
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    q.forget(&k);
                    q.done(&k);
                }
            })
        })
        .collect();
    for k in keys {
        q.add(k.clone());
    }
    q.shut_down_with_drain().await;
    for t in tasks {
        t.await.expect("worker");
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let keys: Vec<String> = (0..ITEMS).map(|i| format!("ns-{}/web-{i:06}", i % 100)).collect();
    let mut g = c.benchmark_group("workqueue");
    g.throughput(Throughput::Elements(ITEMS as u64));
    g.measurement_time(Duration::from_secs(5));
    for workers in [1usize, 5] {
        g.bench_with_input(
            BenchmarkId::new("add+get+done", format!("{workers} workers")),
            &workers,
            |b, &w| {
                b.to_async(&rt).iter(|| run(w, &keys));
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
