//! Jobs and Job pods for this crate's tests (upstream's `newJob`, `buildPod` helpers, in builder form).

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{
    api::{
        batch::v1::{
            Job, JobSpec, JobStatus, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
            PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
        },
        core::v1::{
            ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus,
            PodTemplateSpec,
        },
    },
    apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference, Time},
    jiff::Timestamp,
};

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

/// A pod of the Job, with the tracking finalizer, Pending.
pub fn pod(name: &str) -> PodB {
    PodB(Pod {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
            labels: Some(BTreeMap::from([("app".to_owned(), "job".to_owned())])),
            finalizers: Some(vec![JOB_TRACKING_FINALIZER.into()]),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: "foobar".into(),
                uid: JOB_UID.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            creation_timestamp: Some(Time(ts(1))),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec::default()),
        status: Some(PodStatus {
            phase: Some("Pending".into()),
            ..PodStatus::default()
        }),
    })
}

#[derive(Debug, Clone)]
pub struct PodB(pub Pod);

impl PodB {
    fn st(&mut self) -> &mut PodStatus {
        self.0.status.get_or_insert_with(PodStatus::default)
    }
    #[must_use]
    pub fn phase(mut self, p: &str) -> Self {
        self.st().phase = Some(p.into());
        self
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
    #[must_use]
    pub fn ready(mut self) -> Self {
        self.st().phase = Some("Running".into());
        self.st()
            .conditions
            .get_or_insert_with(Vec::new)
            .push(PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..PodCondition::default()
            });
        self
    }
    #[must_use]
    pub fn condition(mut self, type_: &str) -> Self {
        self.st()
            .conditions
            .get_or_insert_with(Vec::new)
            .push(PodCondition {
                type_: type_.into(),
                status: "True".into(),
                ..PodCondition::default()
            });
        self
    }
    /// A terminated container `name` with `code`, finished at `at` seconds.
    #[must_use]
    pub fn exit(mut self, name: &str, code: i32, at: i64) -> Self {
        self.st()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(ContainerStatus {
                name: name.into(),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: code,
                        finished_at: Some(Time(ts(at))),
                        ..ContainerStateTerminated::default()
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            });
        self
    }
    #[must_use]
    pub fn init_exit(mut self, name: &str, code: i32) -> Self {
        self.st()
            .init_container_statuses
            .get_or_insert_with(Vec::new)
            .push(ContainerStatus {
                name: name.into(),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: code,
                        ..ContainerStateTerminated::default()
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            });
        self
    }
    /// A sidecar (init container with `restartPolicy: Always`), terminated at `finished` or running.
    #[must_use]
    pub fn sidecar(mut self, name: &str, finished: Option<i64>) -> Self {
        self.0
            .spec
            .get_or_insert_with(PodSpec::default)
            .init_containers
            .get_or_insert_with(Vec::new)
            .push(k8s_openapi::api::core::v1::Container {
                name: name.into(),
                restart_policy: Some("Always".into()),
                ..Default::default()
            });
        let terminated = finished.map(|at| ContainerStateTerminated {
            finished_at: Some(Time(ts(at))),
            ..ContainerStateTerminated::default()
        });
        self.st()
            .init_container_statuses
            .get_or_insert_with(Vec::new)
            .push(ContainerStatus {
                name: name.into(),
                state: Some(ContainerState {
                    terminated,
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            });
        self
    }
    #[must_use]
    pub fn restarts(mut self, n: i32) -> Self {
        self.st()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(ContainerStatus {
                name: "main".into(),
                restart_count: n,
                ..ContainerStatus::default()
            });
        self
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
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
    }
    #[must_use]
    pub fn no_finalizer(mut self) -> Self {
        self.0.metadata.finalizers = None;
        self
    }
    #[must_use]
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(ts(0)));
        self
    }
    #[must_use]
    pub fn orphan(mut self) -> Self {
        self.0.metadata.owner_references = None;
        self
    }
    #[must_use]
    pub fn created(mut self, at: i64) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(ts(at)));
        self
    }
    #[must_use]
    pub fn node(mut self, n: &str) -> Self {
        self.0.spec.get_or_insert_with(PodSpec::default).node_name = Some(n.into());
        self
    }
    /// The pod as the informer caches it (the projection of the full pod built here).
    pub fn build(self) -> Arc<controller::CompactPod> {
        Arc::new(self.0.into())
    }
}
