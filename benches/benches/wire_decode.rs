//! One watch event's decoding, JSON against protobuf, on the same eleven recorded pods
//! (`benches/fixtures/pods.json` and `pods-watch.pb`, taken from one namespace of the local control
//! plane, managedFields included): what `--kube-api-content-type` changes for the pod informer.
//! `json, informers' decoder` decodes them through `WithoutManagedFields`, as the informers read JSON:
//! what the adapter costs a kind whose own decoder already skips managedFields.
//!
//! The `apps` group: a recorded ReplicaSet and Deployment (`fixtures/replicaset.json`,
//! `deployment.json`), read in JSON as their informers read them, decoded whole then stripped of
//! managedFields (kube's `Api` and the transform) against decoded without them (`JsonListWatch`).

use bytes::Bytes;
use controller::CompactPod;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer::json::WithoutManagedFields;
use informer::protobuf::decode;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kcm_rs_benches::PODS_JSON;
use kube::{Resource, api::WatchEvent};
use serde::de::DeserializeOwned;

const WATCH_PB: &[u8] = include_bytes!("../fixtures/pods-watch.pb");

/// The recorded pods as the JSON watch lines the server would send: `type` before `object`, as the API
/// server writes them. (A `json!` map sorts `object` first, which makes serde buffer the whole object
/// before it knows the variant; this bench's first figures, 2026-11-24, were taken that way: see
/// benches/results/2026-11-24-protobuf-pods.md.)
fn json_lines() -> Vec<String> {
    let list: serde_json::Value = serde_json::from_str(PODS_JSON).expect("fixture");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|p| format!("{{\"type\":\"ADDED\",\"object\":{p}}}"))
        .collect()
}

/// The recorded watch's frames without their length prefix, the bookmark left out.
fn protobuf_frames() -> Vec<Bytes> {
    let all = Bytes::from_static(WATCH_PB);
    let mut frames = Vec::new();
    let mut at = 0;
    while at < all.len() {
        let len = u32::from_be_bytes(all[at..at + 4].try_into().expect("4 bytes")) as usize;
        frames.push(all.slice(at + 4..at + 4 + len));
        at += 4 + len;
    }
    frames.pop();
    frames
}

fn bench(c: &mut Criterion) {
    let lines = json_lines();
    let frames = protobuf_frames();
    let json_bytes: usize = lines.iter().map(String::len).sum();
    let pb_bytes: usize = frames.iter().map(Bytes::len).sum();
    eprintln!(
        "{} pods: {json_bytes} bytes as JSON lines, {pb_bytes} as protobuf frames ({:.2}x)",
        lines.len(),
        json_bytes as f64 / pb_bytes as f64
    );
    let mut g = c.benchmark_group("wire_decode");
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.bench_function("json", |b| {
        b.iter(|| {
            for l in &lines {
                let e: WatchEvent<CompactPod> = serde_json::from_str(l).expect("decodes");
                std::hint::black_box(e);
            }
        });
    });
    g.bench_function("json, informers' decoder", |b| {
        b.iter(|| {
            for l in &lines {
                let e: WatchEvent<WithoutManagedFields<CompactPod>> =
                    serde_json::from_str(l).expect("decodes");
                std::hint::black_box(e);
            }
        });
    });
    g.bench_function("protobuf", |b| {
        b.iter(|| {
            for f in &frames {
                let e = decode::event::<CompactPod>(f.clone()).expect("decodes");
                std::hint::black_box(e);
            }
        });
    });
    g.finish();
}

/// One MODIFIED line of a recorded object, `type` first.
fn modified(fixture: &str) -> String {
    let obj: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
    format!("{{\"type\":\"MODIFIED\",\"object\":{obj}}}")
}

fn whole_then_stripped<K: DeserializeOwned + Clone + Resource>(line: &str) -> WatchEvent<K> {
    let mut e: WatchEvent<K> = serde_json::from_str(line).expect("decodes");
    if let WatchEvent::Modified(o) = &mut e {
        o.meta_mut().managed_fields = None;
    }
    e
}

fn without_managed_fields<K: DeserializeOwned + Clone>(line: &str) -> WatchEvent<WithoutManagedFields<K>> {
    serde_json::from_str(line).expect("decodes")
}

fn apps(c: &mut Criterion) {
    let rs = modified(include_str!("../fixtures/replicaset.json"));
    let deploy = modified(include_str!("../fixtures/deployment.json"));
    let mut g = c.benchmark_group("wire_decode_apps");
    g.throughput(Throughput::Elements(1));
    g.bench_function("replicaset/whole_then_stripped", |b| {
        b.iter(|| std::hint::black_box(whole_then_stripped::<ReplicaSet>(&rs)));
    });
    g.bench_function("replicaset/without_managed_fields", |b| {
        b.iter(|| std::hint::black_box(without_managed_fields::<ReplicaSet>(&rs)));
    });
    g.bench_function("deployment/whole_then_stripped", |b| {
        b.iter(|| std::hint::black_box(whole_then_stripped::<Deployment>(&deploy)));
    });
    g.bench_function("deployment/without_managed_fields", |b| {
        b.iter(|| std::hint::black_box(without_managed_fields::<Deployment>(&deploy)));
    });
    g.finish();
}

criterion_group!(benches, bench, apps);
criterion_main!(benches);
