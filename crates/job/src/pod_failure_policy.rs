//! Matching a failed pod against `spec.podFailurePolicy` (upstream `pod_failure_policy.go`).

use controller::compact_pod::{ContainerStatus, Pod};
use k8s_openapi::api::batch::v1::{PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement};

/// The action of the rule a pod matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Action {
    FailJob,
    FailIndex,
    Ignore,
    Count,
}

impl Action {
    /// The API spelling, also the `action` label of
    /// `job_controller_pod_failures_handled_by_failure_policy_total`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Action::FailJob => "FailJob",
            Action::FailIndex => "FailIndex",
            Action::Ignore => "Ignore",
            Action::Count => "Count",
        }
    }
}

/// What the policy says about one failed pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyMatch {
    /// With a FailJob match: the message of the Job's failure condition.
    pub(crate) fail_job_message: Option<String>,
    /// Whether the failure counts toward backoffLimit and backoffLimitPerIndex (false on Ignore).
    pub(crate) count_failed: bool,
    /// The matched rule's action; `None` when no rule matched.
    pub(crate) action: Option<Action>,
}

impl PolicyMatch {
    const NO_MATCH: PolicyMatch = PolicyMatch {
        fail_job_message: None,
        count_failed: true,
        action: None,
    };
}

/// The first rule the failed pod matches decides (upstream `matchPodFailurePolicy`). A rule with an
/// action this controller does not know is skipped, as upstream's switch falls through it.
pub(crate) fn match_pod_failure_policy(policy: Option<&PodFailurePolicy>, pod: &Pod) -> PolicyMatch {
    let Some(policy) = policy else {
        return PolicyMatch::NO_MATCH;
    };
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    for (index, rule) in policy.rules.iter().enumerate() {
        let matched: Option<String> = if let Some(req) = &rule.on_exit_codes {
            match_on_exit_codes(pod, req).map(|c| {
                let code = c.state.as_ref().and_then(|s| s.terminated.as_ref()).map_or(0, |t| t.exit_code);
                format!(
                    "Container {} for pod {ns}/{name} failed with exit code {code} matching {} rule at index {index}",
                    c.name, rule.action
                )
            })
        } else if let Some(patterns) = &rule.on_pod_conditions {
            match_on_pod_conditions(pod, patterns).map(|type_| {
                format!(
                    "Pod {ns}/{name} has condition {type_} matching {} rule at index {index}",
                    rule.action
                )
            })
        } else {
            None
        };
        let Some(message) = matched else { continue };
        match rule.action.as_str() {
            "Ignore" => {
                return PolicyMatch {
                    fail_job_message: None,
                    count_failed: false,
                    action: Some(Action::Ignore),
                };
            }
            "FailIndex" => {
                return PolicyMatch {
                    fail_job_message: None,
                    count_failed: true,
                    action: Some(Action::FailIndex),
                };
            }
            "Count" => {
                return PolicyMatch {
                    fail_job_message: None,
                    count_failed: true,
                    action: Some(Action::Count),
                };
            }
            "FailJob" => {
                return PolicyMatch {
                    fail_job_message: Some(message),
                    count_failed: true,
                    action: Some(Action::FailJob),
                };
            }
            _ => {}
        }
    }
    PolicyMatch::NO_MATCH
}

/// The first terminated container with a non-zero exit code matching the requirement: regular
/// containers first, then init containers.
fn match_on_exit_codes<'a>(
    pod: &'a Pod,
    req: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    let find = |list: Option<&'a Vec<ContainerStatus>>| {
        list.into_iter().flatten().find(|c| {
            let Some(t) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) else {
                return false;
            };
            req.container_name.as_ref().is_none_or(|n| *n == c.name)
                && t.exit_code != 0
                && operator_matches(t.exit_code, req)
        })
    };
    find(status.container_statuses.as_ref()).or_else(|| find(status.init_container_statuses.as_ref()))
}

fn operator_matches(code: i32, req: &PodFailurePolicyOnExitCodesRequirement) -> bool {
    match req.operator.as_str() {
        "In" => req.values.contains(&code),
        "NotIn" => !req.values.contains(&code),
        _ => false,
    }
}

/// The type of the first pod condition matching a pattern (a pattern's status defaults to True).
fn match_on_pod_conditions<'a>(
    pod: &'a Pod,
    patterns: &[k8s_openapi::api::batch::v1::PodFailurePolicyOnPodConditionsPattern],
) -> Option<&'a str> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| {
            patterns
                .iter()
                .any(|p| *p.type_ == *c.type_ && p.status.as_deref().unwrap_or("True") == c.status)
        })
        .map(|c| &*c.type_)
}

#[cfg(test)]
#[path = "pod_failure_policy_tests.rs"]
mod tests;
