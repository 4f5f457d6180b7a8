//! The garbage collector's graph (`garbagecollector::Graph::apply`): what each watch event of a
//! cluster's objects costs it. `build`: 1,000 owners and 10,000 dependents (one reference each)
//! seen as the monitors' first lists deliver them. `owner deleted`: one owner of ten dependents goes
//! from that graph, which enqueues its dependents and remembers it absent. `dependent updated`: a
//! dependent's unchanged references, the most common event (status and metadata writes).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use garbagecollector::{Change, Graph, Identity, Observed};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

const OWNERS: usize = 1_000;
const DEPENDENTS: usize = 10_000;

fn identity(name: String) -> Identity {
    Identity {
        kind: "ConfigMap".into(),
        api_version: "v1".into(),
        namespace: format!("ns-{}", name.len() % 10),
        uid: format!("uid-{name}"),
        name,
    }
}

fn owner(i: usize) -> Observed {
    Observed {
        identity: identity(format!("owner-{i:05}")),
        ..Observed::default()
    }
}

fn dependent(i: usize) -> Observed {
    let o = owner(i % OWNERS).identity;
    Observed {
        identity: Identity {
            namespace: o.namespace.clone(),
            ..identity(format!("dependent-{i:05}"))
        },
        owners: vec![OwnerReference {
            api_version: o.api_version,
            kind: o.kind,
            name: o.name,
            uid: o.uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        }],
        ..Observed::default()
    }
}

fn events() -> Vec<Change> {
    (0..OWNERS)
        .map(|i| Change::Added(owner(i)))
        .chain((0..DEPENDENTS).map(|i| Change::Added(dependent(i))))
        .collect()
}

fn built() -> Graph {
    let mut g = Graph::default();
    for e in events() {
        g.apply(e);
    }
    g
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("gc_graph");
    g.sample_size(20);
    g.bench_function("build", |b| {
        b.iter_batched(
            events,
            |events| {
                let mut graph = Graph::default();
                for e in events {
                    black_box(graph.apply(e));
                }
                graph
            },
            BatchSize::LargeInput,
        );
    });
    let graph = built();
    g.bench_function("owner deleted", |b| {
        let mut graph = built();
        let mut i = 0;
        b.iter(|| {
            // Each iteration deletes another owner; once all are gone, the graph is built again.
            if i == OWNERS {
                graph = built();
                i = 0;
            }
            let fx = graph.apply(Change::Deleted(owner(i)));
            i += 1;
            black_box(fx)
        });
    });
    let mut graph = graph;
    let same = dependent(42);
    g.bench_function("dependent updated", |b| {
        b.iter(|| {
            black_box(graph.apply(Change::Updated {
                old: same.clone(),
                new: same.clone(),
            }))
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
