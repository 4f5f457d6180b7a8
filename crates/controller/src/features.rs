//! `--feature-gates`: the Kubernetes feature gates that the workload controllers read, and the one
//! their endpoints' server reads, with kube-controller-manager's syntax, defaults and rules.
//!
//! Stages, defaults and locks are those of Kubernetes v1.36 (`pkg/features/kube_features.go` of
//! k8s.io/kubernetes v1.36.3, `features/known_features.go` of client-go v0.36.3, matching the v1.36
//! rows of the feature-gates reference page). The rules are component-base's `featuregate`: an unknown
//! gate is an error, a GA gate locked to its default cannot be changed, `AllAlpha`/`AllBeta` set every
//! alpha/beta gate not named explicitly, and an enabled gate whose dependency is disabled is an error.
//! kcm-rs knows only these gates: a gate KCM knows for its other controllers is unknown here.

use thiserror::Error;

/// A gate's maturity at v1.36 (component-base `prerelease`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
}

/// A feature gate kcm-rs knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    AtomicFifo,
    DeploymentReplicaSetTerminatingReplicas,
    GenericWorkload,
    JobBackoffLimitPerIndex,
    JobManagedBy,
    JobPodReplacementPolicy,
    JobSuccessPolicy,
    LogarithmicScaleDown,
    MutableSchedulingDirectivesForSuspendedJobs,
    PodDeletionCost,
    SidecarContainers,
    StaleControllerConsistencyJob,
    StaleControllerConsistencyReplicaSet,
    UnauthenticatedHttp2DosMitigation,
    WorkloadWithJob,
}

/// What component-base knows of a gate at v1.36.
#[derive(Debug, Clone, Copy)]
pub struct GateSpec {
    pub gate: Gate,
    /// The name on the command line.
    pub name: &'static str,
    pub stage: Stage,
    pub default: bool,
    /// GA gates are locked to their default until upstream removes them.
    pub locked: bool,
    /// Gates that must be enabled for this one to be (upstream `defaultKubernetesFeatureGateDependencies`).
    pub depends_on: &'static [Gate],
}

const fn spec(gate: Gate, name: &'static str, stage: Stage, default: bool) -> GateSpec {
    GateSpec {
        gate,
        name,
        stage,
        default,
        locked: matches!(stage, Stage::Ga),
        depends_on: &[],
    }
}

/// Every gate, alphabetical, with its v1.36 spec (see the module docs for the sources). Each
/// `FeatureGates` field documents what reads the gate.
pub const GATES: &[GateSpec] = &[
    spec(Gate::AtomicFifo, "AtomicFIFO", Stage::Beta, true),
    spec(
        Gate::DeploymentReplicaSetTerminatingReplicas,
        "DeploymentReplicaSetTerminatingReplicas",
        Stage::Beta,
        true,
    ),
    spec(Gate::GenericWorkload, "GenericWorkload", Stage::Alpha, false),
    spec(
        Gate::JobBackoffLimitPerIndex,
        "JobBackoffLimitPerIndex",
        Stage::Ga,
        true,
    ),
    spec(Gate::JobManagedBy, "JobManagedBy", Stage::Ga, true),
    spec(
        Gate::JobPodReplacementPolicy,
        "JobPodReplacementPolicy",
        Stage::Ga,
        true,
    ),
    spec(Gate::JobSuccessPolicy, "JobSuccessPolicy", Stage::Ga, true),
    spec(
        Gate::LogarithmicScaleDown,
        "LogarithmicScaleDown",
        Stage::Ga,
        true,
    ),
    spec(
        Gate::MutableSchedulingDirectivesForSuspendedJobs,
        "MutableSchedulingDirectivesForSuspendedJobs",
        Stage::Beta,
        true,
    ),
    spec(Gate::PodDeletionCost, "PodDeletionCost", Stage::Beta, true),
    spec(Gate::SidecarContainers, "SidecarContainers", Stage::Ga, true),
    GateSpec {
        depends_on: &[Gate::AtomicFifo],
        ..spec(
            Gate::StaleControllerConsistencyJob,
            "StaleControllerConsistencyJob",
            Stage::Beta,
            true,
        )
    },
    GateSpec {
        depends_on: &[Gate::AtomicFifo],
        ..spec(
            Gate::StaleControllerConsistencyReplicaSet,
            "StaleControllerConsistencyReplicaSet",
            Stage::Beta,
            true,
        )
    },
    spec(
        Gate::UnauthenticatedHttp2DosMitigation,
        "UnauthenticatedHTTP2DOSMitigation",
        Stage::Beta,
        true,
    ),
    GateSpec {
        depends_on: &[Gate::GenericWorkload],
        ..spec(Gate::WorkloadWithJob, "WorkloadWithJob", Stage::Alpha, false)
    },
];

/// component-base's switch for every alpha gate not named explicitly.
pub const ALL_ALPHA: &str = "AllAlpha";
/// component-base's switch for every beta gate not named explicitly.
pub const ALL_BETA: &str = "AllBeta";

impl Gate {
    /// `GATES` lists the gates in declaration order (a test checks it).
    pub fn spec(self) -> &'static GateSpec {
        &GATES[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

/// The state of every gate. `Default` is Kubernetes v1.36's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGates {
    /// client-go's informers replace their store atomically on a relist (beta in 1.36, on). kcm-rs's
    /// informer does so whatever the gate; it is here because the staleness gates depend on it.
    pub atomic_fifo: bool,
    /// `status.terminatingReplicas` of ReplicaSets and Deployments (alpha 1.33, beta 1.35, on).
    pub deployment_replica_set_terminating_replicas: bool,
    /// KCM's Workload API controllers (alpha 1.35, off); here only as `WorkloadWithJob`'s dependency.
    pub generic_workload: bool,
    /// Job `backoffLimitPerIndex` (GA 1.33, locked on).
    pub job_backoff_limit_per_index: bool,
    /// Job `managedBy` (GA 1.35, locked on).
    pub job_managed_by: bool,
    /// Job `podReplacementPolicy` and `status.terminating` (GA 1.34, locked on).
    pub job_pod_replacement_policy: bool,
    /// Job `successPolicy` (GA 1.33, locked on).
    pub job_success_policy: bool,
    /// The scale-down ranking compares ages in log2 buckets (GA 1.31, locked on).
    pub logarithmic_scale_down: bool,
    /// A Job suspended again loses its `status.startTime` (beta 1.36, on).
    pub mutable_scheduling_directives_for_suspended_jobs: bool,
    /// The scale-down ranking honours `controller.kubernetes.io/pod-deletion-cost` (beta 1.22, on).
    pub pod_deletion_cost: bool,
    /// Job pod failure times include restartable init (sidecar) containers (GA 1.33, locked on).
    pub sidecar_containers: bool,
    /// The Job controller waits until its caches hold its own writes (beta 1.36, on).
    pub stale_controller_consistency_job: bool,
    /// The ReplicaSet controller waits until its caches hold its own writes (beta 1.36, on).
    pub stale_controller_consistency_replica_set: bool,
    /// The endpoints' server closes an HTTP/2 connection after a request it could not authenticate
    /// (k8s.io/apiserver's gate, beta 1.29, on; read by secure serving, not by a controller).
    pub unauthenticated_http2_dos_mitigation: bool,
    /// The Job controller creates Workload and PodGroup objects (alpha 1.36, off). kcm-rs does not
    /// implement it: the binary refuses to start its Job controller with the gate on.
    pub workload_with_job: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        let mut gates = Self::all(false);
        for s in GATES {
            *gates.slot(s.gate) = s.default;
        }
        gates
    }
}

/// One `Name=value` entry of `--feature-gates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub key: Key,
    pub value: bool,
}

/// What a setting names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Gate(Gate),
    AllAlpha,
    AllBeta,
}

/// A `--feature-gates` value KCM would refuse; the messages are component-base's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FeatureGateError {
    #[error("unrecognized feature gate: {name} (kcm-rs knows {known})")]
    Unknown { name: String, known: String },
    #[error("missing bool value for {name}")]
    MissingValue { name: String },
    #[error("invalid value of {name}={value}: not a bool (true, false, 1, 0, t, f)")]
    InvalidValue { name: String, value: String },
    #[error("cannot set feature gate {name} to {value}, feature is locked to {locked}")]
    Locked {
        name: &'static str,
        value: bool,
        locked: bool,
    },
    #[error("{name} is enabled, but depends on features that are disabled: [{}]", disabled.join(" "))]
    DependencyDisabled {
        name: &'static str,
        disabled: Vec<&'static str>,
    },
}

impl Setting {
    /// Parses one `Name=value` entry (component-base `Set`: names and values are trimmed; values
    /// are Go's `strconv.ParseBool`). Refuses unknown gates and changes to locked ones.
    pub fn parse(entry: &str) -> Result<Self, FeatureGateError> {
        let (name, value) = match entry.split_once('=') {
            Some((n, v)) => (n.trim(), v.trim()),
            None => {
                return Err(FeatureGateError::MissingValue {
                    name: entry.trim().to_owned(),
                });
            }
        };
        let value = parse_go_bool(value).ok_or_else(|| FeatureGateError::InvalidValue {
            name: name.to_owned(),
            value: value.to_owned(),
        })?;
        let key = match name {
            ALL_ALPHA => Key::AllAlpha,
            ALL_BETA => Key::AllBeta,
            _ => {
                let spec =
                    GATES
                        .iter()
                        .find(|s| s.name == name)
                        .ok_or_else(|| FeatureGateError::Unknown {
                            name: name.to_owned(),
                            known: GATES.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
                        })?;
                if spec.locked && value != spec.default {
                    return Err(FeatureGateError::Locked {
                        name: spec.name,
                        value,
                        locked: spec.default,
                    });
                }
                Key::Gate(spec.gate)
            }
        };
        Ok(Self { key, value })
    }
}

impl FeatureGates {
    /// Parses a whole `A=true,B=false` list (empty entries are skipped, as KCM does).
    pub fn parse(list: &str) -> Result<Self, FeatureGateError> {
        let settings = list
            .split(',')
            .filter(|e| !e.trim().is_empty())
            .map(Setting::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_settings(&settings)
    }

    /// The defaults with `settings` applied: for the same gate the last setting wins; `AllAlpha` and
    /// `AllBeta` set the gates of their stage that no setting names; then the dependencies are checked.
    pub fn from_settings(settings: &[Setting]) -> Result<Self, FeatureGateError> {
        let mut gates = Self::default();
        let named = |gate: Gate| settings.iter().any(|s| s.key == Key::Gate(gate));
        for setting in settings {
            let stage = match setting.key {
                Key::Gate(gate) => {
                    *gates.slot(gate) = setting.value;
                    continue;
                }
                Key::AllAlpha => Stage::Alpha,
                Key::AllBeta => Stage::Beta,
            };
            for s in GATES.iter().filter(|s| s.stage == stage && !named(s.gate)) {
                *gates.slot(s.gate) = setting.value;
            }
        }
        for s in GATES.iter().filter(|s| gates.enabled(s.gate)) {
            let disabled: Vec<_> = s
                .depends_on
                .iter()
                .filter(|d| !gates.enabled(**d))
                .map(|d| d.name())
                .collect();
            if !disabled.is_empty() {
                return Err(FeatureGateError::DependencyDisabled {
                    name: s.name,
                    disabled,
                });
            }
        }
        Ok(gates)
    }

    pub fn enabled(&self, gate: Gate) -> bool {
        // `slot` is the one gate-to-field mapping; the struct is Copy, so read through a copy.
        let mut copy = *self;
        *copy.slot(gate)
    }

    fn all(on: bool) -> Self {
        Self {
            atomic_fifo: on,
            deployment_replica_set_terminating_replicas: on,
            generic_workload: on,
            job_backoff_limit_per_index: on,
            job_managed_by: on,
            job_pod_replacement_policy: on,
            job_success_policy: on,
            logarithmic_scale_down: on,
            mutable_scheduling_directives_for_suspended_jobs: on,
            pod_deletion_cost: on,
            sidecar_containers: on,
            stale_controller_consistency_job: on,
            stale_controller_consistency_replica_set: on,
            unauthenticated_http2_dos_mitigation: on,
            workload_with_job: on,
        }
    }

    fn slot(&mut self, gate: Gate) -> &mut bool {
        match gate {
            Gate::AtomicFifo => &mut self.atomic_fifo,
            Gate::DeploymentReplicaSetTerminatingReplicas => {
                &mut self.deployment_replica_set_terminating_replicas
            }
            Gate::GenericWorkload => &mut self.generic_workload,
            Gate::JobBackoffLimitPerIndex => &mut self.job_backoff_limit_per_index,
            Gate::JobManagedBy => &mut self.job_managed_by,
            Gate::JobPodReplacementPolicy => &mut self.job_pod_replacement_policy,
            Gate::JobSuccessPolicy => &mut self.job_success_policy,
            Gate::LogarithmicScaleDown => &mut self.logarithmic_scale_down,
            Gate::MutableSchedulingDirectivesForSuspendedJobs => {
                &mut self.mutable_scheduling_directives_for_suspended_jobs
            }
            Gate::PodDeletionCost => &mut self.pod_deletion_cost,
            Gate::SidecarContainers => &mut self.sidecar_containers,
            Gate::StaleControllerConsistencyJob => &mut self.stale_controller_consistency_job,
            Gate::StaleControllerConsistencyReplicaSet => &mut self.stale_controller_consistency_replica_set,
            Gate::UnauthenticatedHttp2DosMitigation => &mut self.unauthenticated_http2_dos_mitigation,
            Gate::WorkloadWithJob => &mut self.workload_with_job,
        }
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
#[path = "features_tests.rs"]
mod tests;
