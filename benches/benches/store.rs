//! Store writes and index lookups at 10k and 100k cached pods.

use controller::compact_pod::Pod;
use std::{hint::black_box, sync::Arc};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use informer::{
    LabelMatcher, Lister, ObjectKey, Store,
    store::{NAMESPACE_INDEX, namespace_index},
};

use kcm_rs_benches::pods;

/// 100 namespaces; ReplicaSets of 10 pods each.
fn filled(n: usize) -> (Store<Pod>, Vec<(ObjectKey, Arc<Pod>)>) {
    let store = Store::new();
    store.add_index(NAMESPACE_INDEX, namespace_index());
    store.add_index(controller::OWNER_INDEX, controller::owner_index());
    let entries: Vec<_> = pods(n, 100, n / 10)
        .into_iter()
        .map(|p| (ObjectKey::of(&*p), p))
        .collect();
    store.replace(entries.iter().cloned());
    (store, entries)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("store");
    g.sample_size(30);
    for n in [10_000usize, 100_000] {
        let (store, entries) = filled(n);
        let lister = Lister::new(store.clone());
        let mut i = 0usize;
        g.bench_with_input(BenchmarkId::new("update", n), &n, |b, _| {
            b.iter(|| {
                let (k, p) = &entries[i % n];
                i += 1;
                black_box(store.upsert(k.clone(), p.clone()));
            });
        });
        g.bench_with_input(BenchmarkId::new("delete+add", n), &n, |b, _| {
            b.iter(|| {
                let (k, p) = &entries[i % n];
                i += 1;
                store.delete(k);
                black_box(store.upsert(k.clone(), p.clone()));
            });
        });
        g.bench_with_input(BenchmarkId::new("get", n), &n, |b, _| {
            b.iter(|| {
                i += 1;
                black_box(lister.get(Some("ns-7"), entries[i % n].0.name()));
            });
        });
        g.bench_with_input(BenchmarkId::new("by_controller_uid (10 pods)", n), &n, |b, _| {
            b.iter(|| {
                i += 1;
                black_box(
                    store
                        .by_index(controller::OWNER_INDEX, &format!("owner-{}", i % (n / 10)))
                        .unwrap(),
                );
            });
        });
        let label = LabelMatcher::from_selector(Some(
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some([("app".to_owned(), "web2".to_owned())].into()),
                ..Default::default()
            },
        ))
        .unwrap();
        g.bench_with_input(
            BenchmarkId::new(format!("list_namespace+selector ({} pods)", n / 100), n),
            &n,
            |b, _| {
                b.iter(|| black_box(lister.list_namespace("ns-3", &label)));
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
