//! Deployments and ReplicaSets for this crate's tests (upstream's `newDeployment`, `rs`,
//! `newRSWithStatus` helpers, in builder form).

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{
    api::{
        apps::v1::{
            Deployment, DeploymentSpec, DeploymentStatus, DeploymentStrategy, ReplicaSet, ReplicaSetSpec,
            ReplicaSetStatus, RollingUpdateDeployment,
        },
        core::v1::{Container, PodSpec, PodTemplateSpec},
    },
    apimachinery::pkg::{
        apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference, Time},
        util::intstr::IntOrString,
    },
    jiff::Timestamp,
};

use crate::{annotations, hash::POD_TEMPLATE_HASH_LABEL};

pub const D_UID: &str = "d-uid";

pub fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

pub fn int(i: i32) -> IntOrString {
    IntOrString::Int(i)
}

pub fn pct(s: &str) -> IntOrString {
    IntOrString::String(s.into())
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("foo".to_owned(), "bar".to_owned())])
}

fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

/// Deployment `name` in `ns` selecting `foo=bar`, image `foo/bar`, generation 1, RollingUpdate with
/// maxSurge 0 and maxUnavailable 0 (so one pod may be unavailable), no progress deadline.
pub fn deployment(name: &str, replicas: i32) -> DeploymentBuilder {
    DeploymentBuilder(Deployment {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(D_UID.into()),
            generation: Some(1),
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels()),
                ..LabelSelector::default()
            },
            template: template("foo/bar"),
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(int(0)),
                    max_unavailable: Some(int(0)),
                }),
            }),
            ..DeploymentSpec::default()
        }),
        status: None,
    })
}

#[derive(Debug, Clone)]
pub struct DeploymentBuilder(pub Deployment);

impl DeploymentBuilder {
    fn spec(&mut self) -> &mut DeploymentSpec {
        self.0.spec.get_or_insert_with(DeploymentSpec::default)
    }
    #[must_use]
    pub fn rolling(mut self, surge: IntOrString, unavailable: IntOrString) -> Self {
        self.spec().strategy = Some(DeploymentStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: Some(surge),
                max_unavailable: Some(unavailable),
            }),
        });
        self
    }
    #[must_use]
    pub fn recreate(mut self) -> Self {
        self.spec().strategy = Some(DeploymentStrategy {
            type_: Some("Recreate".into()),
            rolling_update: None,
        });
        self
    }
    #[must_use]
    pub fn image(mut self, image: &str) -> Self {
        self.spec().template = template(image);
        self
    }
    #[must_use]
    pub fn paused(mut self) -> Self {
        self.spec().paused = Some(true);
        self
    }
    #[must_use]
    pub fn deadline(mut self, secs: i32) -> Self {
        self.spec().progress_deadline_seconds = Some(secs);
        self
    }
    #[must_use]
    pub fn history(mut self, limit: i32) -> Self {
        self.spec().revision_history_limit = Some(limit);
        self
    }
    #[must_use]
    pub fn min_ready(mut self, secs: i32) -> Self {
        self.spec().min_ready_seconds = Some(secs);
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
    #[must_use]
    pub fn status(mut self, status: DeploymentStatus) -> Self {
        self.0.status = Some(status);
        self
    }
    #[must_use]
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        self
    }
    pub fn build(self) -> Deployment {
        self.0
    }
}

/// ReplicaSet `name` controlled by the fixture Deployment, with `replicas` (spec and status, all
/// available), created at `created` seconds, with the Deployment fixture's template (image
/// `foo/bar`) and hash label `name`.
pub fn rs(name: &str, replicas: i32, created: i64) -> RsBuilder {
    let mut t = template("foo/bar");
    let hash = name.to_owned();
    if let Some(m) = t.metadata.as_mut() {
        m.labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
    }
    let mut selector = labels();
    selector.insert(POD_TEMPLATE_HASH_LABEL.into(), hash);
    RsBuilder(ReplicaSet {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            labels: t.metadata.as_ref().and_then(|m| m.labels.clone()),
            creation_timestamp: Some(Time(ts(created))),
            generation: Some(1),
            resource_version: Some("1".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "foo".into(),
                uid: D_UID.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(selector),
                ..LabelSelector::default()
            },
            template: Some(t),
            ..ReplicaSetSpec::default()
        }),
        status: Some(ReplicaSetStatus {
            replicas,
            ready_replicas: Some(replicas),
            available_replicas: Some(replicas),
            observed_generation: Some(1),
            terminating_replicas: Some(0),
            ..ReplicaSetStatus::default()
        }),
    })
}

#[derive(Debug, Clone)]
pub struct RsBuilder(pub ReplicaSet);

impl RsBuilder {
    fn status(&mut self) -> &mut ReplicaSetStatus {
        self.0.status.get_or_insert_with(ReplicaSetStatus::default)
    }
    /// A template with another image: an old ReplicaSet of the fixture Deployment.
    #[must_use]
    pub fn image(mut self, image: &str) -> Self {
        if let Some(c) = self
            .0
            .spec
            .as_mut()
            .and_then(|s| s.template.as_mut())
            .and_then(|t| t.spec.as_mut())
            .and_then(|s| s.containers.first_mut())
        {
            c.image = Some(image.into());
        }
        self
    }
    /// Pods that exist (status.replicas), of which `available` are available (and ready).
    #[must_use]
    pub fn pods(mut self, replicas: i32, available: i32) -> Self {
        let s = self.status();
        s.replicas = replicas;
        s.ready_replicas = Some(available);
        s.available_replicas = Some(available);
        self
    }
    #[must_use]
    pub fn available(mut self, available: i32) -> Self {
        let s = self.status();
        s.ready_replicas = Some(available);
        s.available_replicas = Some(available);
        self
    }
    #[must_use]
    pub fn revision(self, revision: &str) -> Self {
        self.annotation(annotations::REVISION, revision)
    }
    /// The desired-replicas and max-replicas annotations a scale to `desired` with `surge` writes.
    #[must_use]
    pub fn desired(self, desired: i32, surge: i32) -> Self {
        self.annotation(annotations::DESIRED_REPLICAS, &desired.to_string())
            .annotation(annotations::MAX_REPLICAS, &(desired + surge).to_string())
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
    pub fn orphan(mut self) -> Self {
        self.0.metadata.owner_references = None;
        self
    }
    #[must_use]
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        self
    }
    #[must_use]
    pub fn generation(mut self, generation: i64, observed: i64) -> Self {
        self.0.metadata.generation = Some(generation);
        self.status().observed_generation = Some(observed);
        self
    }
    #[must_use]
    pub fn terminating(mut self, n: Option<i32>) -> Self {
        self.status().terminating_replicas = n;
        self
    }
    pub fn build(self) -> ReplicaSet {
        self.0
    }
    pub fn arc(self) -> Arc<ReplicaSet> {
        Arc::new(self.0)
    }
}

/// The working state of a sync over `olds` and `new`, the new ReplicaSet settled as given (the
/// slots sorted by creation time, as a sync takes them).
pub fn work<'a>(d: &'a Deployment, new: Option<ReplicaSet>, olds: Vec<ReplicaSet>) -> crate::work::Work<'a> {
    let new_uid = new.as_ref().and_then(|n| n.metadata.uid.clone());
    let rss: Vec<Arc<ReplicaSet>> = olds.into_iter().chain(new).map(Arc::new).collect();
    let mut w = crate::work::Work::new(d, rss, ts(1000));
    if new_uid.is_some() {
        w.new = w.slots.iter().position(|s| s.original.metadata.uid == new_uid);
    }
    w.lookup = crate::work::NewLookup::Settled;
    w
}

/// spec.replicas of every ReplicaSet of `w`, by name.
pub fn sizes(w: &crate::work::Work<'_>) -> BTreeMap<String, i32> {
    w.slots
        .iter()
        .map(|s| {
            (
                crate::replica_sets::name(s.rs()).to_owned(),
                crate::replica_sets::replicas(s.rs()),
            )
        })
        .collect()
}
