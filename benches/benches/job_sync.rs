//! Reconcile latency of the Job sync's decision: `job::plan_sync` (claims, counting, the finishing
//! checks, manageJob's choice and the tracking half) over what the listers hold, for 10 to 10,000
//! pods, NonIndexed and Indexed, with and without a podFailurePolicy.
//!
//! The Job is mid-run: of its pods 60 % run (half of them ready), 30 % succeeded and 10 % failed, all
//! still carrying the tracking finalizer, so each sync counts them (at most 500) and plans the
//! creations that replace them. Indexed Jobs have 20,000 completions and a `completedIndexes` of every
//! other index above the pods' (5,000 to 10,000 intervals to parse, merge and format: the index
//! strings of 10,000 completions).

use controller::compact_pod::{ContainerState, ContainerStateTerminated, ContainerStatus, Pod};
use std::{collections::BTreeMap, hint::black_box, sync::Arc};

use controller::testing::pod;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use job::{BackoffRecord, Decision, JOB_TRACKING_FINALIZER, JobDelays, SyncInput, plan_sync};
use k8s_openapi::{
    api::{
        batch::v1::{
            Job, JobSpec, JobStatus, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
            PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
        },
        core::v1::PodTemplateSpec,
    },
    apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference, Time},
    jiff::Timestamp,
};

/// Completions of the Indexed Jobs.
const INDEXED_COMPLETIONS: i32 = 20_000;

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "batch".to_owned())])
}

fn job(n: usize, indexed: bool, policy: bool) -> Job {
    let n = i32::try_from(n).unwrap();
    let completed = indexed.then(|| {
        (n..INDEXED_COMPLETIONS)
            .step_by(2)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    });
    Job {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("batch".into()),
            uid: Some("job-uid".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            parallelism: Some(n),
            completions: Some(if indexed { INDEXED_COMPLETIONS } else { 4 * n }),
            backoff_limit: Some(i32::MAX),
            completion_mode: Some(if indexed { "Indexed" } else { "NonIndexed" }.into()),
            pod_failure_policy: policy.then(failure_policy),
            selector: Some(LabelSelector {
                match_labels: Some(labels()),
                ..LabelSelector::default()
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels()),
                    ..ObjectMeta::default()
                }),
                spec: None,
            },
            ..JobSpec::default()
        }),
        status: Some(JobStatus {
            start_time: Some(Time(Timestamp::from_second(1_000_000).unwrap())),
            succeeded: completed.as_ref().map(|_| (INDEXED_COMPLETIONS - n) / 2),
            completed_indexes: completed,
            ..JobStatus::default()
        }),
    }
}

/// Three rules, none of them matching the pods' exit code 1 first: each failed pod is checked
/// against all of them.
fn failure_policy() -> PodFailurePolicy {
    let codes = |action: &str, op: &str, values: Vec<i32>| PodFailurePolicyRule {
        action: action.into(),
        on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
            container_name: None,
            operator: op.into(),
            values,
        }),
        on_pod_conditions: None,
    };
    PodFailurePolicy {
        rules: vec![
            codes("FailJob", "In", vec![42]),
            PodFailurePolicyRule {
                action: "Ignore".into(),
                on_exit_codes: None,
                on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "DisruptionTarget".into(),
                    status: Some("True".into()),
                }]),
            },
            codes("Count", "In", vec![1, 2, 3]),
        ],
    }
}

/// `n` pods of the Job: 60 % running (every other one ready), 30 % succeeded, 10 % failed with exit
/// code 1 long ago (no re-creation backoff left).
fn pods(n: usize, indexed: bool) -> Vec<Arc<Pod>> {
    let finished = Timestamp::from_second(1_000_100).unwrap();
    (0..n)
        .map(|i| {
            let b = pod(&format!("batch-{i:05}"))
                .uid(&format!("uid-{i:08}"))
                .label("app", "batch")
                .node(&format!("node-{}", i % 50))
                .created_at(Timestamp::from_second(1_000_000 + (i as i64 % 100)).unwrap());
            let b = if indexed {
                b.annotation("batch.kubernetes.io/job-completion-index", &i.to_string())
            } else {
                b
            };
            let b = match i % 10 {
                0..=5 if i % 2 == 0 => b.ready_at(finished),
                0..=5 => b.not_ready(),
                6..=8 => b.phase("Succeeded"),
                _ => b.phase("Failed"),
            };
            let mut p = b.build();
            p.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: "batch".into(),
                uid: "job-uid".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]);
            p.metadata.finalizers = Some(vec![JOB_TRACKING_FINALIZER.into()]);
            if i % 10 >= 6 {
                let code = if i % 10 == 9 { 1 } else { 0 };
                p.status.as_mut().unwrap().container_statuses = Some(vec![ContainerStatus {
                    name: "main".into(),
                    state: Some(ContainerState {
                        terminated: Some(ContainerStateTerminated {
                            exit_code: code,
                            finished_at: Some(Time(finished)),
                        }),
                    }),
                    ..ContainerStatus::default()
                }]);
            }
            Arc::new(p)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let now = Timestamp::from_second(1_200_000).unwrap();
    let none = std::collections::HashSet::new();
    let mut g = c.benchmark_group("job_plan");
    g.sample_size(20);
    for n in [10usize, 1_000, 10_000] {
        for (mode, indexed) in [("NonIndexed", false), ("Indexed", true)] {
            for (variant, policy) in [("", false), ("+podFailurePolicy", true)] {
                let j = job(n, indexed, policy);
                let candidates = pods(n, indexed);
                let id = BenchmarkId::new(format!("{mode}{variant}"), n);
                g.bench_with_input(id, &n, |b, _| {
                    b.iter(|| {
                        let input = SyncInput {
                            job: &j,
                            candidates: &candidates,
                            expectations_satisfied: true,
                            expected_rm_finalizers: &none,
                            backoff: BackoffRecord::default(),
                            now,
                            suspend_clears_start_time: true,
                            delays: JobDelays::UPSTREAM,
                        };
                        let plan = plan_sync(&input).unwrap();
                        assert!(matches!(plan, Decision::Sync(_)));
                        black_box(plan)
                    });
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
