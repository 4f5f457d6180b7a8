//! How every controller's shadow says where its plan and upstream's outcome part: one line per
//! disagreeing status field or intended write, and a fingerprint of what the plan read. Written once
//! so that the controllers word and compare the same things the same way.

use std::{
    fmt::Debug,
    hash::{Hash, Hasher},
    sync::Arc,
};

use kube::Resource;

/// The lines of one sync's disagreements; empty when kcm-rs agrees with upstream.
#[derive(Debug, Default)]
pub struct Differences(Vec<String>);

impl Differences {
    pub fn new() -> Self {
        Self::default()
    }

    /// A write kcm-rs would make, e.g. `pods: kcm-rs would delete ["a"]`.
    pub fn would(&mut self, what: &str, action: std::fmt::Arguments<'_>) {
        self.0.push(format!("{what}: kcm-rs would {action}"));
    }

    /// A line said as it is.
    pub fn push(&mut self, line: String) {
        self.0.push(line);
    }

    /// `status.<name>` when upstream's value and kcm-rs's differ.
    pub fn field(&mut self, name: &str, upstream: impl ToString, ours: impl ToString) {
        let (upstream, ours) = (upstream.to_string(), ours.to_string());
        if upstream != ours {
            self.0
                .push(format!("status.{name}: upstream {upstream}, kcm-rs {ours}"));
        }
    }

    /// A count field, absent meaning 0 (as the API defaults it).
    pub fn count(&mut self, name: &str, upstream: Option<i32>, ours: Option<i32>) {
        self.field(name, upstream.unwrap_or(0), ours.unwrap_or(0));
    }

    /// A field compared as it is written, absent and zero apart.
    pub fn exact<T: Debug>(&mut self, name: &str, upstream: &T, ours: &T) {
        self.field(name, format!("{upstream:?}"), format!("{ours:?}"));
    }

    /// The conditions as `type=status (reason)`, sorted by type: a status's conditions are looked
    /// up by type, so an order two controllers happen to append in is no disagreement. Times and
    /// messages are left out: no two controllers share them.
    pub fn conditions<C: StatusCondition>(&mut self, upstream: &Option<Vec<C>>, ours: &Option<Vec<C>>) {
        let line = |cs: &Option<Vec<C>>| condition_line(cs.iter().flatten().map(StatusCondition::summary));
        self.field("conditions", line(upstream), line(ours));
    }

    pub fn into_lines(self) -> Vec<String> {
        self.0
    }
}

/// A condition's type, status and reason, as [`Differences::conditions`] compares them.
pub type Condition<'a> = (&'a str, &'a str, Option<&'a str>);

/// The status conditions of the workload kinds, which share these fields but no type.
pub trait StatusCondition {
    fn summary(&self) -> Condition<'_>;
}

macro_rules! status_condition {
    ($($t:ty),*) => {$(
        impl StatusCondition for $t {
            fn summary(&self) -> Condition<'_> {
                (self.type_.as_str(), self.status.as_str(), self.reason.as_deref())
            }
        }
    )*};
}

status_condition!(
    k8s_openapi::api::apps::v1::ReplicaSetCondition,
    k8s_openapi::api::apps::v1::DeploymentCondition,
    k8s_openapi::api::batch::v1::JobCondition
);

fn condition_line<'a>(cs: impl IntoIterator<Item = Condition<'a>>) -> String {
    let mut cs: Vec<String> = cs
        .into_iter()
        .map(|(type_, status, reason)| format!("{type_}={status} ({})", reason.unwrap_or("")))
        .collect();
    cs.sort();
    cs.join(", ")
}

/// The names of `objects`, for a [`Differences::would`] line.
pub fn names<K: Resource>(objects: &[Arc<K>]) -> Vec<String> {
    objects
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

/// A hash of the owner's and its candidates' resourceVersions: it changes whenever anything the plan
/// read changes, which restarts the settle time of a disagreement.
pub fn fingerprint<O: Resource, K: Resource>(owner: &O, candidates: &[Arc<K>]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    owner.meta().resource_version.hash(&mut h);
    let mut rvs: Vec<&str> = candidates
        .iter()
        .filter_map(|c| c.meta().resource_version.as_deref())
        .collect();
    rvs.sort_unstable();
    rvs.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::JobCondition;

    use super::*;

    #[test]
    fn only_disagreeing_fields_are_lines() {
        let mut d = Differences::new();
        d.count("replicas", Some(2), Some(2));
        d.count("ready", None, Some(0));
        d.count("available", Some(1), Some(2));
        d.exact("collisionCount", &None::<i32>, &Some(0));
        assert_eq!(
            d.into_lines(),
            [
                "status.available: upstream 1, kcm-rs 2",
                "status.collisionCount: upstream None, kcm-rs Some(0)"
            ]
        );
    }

    #[test]
    fn conditions_are_compared_by_type_whatever_their_order() {
        let mut d = Differences::new();
        let c = |type_: &str, status: &str, reason: Option<&str>| JobCondition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.map(Into::into),
            ..JobCondition::default()
        };
        let (a, b) = (
            c("Complete", "True", None),
            c("SuccessCriteriaMet", "True", Some("x")),
        );
        d.conditions(&Some(vec![a.clone(), b.clone()]), &Some(vec![b, a.clone()]));
        assert!(d.into_lines().is_empty());
        let mut d = Differences::new();
        d.conditions(&Some(vec![a]), &Some(vec![c("Complete", "False", None)]));
        assert_eq!(
            d.into_lines(),
            ["status.conditions: upstream Complete=True (), kcm-rs Complete=False ()"]
        );
    }
}
