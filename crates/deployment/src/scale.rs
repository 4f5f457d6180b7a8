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
/// maximum it was last sized for (max-replicas; the Deployment's current pod count when that is
/// absent, invalid or 0), minus its size; nothing when neither is known; to 0 when the Deployment
/// goes to 0. Rounded half away from zero, as Go's `math.Round`.
///
/// Upstream multiplies the size by the new maximum in int32, which wraps once the product passes
/// MaxInt32 (from about 46,341 replicas on both sides) and then shrinks ReplicaSets during a
/// scale-up or sizes them below 0. Here the product is taken in 64 bits and the intended share
/// computed; the share is then bounded by what is left to add, as upstream's.
pub fn replica_set_fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    let size = rsu::replicas(rs);
    let replicas = spec::replicas(d);
    if replicas == 0 {
        return size.wrapping_neg();
    }
    let deployment_max = replicas.wrapping_add(spec::max_surge(d));
    let before = match annotations::int_annotation(&rs.metadata, annotations::MAX_REPLICAS) {
        Some(v) if v != 0 => v,
        _ => d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
    };
    if before == 0 {
        return 0;
    }
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let scaled = ((i64::from(size) * i64::from(deployment_max)) as f64 / f64::from(before)).round() as i64;
    let share = scaled.saturating_sub(i64::from(size));
    i32::try_from(share.clamp(i64::from(i32::MIN), i64::from(i32::MAX))).unwrap_or_default()
}

/// The share of `to_add` one ReplicaSet takes, given what the ReplicaSets before it took, never past
/// what is left (upstream `GetReplicaSetProportion`).
pub fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rsu::replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = replica_set_fraction(rs, d);
    let allowed = to_add.wrapping_sub(added);
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// spec.replicas + maxSurge, or 0 for a Deployment scaled to 0 (upstream's `allowedSize`, in int32).
fn allowed_size(d: &Deployment) -> i32 {
    let replicas = spec::replicas(d);
    if replicas > 0 {
        replicas.wrapping_add(spec::max_surge(d))
    } else {
        0
    }
}

/// The new sizes of `active` (already in scaling order) for Deployment `d`: each its proportion, what
/// rounding leaves over to the first (the largest), never below 0. int32 arithmetic as upstream's.
pub fn proportional_sizes(d: &Deployment, active: &[&ReplicaSet]) -> Vec<i32> {
    let to_add = allowed_size(d).wrapping_sub(rsu::sum_replicas(active.iter().copied()));
    let mut added: i32 = 0;
    let mut sizes: Vec<i32> = active
        .iter()
        .map(|rs| {
            let p = if to_add == 0 {
                0
            } else {
                proportion(rs, d, to_add, added)
            };
            added = added.wrapping_add(p);
            rsu::replicas(rs).wrapping_add(p)
        })
        .collect();
    if to_add != 0
        && let Some(first) = sizes.first_mut()
    {
        *first = first.wrapping_add(to_add.wrapping_sub(added)).max(0);
    }
    sizes
}

/// Whether the new ReplicaSet runs the whole Deployment: its size and desired-replicas are
/// spec.replicas and all of them are available. desired-replicas is read here as upstream's
/// `IsSaturated` reads it: any Go `int`, truncated to int32.
pub fn is_saturated(d: &Deployment, rs: Option<&ReplicaSet>) -> bool {
    let Some(rs) = rs else { return false };
    let desired = rs
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::DESIRED_REPLICAS))
        .and_then(|v| v.parse::<i64>().ok());
    let Some(desired) = desired else {
        return false;
    };
    let r = spec::replicas(d);
    #[allow(clippy::cast_possible_truncation)]
    let desired = desired as i32;
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
        // Upstream's FindActiveOrLatest leaves the old ReplicaSets sorted newest first, which is
        // the order the rest of this step takes them in (and writes them, when no sort follows).
        let newest_first: Vec<usize> = self.active_olds().into_iter().rev().collect();
        if is_saturated(&self.d, self.new_rs()) {
            for i in newest_first {
                self.scale_and_record(i, 0);
            }
            return;
        }
        if !spec::is_rolling_update(&self.d) {
            return;
        }
        let mut active: Vec<usize> = newest_first
            .into_iter()
            .chain(self.new.filter(|n| rsu::is_active(self.rs(*n))))
            .collect();
        let to_add =
            allowed_size(&self.d).wrapping_sub(rsu::sum_replicas(active.iter().map(|i| self.rs(*i))));
        if to_add > 0 {
            active.sort_by(|a, b| rsu::by_size_newer(self.rs(*a)).cmp(&rsu::by_size_newer(self.rs(*b))));
        } else if to_add < 0 {
            active.sort_by(|a, b| rsu::by_size_older(self.rs(*a)).cmp(&rsu::by_size_older(self.rs(*b))));
        }
        let rss: Vec<&ReplicaSet> = active.iter().map(|i| self.rs(*i)).collect();
        let sizes = proportional_sizes(&self.d, &rss);
        for (i, size) in active.into_iter().zip(sizes) {
            // Forced: the replicas annotations are rewritten even where the size stays.
            self.scale(i, size);
        }
    }
}

#[cfg(test)]
#[path = "scale_tests.rs"]
mod tests;
