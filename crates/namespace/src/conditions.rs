//! Deciding: the five conditions a terminating namespace carries, from what one pass of the deletion
//! found (upstream `deletion/status_condition_utils.go`). Each is written on every pass: `True` with
//! what failed or remains, else `False` with its all-clear reason, so that a condition that was
//! failing says when it stopped.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{NamespaceCondition, NamespaceStatus},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};

/// The condition types, in the order upstream writes them, with the reason and message each has
/// when nothing is wrong.
pub const CONDITION_TYPES: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// What one pass found, gathered as it goes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Findings {
    /// The discovery condition's message.
    discovery: Option<String>,
    content_errors: Vec<String>,
    /// Instances left, by `resource.group`.
    remaining: BTreeMap<String, usize>,
    /// Instances left, by finalizer.
    finalizers: BTreeMap<String, usize>,
}

impl Findings {
    /// Discovery failed outright.
    pub fn discovery_failed(&mut self, error: &str) {
        self.discovery = Some(error.to_owned());
    }

    /// Discovery left `groups` group versions out; `error` is its whole text.
    pub fn discovery_partial(&mut self, groups: usize, error: &str) {
        self.discovery = Some(format!(
            "Discovery failed for some groups, {groups} failing: {error}"
        ));
    }

    /// A kind's content could not be deleted, or not all of it.
    pub fn content_error(&mut self, error: String) {
        self.content_errors.push(error);
    }

    /// `count` instances of `resource` in `group` remain, `finalizers` on them.
    pub fn remaining(
        &mut self,
        resource: &str,
        group: &str,
        count: usize,
        finalizers: &BTreeMap<String, usize>,
    ) {
        if count == 0 {
            return;
        }
        *self.remaining.entry(format!("{resource}.{group}")).or_default() += count;
        for (f, n) in finalizers.iter().filter(|(_, n)| **n > 0) {
            *self.finalizers.entry(f.clone()).or_default() += n;
        }
    }

    /// The failing conditions. `with_totals`: also what remains (upstream leaves it out when it
    /// stops after the pods, which therefore reads as "all content removed").
    fn failing(&self, with_totals: bool) -> Vec<(&'static str, &'static str, String)> {
        let mut failing = Vec::new();
        if let Some(message) = &self.discovery {
            failing.push((CONDITION_TYPES[0].0, "DiscoveryFailed", message.clone()));
        }
        if !self.content_errors.is_empty() {
            let mut messages = self.content_errors.clone();
            messages.sort();
            failing.push((
                CONDITION_TYPES[2].0,
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    messages.len(),
                    messages.join(", ")
                ),
            ));
        }
        if with_totals && !self.remaining.is_empty() {
            let mut parts: Vec<String> = self
                .remaining
                .iter()
                .map(|(r, n)| format!("{r} has {n} resource instances"))
                .collect();
            parts.sort();
            failing.push((
                CONDITION_TYPES[3].0,
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", parts.join(", ")),
            ));
        }
        if with_totals && !self.finalizers.is_empty() {
            let mut parts: Vec<String> = self
                .finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            parts.sort();
            failing.push((
                CONDITION_TYPES[4].0,
                "SomeFinalizersRemain",
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    parts.join(", ")
                ),
            ));
        }
        failing
    }

    /// Writes the five conditions into `status`; whether any changed. A condition's transition
    /// time moves only when its status does.
    pub fn apply(&self, status: &mut NamespaceStatus, with_totals: bool, now: Timestamp) -> bool {
        let failing = self.failing(with_totals);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        let mut changed = false;
        for (type_, ok_reason, ok_message) in CONDITION_TYPES {
            let (status_, reason, message) = match failing.iter().find(|(t, _, _)| *t == type_) {
                Some((_, reason, message)) => ("True", *reason, message.clone()),
                None => ("False", ok_reason, ok_message.to_owned()),
            };
            match conditions.iter_mut().find(|c| c.type_ == type_) {
                None => {
                    conditions.push(NamespaceCondition {
                        type_: type_.to_owned(),
                        status: status_.to_owned(),
                        reason: Some(reason.to_owned()),
                        message: Some(message),
                        last_transition_time: Some(Time(now)),
                    });
                    changed = true;
                }
                Some(old) => {
                    let same = old.status == status_
                        && old.reason.as_deref().unwrap_or_default() == reason
                        && old.message.as_deref().unwrap_or_default() == message;
                    if same {
                        continue;
                    }
                    if old.status != status_ {
                        old.last_transition_time = Some(Time(now));
                    }
                    old.status = status_.to_owned();
                    old.reason = Some(reason.to_owned());
                    old.message = Some(message);
                    changed = true;
                }
            }
        }
        changed
    }
}

#[cfg(test)]
#[path = "conditions_tests.rs"]
mod tests;
