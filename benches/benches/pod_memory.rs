//! Bytes of heap per cached Pod, with and without the managedFields-stripping transform. Not a timing
//! benchmark: it prints its figures (run with `cargo bench -p kcm-rs-benches --bench pod_memory`).
//!
//! The pods are the recorded fixture (a pod kube-controller-manager created and KWOK ran), decoded
//! from JSON as the reflector decodes them and stored in a `Store` with the namespace and
//! controller-UID indexes that controllers use. Each pod is decoded from its own JSON so that no
//! allocation is shared between pods, as in a real cache. The last line puts the two content types
//! side by side on one recorded Deployment pod: a cached pod must cost the same whichever way it came.

use bytes::Bytes;
use controller::CompactPod;
use informer::protobuf::ProtobufObject as _;
use informer::{
    ObjectKey, Store,
    store::{NAMESPACE_INDEX, namespace_index},
};
use k8s_openapi::api::core::v1::Pod;
use kcm_rs_benches::{pod_json, web_pod_json, web_pod_protobuf};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const PODS: usize = 10_000;

/// Heap bytes per pod of a store holding the pods `inputs` makes, each decoded by `decode` from its
/// own input (so that no allocation is shared between pods, as in a real cache). The inputs are made
/// and dropped inside the measurement, so a pod that kept a piece of its input alive would pay for it.
fn cached_bytes<I, K>(inputs: impl FnOnce() -> Vec<I>, decode: impl Fn(&I) -> K) -> usize
where
    K: kube::Resource + Send + Sync + 'static,
{
    let before = dhat::HeapStats::get().curr_bytes;
    let inputs = inputs();
    let store: Store<K> = Store::new();
    store.add_index(NAMESPACE_INDEX, namespace_index());
    store.add_index(controller::OWNER_INDEX, controller::owner_index());
    for input in &inputs {
        let pod = decode(input);
        store.upsert(ObjectKey::of(&pod), pod.into());
    }
    let pods = inputs.len();
    drop(inputs);
    let after = dhat::HeapStats::get().curr_bytes;
    drop(store);
    (after - before) / pods
}

/// The recorded fixture pod as JSON, `PODS` distinct copies.
fn fixture_json() -> Vec<String> {
    (0..PODS)
        .map(|i| pod_json(i, 10, PODS / 10).to_string())
        .collect()
}

fn json<K: serde::de::DeserializeOwned>(transform: fn(&mut K)) -> impl Fn(&String) -> K {
    move |j| {
        let mut pod: K = serde_json::from_str(j).expect("fixture is a Pod");
        transform(&mut pod);
        pod
    }
}

/// The same pods decoded and held in a plain vector: the pod objects alone, without store keys and
/// index entries.
fn object_bytes<K: serde::de::DeserializeOwned>() -> usize {
    let json = fixture_json();
    let before = dhat::HeapStats::get().curr_bytes;
    let pods: Vec<std::sync::Arc<K>> = json
        .iter()
        .map(|j| std::sync::Arc::new(serde_json::from_str(j).expect("fixture is a Pod")))
        .collect();
    let after = dhat::HeapStats::get().curr_bytes;
    drop(pods);
    (after - before - PODS * std::mem::size_of::<usize>()) / PODS
}

/// The recorded Deployment pod (`benches/fixtures/pods.*`) in the cache as each content type delivers
/// it: JSON, and protobuf (the pod informer's default since `--kube-api-content-type`).
fn web_pod_bytes() -> (usize, usize) {
    let from_json = cached_bytes(
        || {
            (0..PODS)
                .map(|i| web_pod_json(i, 10, PODS / 10, 1000 + i).to_string())
                .collect()
        },
        json::<CompactPod>(|_| {}),
    );
    let from_pb = cached_bytes(
        || {
            (0..PODS)
                .map(|i| web_pod_protobuf(i, 10, PODS / 10, 1000 + i))
                .collect()
        },
        |raw: &Bytes| CompactPod::decode_protobuf(raw.clone()).expect("fixture is a Pod"),
    );
    (from_json, from_pb)
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // The fixtures are parsed once, into statics: parse them before measuring, so that no
    // measurement counts them.
    std::hint::black_box((
        pod_json(0, 1, 1),
        web_pod_json(0, 1, 1, 0),
        web_pod_protobuf(0, 1, 1, 0),
    ));
    let full = cached_bytes(fixture_json, json::<Pod>(|_| {}));
    let stripped = cached_bytes(
        fixture_json,
        json::<Pod>(|p| {
            p.metadata.managed_fields = None;
        }),
    );
    let slim = cached_bytes(fixture_json, json(informer::transform::slim_pod));
    let compact = cached_bytes(fixture_json, json::<CompactPod>(|_| {}));
    let (web_json, web_pb) = web_pod_bytes();
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
    println!(
        "pod_memory: CompactPod, recorded Deployment pod (sidecar, init container), from JSON: {web_json} bytes/pod, from protobuf: {web_pb} bytes/pod"
    );
}
