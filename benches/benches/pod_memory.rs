//! Bytes of heap per cached Pod, with and without the managedFields-stripping transform. Not a timing
//! benchmark: it prints its figures (run with `cargo bench -p kcm-rs-benches --bench pod_memory`).
//!
//! The pods are the recorded fixture (a pod kube-controller-manager created and KWOK ran), decoded
//! from JSON as the reflector decodes them and stored in a `Store` with the namespace and
//! controller-UID indexes that controllers use. Each pod is decoded from its own JSON so that no
//! allocation is shared between pods, as in a real cache.

use controller::CompactPod;
use informer::{
    ObjectKey, Store,
    store::{CONTROLLER_UID_INDEX, NAMESPACE_INDEX, controller_uid_index, namespace_index},
};
use k8s_openapi::api::core::v1::Pod;
use kcm_rs_benches::pod_json;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const PODS: usize = 10_000;

fn cached_bytes<K>(transform: fn(&mut K)) -> usize
where
    K: kube::Resource + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let json: Vec<String> = (0..PODS)
        .map(|i| pod_json(i, 10, PODS / 10).to_string())
        .collect();
    let before = dhat::HeapStats::get().curr_bytes;
    let store: Store<K> = Store::new();
    store.add_index(NAMESPACE_INDEX, namespace_index());
    store.add_index(CONTROLLER_UID_INDEX, controller_uid_index());
    for j in &json {
        let mut pod: K = serde_json::from_str(j).expect("fixture is a Pod");
        transform(&mut pod);
        store.upsert(ObjectKey::of(&pod), pod.into());
    }
    let after = dhat::HeapStats::get().curr_bytes;
    drop(store);
    (after - before) / PODS
}

/// The same pods decoded and held in a plain vector: the pod objects alone, without store keys and
/// index entries.
fn object_bytes<K: serde::de::DeserializeOwned>() -> usize {
    let json: Vec<String> = (0..PODS)
        .map(|i| pod_json(i, 10, PODS / 10).to_string())
        .collect();
    let before = dhat::HeapStats::get().curr_bytes;
    let pods: Vec<std::sync::Arc<K>> = json
        .iter()
        .map(|j| std::sync::Arc::new(serde_json::from_str(j).expect("fixture is a Pod")))
        .collect();
    let after = dhat::HeapStats::get().curr_bytes;
    drop(pods);
    (after - before - PODS * std::mem::size_of::<usize>()) / PODS
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let full = cached_bytes::<Pod>(|_| {});
    let stripped = cached_bytes::<Pod>(|p| {
        p.metadata.managed_fields = None;
    });
    let slim = cached_bytes(informer::transform::slim_pod);
    let compact = cached_bytes::<CompactPod>(|_| {});
    let compact_alone = object_bytes::<CompactPod>();
    println!("pod_memory: {PODS} cached pods (recorded fixture, with namespace and controller-uid indexes)");
    println!(
        "pod_memory: with managedFields:    {full} bytes/pod ({:.2} KiB)",
        full as f64 / 1024.0
    );
    println!(
        "pod_memory: managedFields stripped: {stripped} bytes/pod ({:.2} KiB)",
        stripped as f64 / 1024.0
    );
    println!(
        "pod_memory: slim_pod (controllers' view): {slim} bytes/pod ({:.2} KiB)",
        slim as f64 / 1024.0
    );
    println!(
        "pod_memory: CompactPod (decoded projection): {compact} bytes/pod ({:.2} KiB)",
        compact as f64 / 1024.0
    );
    println!(
        "pod_memory: CompactPod object alone (no store key or index entries): {compact_alone} bytes/pod, struct {} bytes",
        std::mem::size_of::<CompactPod>()
    );
}
