//! Heap held by one event recorder's correlator as its caches fill and once they are full, and the CPU
//! time it takes to correlate an event. Not a timing benchmark: it prints its figures (run with
//! `cargo bench -p kcm-rs-benches --bench event_memory`).
//!
//! The events are a controller's "Created pod: <name>" about objects of one namespace, fed through
//! the correlator as the writer feeds it.

use controller::events::EventRecord;
use controller::events::{CACHE_ENTRIES, Correlator};
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::time::Instant;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// (objects, events about each): a busy ReplicaSet controller (200 ReplicaSets creating 50 pods each:
/// the spam filter passes 25 of each), then a long-running Job controller (5,000 Jobs with three events
/// each: every cache at its size).
const LOADS: [(usize, usize); 2] = [(200, 50), (5000, 3)];
const NAMESPACE: &str = "bench-deploy-kcm-rs-1764040000";

fn event(owner: usize, pod: usize) -> EventRecord {
    let name = format!("web-{owner:04}-78bb96cb8d");
    EventRecord {
        object: ObjectReference {
            kind: Some("ReplicaSet".into()),
            namespace: Some(NAMESPACE.into()),
            uid: Some(format!("4f6b2a1e-0c3d-4e5f-8a9b-{owner:012}")),
            api_version: Some("apps/v1".into()),
            name: Some(name.clone()),
            resource_version: Some("123456".into()),
            ..ObjectReference::default()
        },
        type_: "Normal",
        reason: "SuccessfulCreate".into(),
        message: format!("Created pod: {name}-{pod:05}"),
    }
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    for (owners, each) in LOADS {
        let events: Vec<EventRecord> = (0..each)
            .flat_map(|p| (0..owners).map(move |o| event(o, p)))
            .collect();
        let before = dhat::HeapStats::get().curr_bytes;
        let mut c = Correlator::default();
        let now = Instant::now();
        let started = cpu_time::ProcessTime::now();
        for (i, ev) in events.iter().enumerate() {
            std::hint::black_box(c.correlate(ev, now, i as u64, i as u64));
        }
        let elapsed = started.elapsed();
        let after = dhat::HeapStats::get().curr_bytes;
        println!(
            "{} events about {owners} objects (caches of {CACHE_ENTRIES}): {} KiB of heap; {:.1} µs of CPU per event (through dhat's allocator)",
            events.len(),
            (after - before) / 1024,
            elapsed.as_secs_f64() * 1e6 / events.len() as f64
        );
        drop(c);
    }
}
