//! The Deployment status computed from its ReplicaSets (upstream `sync.go: calculateStatus`) and the
//! predicates over it (`deployment_util.go`: `DeploymentComplete`, `DeploymentProgressing`,
//! `DeploymentTimedOut`).

use k8s_openapi::{
    api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet},
    jiff::Timestamp,
};

use crate::{
    conditions::{self, AVAILABLE, FALSE, PROGRESSING, TRUE},
    replica_sets as rsu, spec,
};

/// A ReplicaSet as the status sees it: its spec.replicas when the sync started (writes made during
/// the sync do not count, as upstream computes from the objects it listed), and its status.
#[derive(Debug, Clone, Copy)]
pub struct RsView<'a> {
    pub replicas: i32,
    pub rs: &'a ReplicaSet,
}

/// The status the Deployment should have: counts summed over its ReplicaSets, conditions carried
/// over, Available recomputed. `d` is the Deployment as this sync has changed it so far.
pub fn calculate_status(
    d: &Deployment,
    all: &[RsView<'_>],
    new: Option<&ReplicaSet>,
    now: Timestamp,
) -> DeploymentStatus {
    let rss = || all.iter().map(|v| v.rs);
    let available = rsu::sum_available(rss());
    let total = all.iter().map(|v| v.replicas).fold(0, i32::wrapping_add);
    let old = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: Some(spec::generation(d)),
        replicas: Some(rsu::sum_status_replicas(rss())),
        updated_replicas: Some(new.map_or(0, rsu::status_replicas)),
        ready_replicas: Some(rsu::sum_ready(rss())),
        available_replicas: Some(available),
        unavailable_replicas: Some(total.wrapping_sub(available).max(0)),
        terminating_replicas: rsu::sum_terminating(rss()),
        collision_count: old.collision_count,
        conditions: old.conditions,
    };
    let c = if available >= spec::replicas(d).wrapping_sub(spec::max_unavailable(d)) {
        conditions::new(
            AVAILABLE,
            TRUE,
            conditions::MINIMUM_REPLICAS_AVAILABLE,
            conditions::MSG_AVAILABLE,
            now,
        )
    } else {
        conditions::new(
            AVAILABLE,
            FALSE,
            conditions::MINIMUM_REPLICAS_UNAVAILABLE,
            conditions::MSG_UNAVAILABLE,
            now,
        )
    };
    conditions::set(&mut status, c);
    status
}

/// Whether two statuses are the same once the API's omissions are undone: absent counts are 0
/// (upstream's are plain integers), while terminatingReplicas and collisionCount are pointers
/// upstream, so absent and 0 differ.
pub fn same_status(a: Option<&DeploymentStatus>, b: Option<&DeploymentStatus>) -> bool {
    let d = DeploymentStatus::default();
    let (a, b) = (a.unwrap_or(&d), b.unwrap_or(&d));
    let n = |v: Option<i32>| v.unwrap_or(0);
    // Go compares conditions field by field; an absent string or time is its zero value.
    let conds = |s: &DeploymentStatus| -> Vec<DeploymentCondition> {
        s.conditions
            .iter()
            .flatten()
            .map(|c| DeploymentCondition {
                reason: Some(c.reason.clone().unwrap_or_default()),
                message: Some(c.message.clone().unwrap_or_default()),
                ..c.clone()
            })
            .collect()
    };
    a.observed_generation.unwrap_or(0) == b.observed_generation.unwrap_or(0)
        && n(a.replicas) == n(b.replicas)
        && n(a.updated_replicas) == n(b.updated_replicas)
        && n(a.ready_replicas) == n(b.ready_replicas)
        && n(a.available_replicas) == n(b.available_replicas)
        && n(a.unavailable_replicas) == n(b.unavailable_replicas)
        && a.terminating_replicas == b.terminating_replicas
        && a.collision_count == b.collision_count
        && conds(a) == conds(b)
}

/// Every desired replica updated and available, no old one left, and the generation observed.
pub fn deployment_complete(d: &Deployment, s: Option<&DeploymentStatus>) -> bool {
    let r = spec::replicas(d);
    let s = s.cloned().unwrap_or_default();
    s.updated_replicas.unwrap_or(0) == r
        && s.replicas.unwrap_or(0) == r
        && s.available_replicas.unwrap_or(0) == r
        && s.observed_generation.unwrap_or(0) >= spec::generation(d)
}

/// Progress between the status the Deployment shows and `new`: more updated, ready or available
/// pods, or fewer old ones.
pub fn deployment_progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_old = n(old.replicas).wrapping_sub(n(old.updated_replicas));
    let new_old = n(new.replicas).wrapping_sub(n(new.updated_replicas));
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_old < old_old
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

/// Whether the rollout has gone longer than progressDeadlineSeconds without progress: the
/// Progressing condition of `new` was last updated more than the deadline before `now` (or already
/// says so). A completed rollout never times out.
pub fn timed_out(d: &Deployment, new: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(deadline) = spec::progress_deadline(d) else {
        return false;
    };
    let Some(c) = conditions::get(new, PROGRESSING) else {
        return false;
    };
    match conditions::reason(c) {
        conditions::NEW_RS_AVAILABLE => false,
        conditions::TIMED_OUT => true,
        _ => {
            let from = c.last_update_time.as_ref().map_or(0, |t| t.0.as_millisecond());
            from + i64::from(deadline) * 1000 < now.as_millisecond()
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::DeploymentStatus;

    use super::*;
    use crate::fixtures::{deployment, int, rs, ts};

    fn views(rss: &[ReplicaSet]) -> Vec<RsView<'_>> {
        rss.iter()
            .map(|rs| RsView {
                replicas: rsu::replicas(rs),
                rs,
            })
            .collect()
    }

    #[test]
    fn counts_sum_over_replica_sets_and_available_uses_max_unavailable() {
        let d = deployment("foo", 10).rolling(int(3), int(2)).build();
        let new = rs("new", 5, 2).pods(5, 0).build();
        let old = rs("old", 8, 1)
            .image("old")
            .pods(9, 8)
            .terminating(Some(1))
            .build();
        let all = [old, new.clone()];
        let s = calculate_status(&d, &views(&all), Some(&new), ts(100));
        assert_eq!(s.replicas, Some(14));
        assert_eq!(s.updated_replicas, Some(5));
        assert_eq!(s.ready_replicas, Some(8));
        assert_eq!(s.available_replicas, Some(8));
        assert_eq!(
            s.unavailable_replicas,
            Some(5),
            "13 desired by the ReplicaSets, 8 available"
        );
        assert_eq!(s.terminating_replicas, Some(1));
        assert_eq!(s.observed_generation, Some(1));
        let a = conditions::get(&s, AVAILABLE).unwrap();
        assert_eq!(
            (a.status.as_str(), conditions::reason(a)),
            (TRUE, conditions::MINIMUM_REPLICAS_AVAILABLE)
        );
        let few = [rs("new", 10, 2).pods(10, 7).build()];
        let s = calculate_status(&d, &views(&few), None, ts(100));
        let a = conditions::get(&s, AVAILABLE).unwrap();
        assert_eq!(
            (a.status.as_str(), conditions::reason(a)),
            (FALSE, conditions::MINIMUM_REPLICAS_UNAVAILABLE)
        );
        assert_eq!(a.message.as_deref(), Some(conditions::MSG_UNAVAILABLE));
    }

    #[test]
    fn complete_and_progressing() {
        // Cases of upstream's TestDeploymentComplete and TestDeploymentProgressing.
        let st = |replicas, updated, available, observed| DeploymentStatus {
            replicas: Some(replicas),
            updated_replicas: Some(updated),
            available_replicas: Some(available),
            observed_generation: Some(observed),
            ..DeploymentStatus::default()
        };
        let d = deployment("foo", 5).build();
        assert!(deployment_complete(&d, Some(&st(5, 5, 5, 1))));
        assert!(
            !deployment_complete(&d, Some(&st(5, 5, 4, 1))),
            "not all available"
        );
        assert!(!deployment_complete(&d, Some(&st(6, 5, 5, 1))), "old pods left");
        assert!(
            !deployment_complete(&d, Some(&st(5, 5, 5, 0))),
            "generation not observed"
        );
        let with = |s: DeploymentStatus| deployment("foo", 5).status(s).build();
        assert!(
            deployment_progressing(&with(st(5, 1, 1, 1)), &st(5, 2, 1, 1)),
            "more updated"
        );
        assert!(
            deployment_progressing(&with(st(6, 1, 1, 1)), &st(5, 1, 1, 1)),
            "fewer old"
        );
        assert!(
            deployment_progressing(&with(st(5, 1, 1, 1)), &st(5, 1, 2, 1)),
            "more available"
        );
        assert!(!deployment_progressing(&with(st(5, 1, 1, 1)), &st(5, 1, 1, 1)));
    }

    #[test]
    fn timed_out_after_the_deadline_since_the_last_update() {
        // Cases of upstream's TestDeploymentTimedOut.
        let d = deployment("foo", 1).deadline(10).build();
        let with = |reason: &str, at: i64| {
            let mut s = DeploymentStatus::default();
            conditions::set(&mut s, conditions::new(PROGRESSING, TRUE, reason, "", ts(at)));
            s
        };
        assert!(
            !timed_out(&d, &with(conditions::REPLICA_SET_UPDATED, 100), ts(110)),
            "exactly the deadline"
        );
        assert!(timed_out(
            &d,
            &with(conditions::REPLICA_SET_UPDATED, 100),
            ts(111)
        ));
        assert!(!timed_out(&d, &with(conditions::NEW_RS_AVAILABLE, 0), ts(1000)));
        assert!(timed_out(&d, &with(conditions::TIMED_OUT, 1000), ts(1000)));
        assert!(
            !timed_out(&d, &DeploymentStatus::default(), ts(1000)),
            "no condition to start from"
        );
        assert!(!timed_out(
            &deployment("foo", 1).build(),
            &with(conditions::REPLICA_SET_UPDATED, 0),
            ts(1000)
        ));
    }

    #[test]
    fn absent_counts_equal_zero_but_pointers_do_not() {
        let a = DeploymentStatus::default();
        let mut b = DeploymentStatus {
            replicas: Some(0),
            ..DeploymentStatus::default()
        };
        assert!(same_status(Some(&a), Some(&b)));
        b.terminating_replicas = Some(0);
        assert!(!same_status(Some(&a), Some(&b)));
    }
}
