//! The RollingUpdate strategy: grow the new ReplicaSet within maxSurge, shrink the old ones within
//! maxUnavailable, one direction per sync (upstream `rolling.go`).

use crate::{
    new_rs::{SizeError, new_rs_new_replicas},
    replica_sets as rsu, spec,
    status::deployment_complete,
    work::Work,
};

impl Work<'_> {
    /// Upstream `rolloutRolling`.
    pub fn rollout_rolling(&mut self) -> Result<(), SizeError> {
        self.ensure_new(true)?;
        if self.reconcile_new()? || self.reconcile_olds() {
            self.sync_rollout_status();
            return Ok(());
        }
        if deployment_complete(&self.d, self.d.status.as_ref()) {
            self.cleanup();
        }
        self.sync_rollout_status();
        Ok(())
    }

    /// Shrinks a new ReplicaSet above spec.replicas, or grows it as far as maxSurge allows. Returns
    /// whether it was resized.
    pub fn reconcile_new(&mut self) -> Result<bool, SizeError> {
        let Some(n) = self.new else { return Ok(false) };
        let replicas = spec::replicas(&self.d);
        let current = rsu::replicas(self.rs(n));
        if current == replicas {
            return Ok(false);
        }
        if current > replicas {
            return Ok(self.scale_and_record(n, replicas));
        }
        let total = rsu::sum_replicas(self.slots.iter().map(|s| s.rs()));
        let to = new_rs_new_replicas(&self.d, total, current)?;
        Ok(self.scale_and_record(n, to))
    }

    /// Shrinks old ReplicaSets as far as availability allows: first their pods that are not
    /// available anyway, then available ones down to minAvailable. The budget counts the new
    /// ReplicaSet's unavailable pods against it, so a new template that never becomes available
    /// cannot drain the old ones (upstream `reconcileOldReplicaSets`). Both steps see only the old
    /// ReplicaSets active when the step began, plus the new one: one scaled to 0 earlier may still
    /// report pods its ReplicaSet controller is deleting, and those must not widen the budget.
    /// Returns whether any shrank; `false` too when the cleanup gave up (see
    /// [`Self::cleanup_unhealthy`]), as upstream swallows that error, and the sync then goes on to
    /// the history cleanup and the status as if nothing had been scaled.
    pub fn reconcile_olds(&mut self) -> bool {
        let olds = self.active_olds();
        if rsu::sum_replicas(olds.iter().map(|i| self.rs(*i))) == 0 {
            return false;
        }
        let all = rsu::sum_replicas(self.slots.iter().map(|s| s.rs()));
        let min_available = spec::replicas(&self.d).wrapping_sub(spec::max_unavailable(&self.d));
        let new_unavailable = self
            .new_rs()
            .map_or(0, |n| rsu::replicas(n).wrapping_sub(rsu::available(n)));
        let max_scaled_down = all.wrapping_sub(min_available).wrapping_sub(new_unavailable);
        if max_scaled_down <= 0 {
            return false;
        }
        let Some(cleaned) = self.cleanup_unhealthy(&olds, max_scaled_down) else {
            return false;
        };
        let scaled = self.scale_down_olds(&olds);
        cleaned.wrapping_add(scaled) > 0
    }

    /// `olds` (oldest first), each shrunk by its pods that are not available, within `max_cleanup`
    /// in all (upstream `cleanupUnhealthyReplicas`, kubernetes/kubernetes#16737: such pods would
    /// otherwise block the rollout until it times out). Returns how many went, or `None` when an
    /// old ReplicaSet reports more available pods than its size (its status lags a scale-down):
    /// upstream treats that as an error and scales nothing more in that sync, keeping what it
    /// already scaled. Every resize here is written on a best-effort basis
    /// (`Slot::best_effort`).
    pub fn cleanup_unhealthy(&mut self, olds: &[usize], max_cleanup: i32) -> Option<i32> {
        let mut total: i32 = 0;
        for &i in olds {
            if total >= max_cleanup {
                break;
            }
            let (size, available) = (rsu::replicas(self.rs(i)), rsu::available(self.rs(i)));
            if size == 0 || size == available {
                continue;
            }
            let down = max_cleanup.wrapping_sub(total).min(size.wrapping_sub(available));
            let to = size.wrapping_sub(down);
            if to > size {
                return None;
            }
            self.scale_old(i, to);
            total = total.wrapping_add(down);
        }
        Some(total)
    }

    /// `olds` (oldest first), shrunk while more pods are available than minAvailable, counting the
    /// available pods of `olds` and the new ReplicaSet only (upstream
    /// `scaleDownOldReplicaSetsForRollingUpdate`). Availability is what the ReplicaSets report,
    /// which the cleanup just before did not change. Returns how many went.
    pub fn scale_down_olds(&mut self, olds: &[usize]) -> i32 {
        let min_available = spec::replicas(&self.d).wrapping_sub(spec::max_unavailable(&self.d));
        let counted = olds.iter().copied().chain(self.new);
        let available = rsu::sum_available(counted.map(|i| self.rs(i)));
        if available <= min_available {
            return 0;
        }
        let budget = available.wrapping_sub(min_available);
        let mut total: i32 = 0;
        for &i in olds {
            if total >= budget {
                break;
            }
            let size = rsu::replicas(self.rs(i));
            if size == 0 {
                continue;
            }
            let down = size.min(budget.wrapping_sub(total));
            self.scale_old(i, size.wrapping_sub(down));
            total = total.wrapping_add(down);
        }
        total
    }

    /// Resizes an old ReplicaSet whose write may fail without failing the sync.
    fn scale_old(&mut self, i: usize, to: i32) {
        if self.scale_and_record(i, to) {
            self.slots[i].best_effort = true;
        }
    }
}

#[cfg(test)]
#[path = "rolling_tests.rs"]
mod tests;
