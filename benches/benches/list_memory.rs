//! Peak heap while an informer takes in its first list, against the heap it settles at. Not a timing
//! benchmark: it prints its figures (`cargo bench -p kcm-rs-benches --bench list_memory`).
//!
//! An idle kcm-rs caching 20,000 pods peaked 10 MiB above its settled RSS in the side-by-side
//! benchmark: the initial list held the objects in more places than the store does
//! (benches/results/2026-11-24-side-by-side-full.md; the fix: benches/results/2026-11-24-cpu-profile.md).
//! This measures that path alone, on the controllers' `CompactPod` informer: a streaming list of
//! 10,000 recorded pods (the API server's initial events, then the bookmark that ends them) through
//! kube's client and decoder, the reflector, the informer and one handler. The watch lines are
//! encoded before the profiler starts, so only what the informer allocates is counted.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use bytes::Bytes;
use controller::CompactPod;
use informer::{
    HandlerFns, ReflectorConfig, SharedInformer,
    informer::Scope,
    testing::fake_api::{Answer, FakeApi},
};
use kcm_rs_benches::pod_json;
use kube::Api;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const PODS: usize = 10_000;

fn main() {
    let mut lines: Vec<Bytes> = (0..PODS)
        .map(|i| {
            Bytes::from(format!(
                "{{\"type\":\"ADDED\",\"object\":{}}}\n",
                pod_json(i, 10, 100)
            ))
        })
        .collect();
    let end = serde_json::json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
        "metadata": {"resourceVersion": "20000", "annotations": {"k8s.io/initial-events-end": "true"}}}});
    lines.push(Bytes::from(format!("{end}\n")));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let profiler = dhat::Profiler::builder().testing().build();
    let before = dhat::HeapStats::get().curr_bytes;
    let (informer, cancel) = rt.block_on(list(lines));
    let stats = dhat::HeapStats::get();
    let settled = stats.curr_bytes - before;
    let peak = stats.max_bytes - before;
    println!("list_memory: {PODS} pods taken in by a streaming list into the CompactPod informer");
    println!(
        "list_memory: settled {:.1} MiB ({} bytes/pod), peak {:.1} MiB ({} bytes/pod), peak/settled {:.2}",
        mib(settled),
        settled / PODS,
        mib(peak),
        peak / PODS,
        peak as f64 / settled as f64
    );
    cancel.cancel();
    drop(informer);
    drop(profiler);
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// Runs the informer until its handler has seen every listed pod; returns it still holding them.
async fn list(lines: Vec<Bytes>) -> (SharedInformer<CompactPod>, CancellationToken) {
    let api = FakeApi::default();
    api.watch_answer(Answer::Lines(lines));
    let informer = SharedInformer::<CompactPod>::new(
        "pods",
        vec![Scope::new(Api::all(api.client()), None)],
        ReflectorConfig::default(),
    );
    let seen = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(Notify::new());
    let (s, d) = (seen.clone(), done.clone());
    informer.add_event_handler(
        HandlerFns::new().on_add(move |_, _| {
            if s.fetch_add(1, Ordering::Relaxed) + 1 == PODS {
                d.notify_one();
            }
        }),
        None,
    );
    let cancel = CancellationToken::new();
    informer.run(cancel.clone());
    done.notified().await;
    (informer, cancel)
}
