//! Handler delivery rate: a watch stream of 10,000 pod events (built from the recorded pod) goes
//! through kube's client, the informers' decoder, the reflector, the store and a handler, decoded as
//! the full `Pod` (managedFields skipped by `JsonListWatch`) and as the controllers' [`CompactPod`],
//! timed by the wall clock and by the process's CPU time.
//!
//! The `web pod` cases put the two content types side by side on one recorded Deployment pod
//! (`benches/fixtures/pods.*`): JSON lines through `JsonListWatch` (every kind not read as protobuf,
//! and pods with `--kube-api-content-type=application/json`), and protobuf frames through
//! `ProtobufListWatch`, the pod informer's path since `--kube-api-content-type` (KCM's default).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use controller::CompactPod;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer::json::JsonListWatch;
use informer::protobuf::{ProtobufListWatch, decode as protobuf, encode};
use informer::{
    HandlerFns, ReflectorConfig, SharedInformer,
    informer::Scope,
    strip_managed_fields,
    testing::fake_api::{Answer, FakeApi},
};
use k8s_openapi::api::core::v1::Pod;
use kcm_rs_benches::{pod_json, web_pod_json, web_pod_protobuf};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const EVENTS: usize = 10_000;
/// What the API server answers a protobuf watch with.
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Half adds of new pods, half modifications of them: event `i`'s type and the pod it is about.
fn event(i: usize) -> (&'static str, usize) {
    if i < EVENTS / 2 {
        ("ADDED", i)
    } else {
        ("MODIFIED", i - EVENTS / 2)
    }
}

/// A JSON watch line, "type" before "object" as the API server writes it (a `json!` map would sort
/// "object" first and make serde buffer the whole object before it knows the variant).
fn line(kind: &str, obj: &serde_json::Value) -> Bytes {
    Bytes::from(format!("{{\"type\":\"{kind}\",\"object\":{obj}}}\n"))
}

/// The two pod types the bench caches.
trait Cached:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl Cached for Pod {}
impl Cached for CompactPod {}

async fn deliver<K: Cached>(encoded: &[Bytes]) {
    deliver_through(
        |api| {
            Scope::new(
                JsonListWatch::<K>::new(api.client(), K::url_path(&(), None)),
                None,
            )
        },
        Answer::Lines(encoded.to_vec()),
    )
    .await;
}

/// The same path with the watch answered in protobuf frames.
async fn deliver_protobuf(frames: &[Bytes]) {
    deliver_through(
        |api| {
            Scope::new(
                ProtobufListWatch::<CompactPod>::new(api.client(), "/api/v1/pods"),
                None,
            )
        },
        Answer::Chunks {
            content_type: PROTOBUF_WATCH,
            chunks: frames.to_vec(),
        },
    )
    .await;
}

async fn deliver_through<K: Cached>(scope: impl FnOnce(&FakeApi) -> Scope<K>, watch: Answer) {
    let api = FakeApi::default();
    api.list_pods("1", &[]);
    api.watch_answer(watch);
    let config = ReflectorConfig {
        watch_list: false,
        transform: Some(strip_managed_fields()),
        ..ReflectorConfig::default()
    };
    let informer = SharedInformer::<K>::new("pods", vec![scope(&api)], config);
    let seen = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(Notify::new());
    let (s, d) = (seen.clone(), done.clone());
    let count = move || {
        if s.fetch_add(1, Ordering::Relaxed) + 1 == EVENTS {
            d.notify_one();
        }
    };
    let count2 = count.clone();
    informer.add_event_handler(
        HandlerFns::new()
            .on_add(move |_, _| count())
            .on_update(move |_, _| count2()),
        None,
    );
    let cancel = CancellationToken::new();
    informer.run(cancel.clone());
    done.notified().await;
    cancel.cancel();
}

fn bench(c: &mut Criterion) {
    // Encoded once; each iteration hands the fake server reference-counted copies of the same lines.
    let encoded: Vec<Bytes> = (0..EVENTS)
        .map(|i| {
            let (kind, n) = event(i);
            let mut obj = pod_json(n, 10, 100);
            obj["metadata"]["resourceVersion"] = (2 + i).to_string().into();
            line(kind, &obj)
        })
        .collect();
    let web_json: Vec<Bytes> = (0..EVENTS)
        .map(|i| {
            let (kind, n) = event(i);
            line(kind, &web_pod_json(n, 10, 100, 2 + i))
        })
        .collect();
    let web_pb: Vec<Bytes> = (0..EVENTS)
        .map(|i| {
            let (kind, n) = event(i);
            encode::frame(
                kind,
                encode::object("v1", "Pod", web_pod_protobuf(n, 10, 100, 2 + i)),
            )
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("delivery");
    g.throughput(Throughput::Elements(EVENTS as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("watch events to handler", |b| {
        b.to_async(&rt).iter(|| deliver::<Pod>(&encoded))
    });
    g.bench_function("watch events to handler, CompactPod", |b| {
        b.to_async(&rt).iter(|| deliver::<CompactPod>(&encoded))
    });
    g.bench_function("web pod, CompactPod, JSON", |b| {
        b.to_async(&rt).iter(|| deliver::<CompactPod>(&web_json))
    });
    g.bench_function("web pod, CompactPod, protobuf", |b| {
        b.to_async(&rt).iter(|| deliver_protobuf(&web_pb))
    });
    g.finish();

    // The same path, timed by the CPU time of the whole process (every thread: reflector, informer,
    // handler, runtime) instead of the wall clock. The wall time of a pipeline is set by its slowest
    // stage (decoding, on one thread), while the CPU time is what the whole-process benchmark
    // against upstream compares.
    let mut g = c.benchmark_group("delivery CPU");
    g.throughput(Throughput::Elements(EVENTS as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    let lines = &encoded;
    g.bench_function("watch events to handler", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| cpu_time_of(iters, || deliver::<Pod>(lines)))
    });
    g.bench_function("watch events to handler, CompactPod", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| cpu_time_of(iters, || deliver::<CompactPod>(lines)))
    });
    g.bench_function("web pod, CompactPod, JSON", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| cpu_time_of(iters, || deliver::<CompactPod>(&web_json)))
    });
    g.bench_function("web pod, CompactPod, protobuf", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| cpu_time_of(iters, || deliver_protobuf(&web_pb)))
    });
    g.finish();

    // The floor under the path above: only kube's decoding of each line into a watch event.
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(EVENTS as u64));
    g.sample_size(10);
    g.bench_function("watch event lines, Pod", |b| b.iter(|| decode::<Pod>(&encoded)));
    g.bench_function("watch event lines, CompactPod", |b| {
        b.iter(|| decode::<CompactPod>(&encoded))
    });
    g.bench_function("web pod, CompactPod, JSON", |b| {
        b.iter(|| decode::<CompactPod>(&web_json))
    });
    g.bench_function("web pod, CompactPod, protobuf", |b| {
        b.iter(|| {
            web_pb
                .iter()
                // Each frame without its 4-byte length prefix, as the reflector's codec hands it over.
                .filter(|f| protobuf::event::<CompactPod>(f.slice(4..)).is_ok())
                .count()
        })
    });
    g.finish();
}

/// Process CPU time spent on `iters` runs of `run`.
async fn cpu_time_of<F: std::future::Future<Output = ()>>(iters: u64, run: impl Fn() -> F) -> Duration {
    let start = cpu_time::ProcessTime::now();
    for _ in 0..iters {
        run().await;
    }
    start.elapsed()
}

fn decode<K: serde::de::DeserializeOwned>(encoded: &[Bytes]) -> usize {
    encoded
        .iter()
        .filter(|l| {
            let line = std::str::from_utf8(l).expect("utf-8");
            serde_json::from_str::<kube::api::WatchEvent<K>>(line).is_ok()
        })
        .count()
}

criterion_group!(benches, bench);
criterion_main!(benches);
