//! Scaling events: a Deployment resized during a rollout or while paused spreads the change over its
//! active ReplicaSets in proportion to their sizes, so that a resize neither speeds up nor slows a
//! rollout that may be failing (upstream `sync.go: isScalingEvent`, `scale`;
//! `deployment_util.go: FindActiveOrLatest`, `IsSaturated`, `GetReplicaSetProportion`).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use crate::{
    annotations, replica_sets as rsu,
    spec::{self},
    work::Work,
};

/// A ReplicaSet's share of a resize: its size scaled by the Deployment's new maximum over the
/// maximum it was last sized for (max-replicas, else the Deployment's current pod count), minus its
/// size; to 0 when the Deployment goes to 0. Rounded half away from zero, as Go's `math.Round`.
pub fn replica_set_fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    let size = rsu::replicas(rs);
    let replicas = spec::replicas(d);
    if replicas == 0 {
        return -size;
    }
    let deployment_max = i64::from(replicas + spec::max_surge(d));
    let annotated = annotations::int_annotation(&rs.metadata, annotations::MAX_REPLICAS)
        .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if annotated == 0 {
        // Upstream divides by zero here (a ReplicaSet never sized and a Deployment without pods,
        // which cannot both be active): grow by nothing rather than by infinity.
        return 0;
    }
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let scaled = ((i64::from(size) * deployment_max) as f64 / f64::from(annotated)).round() as i64;
    i32::try_from(scaled - i64::from(size)).unwrap_or(0)
}

/// The share of `to_add` one ReplicaSet takes, given what the ReplicaSets before it took, never past
/// what is left (upstream `GetReplicaSetProportion`).
pub fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rsu::replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = replica_set_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// The new sizes of `active` (already in scaling order) for Deployment `d`: each its proportion, what
/// rounding leaves over to the first (the largest), never below 0.
pub fn proportional_sizes(d: &Deployment, active: &[&ReplicaSet]) -> Vec<i32> {
    let replicas = spec::replicas(d);
    let allowed = if replicas > 0 {
        replicas + spec::max_surge(d)
    } else {
        0
    };
    let to_add = allowed - rsu::sum_replicas(active.iter().copied());
    let mut added = 0;
    let mut sizes: Vec<i32> = active
        .iter()
        .map(|rs| {
            let p = if to_add == 0 {
                0
            } else {
                proportion(rs, d, to_add, added)
            };
            added += p;
            rsu::replicas(rs) + p
        })
        .collect();
    if to_add != 0
        && let Some(first) = sizes.first_mut()
    {
        *first = (*first + to_add - added).max(0);
    }
    sizes
}

/// Whether the new ReplicaSet runs the whole Deployment: its size and desired-replicas are
/// spec.replicas and all of them are available.
pub fn is_saturated(d: &Deployment, rs: Option<&ReplicaSet>) -> bool {
    let Some(rs) = rs else { return false };
    let Some(desired) = annotations::int_annotation(&rs.metadata, annotations::DESIRED_REPLICAS) else {
        return false;
    };
    let r = spec::replicas(d);
    rsu::replicas(rs) == r && desired == r && rsu::available(rs) == r
}

impl Work<'_> {
    /// Whether an active ReplicaSet was last sized for another spec.replicas: the Deployment was
    /// resized since.
    pub fn is_scaling_event(&self) -> bool {
        let r = spec::replicas(&self.d);
        (0..self.slots.len()).any(|i| {
            let rs = self.rs(i);
            rsu::is_active(rs)
                && annotations::int_annotation(&rs.metadata, annotations::DESIRED_REPLICAS)
                    .is_some_and(|v| v != r)
        })
    }

    /// The only active ReplicaSet, or the newest when none is active (the new one first); `None`
    /// when several are active (upstream `FindActiveOrLatest`).
    fn active_or_latest(&self) -> Option<usize> {
        let mut olds = self.olds();
        olds.sort_by(|a, b| rsu::by_creation(self.rs(*b)).cmp(&rsu::by_creation(self.rs(*a))));
        let all: Vec<usize> = olds.iter().copied().chain(self.new).collect();
        let active: Vec<usize> = all
            .iter()
            .copied()
            .filter(|i| rsu::is_active(self.rs(*i)))
            .collect();
        match active.len() {
            0 => self.new.or_else(|| olds.first().copied()),
            1 => Some(active[0]),
            _ => None,
        }
    }

    /// Upstream `scale`: one active ReplicaSet takes spec.replicas; a saturated new ReplicaSet
    /// leaves the old ones nothing; otherwise a rolling update shares the resize out.
    pub fn scale_all(&mut self) {
        let replicas = spec::replicas(&self.d);
        if let Some(i) = self.active_or_latest() {
            if rsu::replicas(self.rs(i)) != replicas {
                self.scale_and_record(i, replicas);
            }
            return;
        }
        if is_saturated(&self.d, self.new_rs()) {
            for i in self.active_olds() {
                self.scale_and_record(i, 0);
            }
            return;
        }
        if !spec::is_rolling_update(&self.d) {
            return;
        }
        let mut active: Vec<usize> = self
            .olds()
            .into_iter()
            .chain(self.new)
            .filter(|i| rsu::is_active(self.rs(*i)))
            .collect();
        let allowed = if replicas > 0 {
            replicas + spec::max_surge(&self.d)
        } else {
            0
        };
        let to_add = allowed - rsu::sum_replicas(active.iter().map(|i| self.rs(*i)));
        let op = if to_add > 0 {
            active.sort_by(|a, b| rsu::by_size_newer(self.rs(*a)).cmp(&rsu::by_size_newer(self.rs(*b))));
            "up"
        } else {
            active.sort_by(|a, b| rsu::by_size_older(self.rs(*a)).cmp(&rsu::by_size_older(self.rs(*b))));
            if to_add < 0 { "down" } else { "" }
        };
        let rss: Vec<&ReplicaSet> = active.iter().map(|i| self.rs(*i)).collect();
        let sizes = proportional_sizes(&self.d, &rss);
        for (i, size) in active.into_iter().zip(sizes) {
            self.scale(i, size, op);
        }
    }
}

#[cfg(test)]
#[path = "scale_tests.rs"]
mod tests;
