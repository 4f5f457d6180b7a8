//! Jobs and Job pods for this crate's tests (upstream's `newJob`, `buildPod` helpers, in builder form).

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{
    api::{
        batch::v1::{
            Job, JobSpec, JobStatus, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
            PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
        },
        core::v1::{Pod, PodSpec, PodTemplateSpec},
    },
    apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta},
    jiff::Timestamp,
};
use testing::PodBuilder;

use crate::spec::{COMPLETION_INDEX_ANNOTATION, INDEX_FAILURE_COUNT_ANNOTATION, JOB_TRACKING_FINALIZER};

pub const JOB_UID: &str = "job-uid";

pub fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

/// Job `foobar` in `ns` with the given parallelism and completions, backoffLimit 6.
pub fn job(parallelism: i32, completions: Option<i32>) -> Job {
    let labels = BTreeMap::from([("app".to_owned(), "job".to_owned())]);
    Job {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("foobar".into()),
            uid: Some(JOB_UID.into()),
            resource_version: Some("1".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            parallelism: Some(parallelism),
            completions,
            backoff_limit: Some(6),
            selector: Some(LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    containers: vec![k8s_openapi::api::core::v1::Container {
                        name: "main".into(),
                        ..Default::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: Some(JobStatus::default()),
    }
}

pub fn indexed(mut j: Job) -> Job {
    j.spec.as_mut().unwrap().completion_mode = Some("Indexed".into());
    j
}

pub fn spec(j: &mut Job) -> &mut JobSpec {
    j.spec.as_mut().unwrap()
}

pub fn status(j: &mut Job) -> &mut JobStatus {
    j.status.get_or_insert_with(JobStatus::default)
}

/// A rule matching exit codes `In` `values` with `action`.
pub fn exit_code_rule(
    action: &str,
    op: &str,
    values: Vec<i32>,
    container: Option<&str>,
) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action: action.into(),
        on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
            container_name: container.map(Into::into),
            operator: op.into(),
            values,
        }),
        on_pod_conditions: None,
    }
}

pub fn condition_rule(action: &str, type_: &str) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action: action.into(),
        on_exit_codes: None,
        on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
            type_: type_.into(),
            status: Some("True".into()),
        }]),
    }
}

pub fn policy(rules: Vec<PodFailurePolicyRule>) -> Option<PodFailurePolicy> {
    Some(PodFailurePolicy { rules })
}

/// A pod of the Job, with the tracking finalizer, Pending, created at 1 s.
pub fn pod(name: &str) -> PodB {
    let b = testing::pod(name)
        .label("app", "job")
        .finalizer(JOB_TRACKING_FINALIZER)
        .controlled_by("batch/v1", "Job", "foobar", JOB_UID)
        .created_at(ts(1));
    PodB(b.build_full())
}

/// The shared [`PodBuilder`] with the Job's vocabulary (times in seconds, index annotations) and a
/// build into the `Arc` the caches hand out. The pod is open, for what no method sets.
#[derive(Debug, Clone)]
pub struct PodB(pub Pod);

impl PodB {
    fn with(self, f: impl FnOnce(PodBuilder) -> PodBuilder) -> Self {
        PodB(f(PodBuilder::from(self.0)).build_full())
    }
    #[must_use]
    pub fn phase(self, p: &str) -> Self {
        self.with(|b| b.phase(p))
    }
    #[must_use]
    pub fn running(self) -> Self {
        self.phase("Running")
    }
    #[must_use]
    pub fn succeeded(self) -> Self {
        self.phase("Succeeded")
    }
    #[must_use]
    pub fn failed(self) -> Self {
        self.phase("Failed")
    }
    /// Running, with a `Ready` condition added.
    #[must_use]
    pub fn ready(self) -> Self {
        self.with(|b| b.phase("Running").condition("Ready", "True"))
    }
    #[must_use]
    pub fn condition(self, type_: &str) -> Self {
        self.with(|b| b.condition(type_, "True"))
    }
    /// A terminated container `name` with `code`, finished at `at` seconds.
    #[must_use]
    pub fn exit(self, name: &str, code: i32, at: i64) -> Self {
        self.with(|b| b.terminated(name, code, Some(ts(at))))
    }
    #[must_use]
    pub fn init_exit(self, name: &str, code: i32) -> Self {
        self.with(|b| b.init_terminated(name, code, None))
    }
    /// A sidecar (init container with `restartPolicy: Always`), terminated at `finished` or running.
    #[must_use]
    pub fn sidecar(self, name: &str, finished: Option<i64>) -> Self {
        self.with(|b| b.sidecar(name, finished.map(ts)))
    }
    /// The `main` container restarted `n` times.
    #[must_use]
    pub fn restarts(self, n: i32) -> Self {
        self.with(|b| b.container_restarts("main", n))
    }
    #[must_use]
    pub fn index(self, i: i32) -> Self {
        self.annotation(COMPLETION_INDEX_ANNOTATION, &i.to_string())
    }
    #[must_use]
    pub fn failure_count(self, n: i32) -> Self {
        self.annotation(INDEX_FAILURE_COUNT_ANNOTATION, &n.to_string())
    }
    #[must_use]
    pub fn annotation(self, k: &str, v: &str) -> Self {
        self.with(|b| b.annotation(k, v))
    }
    #[must_use]
    pub fn no_finalizer(self) -> Self {
        self.with(PodBuilder::no_finalizers)
    }
    /// Being deleted since the epoch.
    #[must_use]
    pub fn deleting(self) -> Self {
        self.with(PodBuilder::deleting)
    }
    #[must_use]
    pub fn orphan(self) -> Self {
        self.with(PodBuilder::no_owner)
    }
    #[must_use]
    pub fn created(self, at: i64) -> Self {
        self.with(|b| b.created_at(ts(at)))
    }
    #[must_use]
    pub fn node(self, n: &str) -> Self {
        self.with(|b| b.node(n))
    }
    /// The pod as the informer caches it (the projection of the full pod built here).
    pub fn build(self) -> Arc<controller::CompactPod> {
        Arc::new(self.0.into())
    }
}
