//! Builders for pods in tests (this crate's and the controllers').

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{
        Container, ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodCondition, PodSpec,
        PodStatus,
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time},
    jiff::Timestamp,
};

/// A pod `name` in namespace `ns`, uid `uid-<name>`, Pending, no node.
pub fn pod(name: &str) -> PodBuilder {
    PodBuilder(Pod {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
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
pub struct PodBuilder(Pod);

/// Goes on building a pod a test has changed by hand.
impl From<Pod> for PodBuilder {
    fn from(pod: Pod) -> Self {
        PodBuilder(pod)
    }
}

impl PodBuilder {
    #[must_use]
    pub fn phase(mut self, phase: &str) -> Self {
        self.status().phase = Some(phase.into());
        self
    }
    /// Running and Ready since `at`.
    #[must_use]
    pub fn ready_at(mut self, at: Timestamp) -> Self {
        self.status().phase = Some("Running".into());
        self.status().conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            last_transition_time: Some(Time(at)),
            ..PodCondition::default()
        }]);
        self
    }
    /// Running but not Ready.
    #[must_use]
    pub fn not_ready(mut self) -> Self {
        self.status().phase = Some("Running".into());
        self.status().conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            ..PodCondition::default()
        }]);
        self
    }
    #[must_use]
    pub fn node(mut self, node: &str) -> Self {
        self.0.spec.get_or_insert_with(PodSpec::default).node_name = Some(node.into());
        self
    }
    #[must_use]
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
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
    /// Controlled by the `apps/v1` owner `kind` `name` with this UID.
    #[must_use]
    pub fn owner(self, kind: &str, name: &str, uid: &str) -> Self {
        self.controlled_by("apps/v1", kind, name, uid)
    }
    /// Controlled by the owner `kind` `name` of `api_version` with this UID (its only owner reference).
    #[must_use]
    pub fn controlled_by(mut self, api_version: &str, kind: &str, name: &str, uid: &str) -> Self {
        self.0.metadata.owner_references = Some(vec![OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        self
    }
    /// No owner references at all (an orphan).
    #[must_use]
    pub fn no_owner(mut self) -> Self {
        self.0.metadata.owner_references = None;
        self
    }
    /// Adds `finalizer` to the pod's finalizers.
    #[must_use]
    pub fn finalizer(mut self, finalizer: &str) -> Self {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(finalizer.into());
        self
    }
    /// No finalizers at all.
    #[must_use]
    pub fn no_finalizers(mut self) -> Self {
        self.0.metadata.finalizers = None;
        self
    }
    #[must_use]
    pub fn created_at(mut self, at: Timestamp) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(at));
        self
    }
    #[must_use]
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        self
    }
    #[must_use]
    pub fn restarts(mut self, n: i32) -> Self {
        self.status().container_statuses = Some(vec![ContainerStatus {
            name: "c".into(),
            restart_count: n,
            ..ContainerStatus::default()
        }]);
        self
    }
    /// A sidecar (init container with `restartPolicy: Always`) named `sidecar` that restarted `n` times.
    #[must_use]
    pub fn sidecar_restarts(mut self, n: i32) -> Self {
        self.0.spec.get_or_insert_with(PodSpec::default).init_containers = Some(vec![Container {
            name: "sidecar".into(),
            restart_policy: Some("Always".into()),
            ..Container::default()
        }]);
        self.status().init_container_statuses = Some(vec![ContainerStatus {
            name: "sidecar".into(),
            restart_count: n,
            ..ContainerStatus::default()
        }]);
        self
    }
    /// Adds the condition `type_` with `status` (no transition time) to the pod's conditions.
    #[must_use]
    pub fn condition(mut self, type_: &str, status: &str) -> Self {
        self.status()
            .conditions
            .get_or_insert_with(Vec::new)
            .push(PodCondition {
                type_: type_.into(),
                status: status.into(),
                ..PodCondition::default()
            });
        self
    }
    /// Adds a status of container `name`, terminated with `exit_code` (at `finished_at` if given).
    #[must_use]
    pub fn terminated(mut self, name: &str, exit_code: i32, finished_at: Option<Timestamp>) -> Self {
        let status = terminated(name, exit_code, finished_at);
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }
    /// Adds a status of init container `name`, terminated with `exit_code` (at `finished_at` if given).
    #[must_use]
    pub fn init_terminated(mut self, name: &str, exit_code: i32, finished_at: Option<Timestamp>) -> Self {
        let status = terminated(name, exit_code, finished_at);
        self.status()
            .init_container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }
    /// Adds a status of container `name` that restarted `n` times.
    #[must_use]
    pub fn container_restarts(mut self, name: &str, n: i32) -> Self {
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(ContainerStatus {
                name: name.into(),
                restart_count: n,
                ..ContainerStatus::default()
            });
        self
    }
    /// Adds a sidecar (an init container with `restartPolicy: Always`) `name` and its status:
    /// terminated (exit code 0) at `finished_at`, or running without one.
    #[must_use]
    pub fn sidecar(mut self, name: &str, finished_at: Option<Timestamp>) -> Self {
        self.0
            .spec
            .get_or_insert_with(PodSpec::default)
            .init_containers
            .get_or_insert_with(Vec::new)
            .push(Container {
                name: name.into(),
                restart_policy: Some("Always".into()),
                ..Container::default()
            });
        let status = match finished_at {
            Some(at) => terminated(name, 0, Some(at)),
            None => ContainerStatus {
                name: name.into(),
                state: Some(ContainerState::default()),
                ..ContainerStatus::default()
            },
        };
        self.status()
            .init_container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }
    #[must_use]
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.into());
        self
    }
    /// The pod as the informer caches it (the projection of the full pod built here).
    pub fn build(self) -> crate::CompactPod {
        self.0.into()
    }

    /// The full pod, for tests of writes and of the projection itself.
    pub fn build_full(self) -> Pod {
        self.0
    }

    fn status(&mut self) -> &mut PodStatus {
        self.0.status.get_or_insert_with(PodStatus::default)
    }
}

/// A container status in the terminated state.
fn terminated(name: &str, exit_code: i32, finished_at: Option<Timestamp>) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code,
                finished_at: finished_at.map(Time),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_and_finalizers_are_set_and_cleared() {
        let p = pod("p")
            .controlled_by("batch/v1", "Job", "j", "uid-j")
            .finalizer("a")
            .finalizer("b")
            .build_full();
        let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.uid.as_str()
            ),
            ("batch/v1", "Job", "uid-j")
        );
        assert_eq!(p.metadata.finalizers, Some(vec!["a".into(), "b".into()]));
        let p = pod("p")
            .owner("ReplicaSet", "rs", "u")
            .finalizer("a")
            .build_full();
        let p = PodBuilder::from(p).no_owner().no_finalizers().build_full();
        assert_eq!((p.metadata.owner_references, p.metadata.finalizers), (None, None));
    }

    #[test]
    fn conditions_and_container_statuses_accumulate() {
        let at = Timestamp::from_second(10).unwrap();
        let p = pod("p")
            .condition("Ready", "True")
            .condition("DisruptionTarget", "True")
            .terminated("main", 3, Some(at))
            .container_restarts("main", 2)
            .init_terminated("init", 1, None)
            .sidecar("log", None)
            .sidecar("proxy", Some(at))
            .build_full();
        let status = p.status.unwrap();
        let types: Vec<_> = status.conditions.unwrap().into_iter().map(|c| c.type_).collect();
        assert_eq!(types, ["Ready", "DisruptionTarget"]);
        let containers = status.container_statuses.unwrap();
        let done = containers[0].state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!((done.exit_code, done.finished_at.clone()), (3, Some(Time(at))));
        assert_eq!(
            (containers[1].restart_count, containers[1].state.clone()),
            (2, None)
        );
        let init = status.init_container_statuses.unwrap();
        let names: Vec<_> = init.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["init", "log", "proxy"]);
        assert_eq!(
            init[1].state,
            Some(ContainerState::default()),
            "a running sidecar"
        );
        let sidecar = init[2].state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(
            (sidecar.exit_code, sidecar.finished_at.clone()),
            (0, Some(Time(at)))
        );
        let spec = p.spec.unwrap().init_containers.unwrap();
        assert!(spec.iter().all(|c| c.restart_policy.as_deref() == Some("Always")));
        assert_eq!(spec.len(), 2, "only sidecars are declared");
    }
}
