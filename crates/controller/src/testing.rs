//! Builders for pods in tests (this crate's and the controllers').

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus},
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
    /// Controlled by the owner with this UID (a ReplicaSet named `rs-<uid>` unless `kind` says otherwise).
    #[must_use]
    pub fn owner(mut self, kind: &str, name: &str, uid: &str) -> Self {
        self.0.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
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
