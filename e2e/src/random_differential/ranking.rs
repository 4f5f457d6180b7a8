//! Which pods an Indexed Job's scale-down removes, as upstream's Job controller picks them, written
//! here apart from kcm-rs's own ranking so that the harness checks that code rather than repeating
//! it.
//!
//! The pick is a sort of the live pods, by completion index first and then by upstream's
//! `ActivePods` order (unassigned, then by phase, not Ready, Ready most recently, most restarts,
//! created most recently), whose first pods go. Its timestamps have a resolution of one second and
//! come from the API server and KWOK, so the same program can pick index 0 in one namespace and
//! index 1 in the other: both right. The differential accepts such a parting only when each run's
//! removal is exactly what this pick gives on that run's own pods, and stops comparing the program
//! there.

use std::cmp::Ordering;

use k8s_openapi::{api::core::v1::Pod, apimachinery::pkg::apis::meta::v1::Time};

use super::projection::INDEX;
use crate::pods::{is_ready, phase};

/// A scale-down's removal in one run: what the controller deleted and what the pick says it should.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// Completion indexes of the pods the controller deleted during the step, sorted.
    pub deleted: Vec<String>,
    /// The indexes [`pick`] gives for as many pods on the pods before the step, sorted; `None` when
    /// the pick does not apply (a repeated, missing or out-of-range index goes first by other rules).
    pub expected: Option<Vec<String>>,
}

impl Removal {
    /// The controller removed what the pick gives.
    pub fn follows_ranking(&self) -> bool {
        self.expected.as_ref() == Some(&self.deleted)
    }
}

fn index(p: &Pod) -> Option<i64> {
    p.metadata.annotations.as_ref()?.get(INDEX)?.parse().ok()
}

fn phase_rank(p: &Pod) -> u8 {
    match phase(p) {
        "Pending" => 0,
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

fn ready_since(p: &Pod) -> Option<&Time> {
    let c = p.status.as_ref()?.conditions.as_ref()?;
    c.iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?
        .last_transition_time
        .as_ref()
}

fn restarts(p: &Pod) -> i32 {
    let s = p.status.as_ref();
    s.into_iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
}

/// "Missing, or later, goes first": upstream's `afterOrZero` as an order on two optional times.
fn later_first(a: Option<&Time>, b: Option<&Time>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.0.cmp(&a.0),
    }
}

/// Upstream's `ActivePods` order: the pod that should go first is the lesser.
fn removal_order(a: &Pod, b: &Pod) -> Ordering {
    let node = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default()
    };
    let (na, nb) = (node(a), node(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    let by = phase_rank(a)
        .cmp(&phase_rank(b))
        .then(is_ready(a).cmp(&is_ready(b)));
    if by != Ordering::Equal {
        return by;
    }
    if is_ready(a) {
        let t = later_first(ready_since(a), ready_since(b));
        if t != Ordering::Equal {
            return t;
        }
    }
    restarts(b).cmp(&restarts(a)).then_with(|| {
        later_first(
            a.metadata.creation_timestamp.as_ref(),
            b.metadata.creation_timestamp.as_ref(),
        )
    })
}

/// The completion indexes of the first `count` live pods to go, sorted; `None` unless every live pod
/// has its own index below `completions`. Upstream sorts with Go's `sort.Sort`, an insertion sort
/// (stable) for the dozen pods or fewer a program has, so ties keep index order: Rust's stable sort
/// does the same.
pub fn pick(live: &[Pod], completions: i32, count: usize) -> Option<Vec<String>> {
    let mut pods: Vec<(i64, &Pod)> = live.iter().map(|p| Some((index(p)?, p))).collect::<Option<_>>()?;
    pods.sort_by_key(|(i, _)| *i);
    let unique = pods.windows(2).all(|w| w[0].0 != w[1].0);
    if !unique || pods.iter().any(|(i, _)| *i < 0 || *i >= i64::from(completions)) || count > pods.len() {
        return None;
    }
    pods.sort_by(|a, b| removal_order(a.1, b.1));
    let mut out: Vec<String> = pods[..count].iter().map(|(i, _)| i.to_string()).collect();
    out.sort();
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(index: &str, created: &str, ready_at: Option<&str>) -> Pod {
        let conditions = ready_at.map_or(
            json!([]),
            |t| json!([{"type": "Ready", "status": "True", "lastTransitionTime": t}]),
        );
        serde_json::from_value(json!({
            "metadata": {"name": format!("p{index}"), "annotations": {INDEX: index},
                         "creationTimestamp": created},
            "spec": {"nodeName": "n", "containers": []},
            "status": {"phase": "Running", "conditions": conditions}
        }))
        .unwrap()
    }

    const T0: &str = "2026-11-27T00:00:00Z";
    const T1: &str = "2026-11-27T00:00:01Z";

    #[test]
    fn ties_go_lowest_index_first() {
        let pods = [pod("1", T0, Some(T1)), pod("0", T0, Some(T1))];
        assert_eq!(pick(&pods, 2, 1), Some(vec!["0".into()]));
    }

    #[test]
    fn the_pod_ready_most_recently_goes_first_then_the_newest() {
        let pods = [pod("0", T0, Some(T0)), pod("1", T0, Some(T1))];
        assert_eq!(pick(&pods, 2, 1), Some(vec!["1".into()]));
        let pods = [pod("0", T0, Some(T1)), pod("1", T1, Some(T1))];
        assert_eq!(pick(&pods, 2, 1), Some(vec!["1".into()]));
        let pods = [pod("0", T0, None), pod("1", T0, Some(T0))];
        assert_eq!(
            pick(&pods, 2, 1),
            Some(vec!["0".into()]),
            "not Ready goes before Ready"
        );
    }

    #[test]
    fn a_repeated_or_out_of_range_index_is_not_picked_here() {
        assert_eq!(pick(&[pod("0", T0, None), pod("0", T1, None)], 2, 1), None);
        assert_eq!(pick(&[pod("0", T0, None), pod("2", T0, None)], 2, 1), None);
    }

    #[test]
    fn a_removal_follows_the_ranking_only_when_both_agree() {
        let r = |deleted: &[&str], expected: Option<&[&str]>| Removal {
            deleted: deleted.iter().map(|s| (*s).to_owned()).collect(),
            expected: expected.map(|e| e.iter().map(|s| (*s).to_owned()).collect()),
        };
        assert!(r(&["1"], Some(&["1"])).follows_ranking());
        assert!(!r(&["0"], Some(&["1"])).follows_ranking());
        assert!(!r(&["0"], None).follows_ranking());
    }
}
