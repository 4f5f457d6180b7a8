//! Heap bytes per object the garbage collector holds: the collector caches every object of every
//! kind it can delete, so this is its memory per object in the cluster. Two parts: its graph node
//! (`garbagecollector::Graph`), and the metadata its monitor's store keeps, slimmed as the monitors
//! slim it (no managedFields, annotations or labels). Not a timing benchmark: it prints its figures
//! (`cargo bench -p kcm-rs-benches --bench gc_memory`).
//!
//! The objects: 1,000 owners and 10,000 dependents of one blocking, controlling reference each,
//! with UIDs, names and namespaces of the lengths the API server gives (36-character UIDs).

use garbagecollector::{Change, Graph, Identity, Observed};
use informer::{ObjectKey, Store};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    api::DynamicObject,
    core::{ObjectMeta, PartialObjectMeta},
};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const OWNERS: usize = 1_000;
const DEPENDENTS: usize = 10_000;

fn uid(i: usize) -> String {
    format!("{i:08x}-0000-4000-8000-{i:012x}")
}

/// Object `i` (owners first), with its owner's reference if it is a dependent.
fn object(i: usize) -> (Identity, Vec<OwnerReference>) {
    let namespace = format!("team-{:02}", i % 20);
    let name = if i < OWNERS {
        format!("web-{i:05}")
    } else {
        format!("web-{:05}-7d9f8c6b5-{:05}", i % OWNERS, i)
    };
    let owners = if i < OWNERS {
        Vec::new()
    } else {
        vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: format!("web-{:05}", i % OWNERS),
            uid: uid(i % OWNERS),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]
    };
    let identity = Identity {
        kind: if i < OWNERS { "ReplicaSet" } else { "Pod" }.into(),
        api_version: if i < OWNERS { "apps/v1" } else { "v1" }.into(),
        namespace,
        name,
        uid: uid(i),
    };
    (identity, owners)
}

fn graph_bytes() -> usize {
    let before = dhat::HeapStats::get().curr_bytes;
    let mut graph = Graph::default();
    for i in 0..OWNERS + DEPENDENTS {
        let (identity, owners) = object(i);
        graph.apply(Change::Added(Observed {
            identity,
            owners,
            ..Observed::default()
        }));
    }
    let after = dhat::HeapStats::get().curr_bytes;
    drop(graph);
    (after - before) / (OWNERS + DEPENDENTS)
}

fn store_bytes() -> usize {
    let before = dhat::HeapStats::get().curr_bytes;
    let store: Store<PartialObjectMeta<DynamicObject>> = Store::new();
    for i in 0..OWNERS + DEPENDENTS {
        let (identity, owners) = object(i);
        let meta = PartialObjectMeta::<DynamicObject> {
            types: None,
            metadata: ObjectMeta {
                name: Some(identity.name),
                namespace: Some(identity.namespace),
                uid: Some(identity.uid),
                resource_version: Some(format!("{}", 1_000_000 + i)),
                generation: Some(1),
                creation_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    "2026-11-30T00:00:00Z".parse().expect("a time"),
                )),
                owner_references: Some(owners).filter(|o| !o.is_empty()),
                ..ObjectMeta::default()
            },
            _phantom: Default::default(),
        };
        store.upsert(ObjectKey::of(&meta), meta.into());
    }
    let after = dhat::HeapStats::get().curr_bytes;
    drop(store);
    (after - before) / (OWNERS + DEPENDENTS)
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let graph = graph_bytes();
    let store = store_bytes();
    println!(
        "gc_memory: {} objects ({OWNERS} owners, {DEPENDENTS} dependents): graph {graph} B per object, \
         monitor store {store} B per object, {} B in all",
        OWNERS + DEPENDENTS,
        graph + store
    );
}
