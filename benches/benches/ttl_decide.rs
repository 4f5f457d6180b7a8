//! Reconcile latency of the TTL-after-finished controller's decision: `ttlafterfinished::decide` on a
//! finished Job whose TTL is over (delete), one whose TTL is running (look again later) and one still
//! running (nothing), each with the conditions a Job that retried a while carries.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::{api::batch::v1::Job, jiff::Timestamp};
use serde_json::json;

const FINISHED: &str = "2026-01-01T00:00:00Z";

fn job(finished: bool) -> Job {
    let mut conditions =
        vec![json!({"type": "Suspended", "status": "False", "lastTransitionTime": FINISHED})];
    if finished {
        conditions
            .push(json!({"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": FINISHED}));
        conditions.push(json!({"type": "Complete", "status": "True", "lastTransitionTime": FINISHED}));
    }
    serde_json::from_value(json!({
        "metadata": {"name": "batch", "namespace": "ns", "uid": "job-uid"},
        "spec": {"ttlSecondsAfterFinished": 100, "template": {}},
        "status": {"conditions": conditions}
    }))
    .expect("a Job")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ttl_decide");
    let at = |s: &str| s.parse::<Timestamp>().expect("a time");
    let cases = [
        ("expired", job(true), at("2026-01-01T01:00:00Z")),
        ("waiting", job(true), at("2026-01-01T00:00:10Z")),
        ("running", job(false), at("2026-01-01T00:00:10Z")),
    ];
    for (name, j, now) in &cases {
        g.bench_with_input(BenchmarkId::from_parameter(name), &(j, now), |b, (j, now)| {
            b.iter(|| ttlafterfinished::decide(black_box(j), **now));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
