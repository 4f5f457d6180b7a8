//! ReplicaSets for tests of the ReplicaSet controller and of what reads ReplicaSets.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        apps::v1::{ReplicaSet, ReplicaSetSpec},
        core::v1::PodTemplateSpec,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

/// A ReplicaSet `name` in namespace `ns` with uid `uid-<name>` (as [`crate::pod`] names pods) and an
/// empty spec: no replicas, selector or template until the test sets them, so the object holds
/// exactly what the test says.
pub fn replica_set(name: &str) -> ReplicaSetBuilder {
    ReplicaSetBuilder(ReplicaSet {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec::default()),
        status: None,
    })
}

#[derive(Debug, Clone)]
pub struct ReplicaSetBuilder(ReplicaSet);

impl ReplicaSetBuilder {
    #[must_use]
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.into());
        self
    }

    #[must_use]
    pub fn generation(mut self, generation: i64) -> Self {
        self.0.metadata.generation = Some(generation);
        self
    }

    #[must_use]
    pub fn resource_version(mut self, rv: &str) -> Self {
        self.0.metadata.resource_version = Some(rv.into());
        self
    }

    #[must_use]
    pub fn replicas(mut self, n: i32) -> Self {
        self.spec().replicas = Some(n);
        self
    }

    /// Adds `k=v` to the selector's matchLabels.
    #[must_use]
    pub fn selector(mut self, k: &str, v: &str) -> Self {
        self.spec()
            .selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
    }

    /// Adds `k=v` to the pod template's labels (a template with no spec).
    #[must_use]
    pub fn template_label(mut self, k: &str, v: &str) -> Self {
        self.spec()
            .template
            .get_or_insert_with(PodTemplateSpec::default)
            .metadata
            .get_or_insert_with(ObjectMeta::default)
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
    }

    #[must_use]
    pub fn min_ready_seconds(mut self, seconds: i32) -> Self {
        self.spec().min_ready_seconds = Some(seconds);
        self
    }

    pub fn build(self) -> ReplicaSet {
        self.0
    }

    fn spec(&mut self) -> &mut ReplicaSetSpec {
        self.0.spec.get_or_insert_with(ReplicaSetSpec::default)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    use super::*;

    #[test]
    fn holds_only_what_was_set() {
        let rs = replica_set("web").build();
        assert_eq!(rs.metadata.uid.as_deref(), Some("uid-web"));
        assert_eq!(rs.spec, Some(ReplicaSetSpec::default()));
    }

    #[test]
    fn selector_and_template_labels_accumulate() {
        let rs = replica_set("web")
            .selector("app", "web")
            .template_label("app", "web")
            .template_label("tier", "fe")
            .build();
        let spec = rs.spec.unwrap();
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            spec.selector,
            LabelSelector {
                match_labels: Some(labels(&[("app", "web")])),
                match_expressions: None,
            }
        );
        assert_eq!(
            spec.template.unwrap().metadata.unwrap().labels,
            Some(labels(&[("app", "web"), ("tier", "fe")]))
        );
    }
}
