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
    /// cannot drain the old ones (upstream `reconcileOldReplicaSets`). Returns whether any shrank.
    pub fn reconcile_olds(&mut self) -> bool {
        let olds = self.active_olds();
        if rsu::sum_replicas(olds.iter().map(|i| self.rs(*i))) == 0 {
            return false;
        }
        let all = rsu::sum_replicas(self.slots.iter().map(|s| s.rs()));
        let min_available = spec::replicas(&self.d) - spec::max_unavailable(&self.d);
        let new_unavailable = self.new_rs().map_or(0, |n| rsu::replicas(n) - rsu::available(n));
        let max_scaled_down = all - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        let cleaned = self.cleanup_unhealthy(max_scaled_down);
        let scaled = self.scale_down_olds();
        cleaned + scaled > 0
    }

    /// Old ReplicaSets oldest first, each shrunk by its pods that are not available, within
    /// `max_cleanup` in all (upstream `cleanupUnhealthyReplicas`, kubernetes/kubernetes#16737: such
    /// pods would otherwise block the rollout until it times out). Returns how many went.
    pub fn cleanup_unhealthy(&mut self, max_cleanup: i32) -> i32 {
        let mut olds = self.active_olds();
        olds.sort_by(|a, b| rsu::by_creation(self.rs(*a)).cmp(&rsu::by_creation(self.rs(*b))));
        let mut total = 0;
        for i in olds {
            if total >= max_cleanup {
                break;
            }
            let (size, available) = (rsu::replicas(self.rs(i)), rsu::available(self.rs(i)));
            if size == 0 || size == available {
                continue;
            }
            let down = (max_cleanup - total).min(size - available);
            if down <= 0 {
                // More available than desired: nothing unhealthy to remove.
                continue;
            }
            self.scale_and_record(i, size - down);
            total += down;
        }
        total
    }

    /// Old ReplicaSets oldest first, shrunk while more pods are available than minAvailable
    /// (upstream `scaleDownOldReplicaSetsForRollingUpdate`). Availability is what the ReplicaSets
    /// report, which the cleanup just before did not change. Returns how many went.
    pub fn scale_down_olds(&mut self) -> i32 {
        let min_available = spec::replicas(&self.d) - spec::max_unavailable(&self.d);
        let available = rsu::sum_available(self.slots.iter().map(|s| s.rs()));
        if available <= min_available {
            return 0;
        }
        let mut olds = self.active_olds();
        olds.sort_by(|a, b| rsu::by_creation(self.rs(*a)).cmp(&rsu::by_creation(self.rs(*b))));
        let budget = available - min_available;
        let mut total = 0;
        for i in olds {
            if total >= budget {
                break;
            }
            let size = rsu::replicas(self.rs(i));
            if size == 0 {
                continue;
            }
            let down = size.min(budget - total);
            self.scale_and_record(i, size - down);
            total += down;
        }
        total
    }
}

#[cfg(test)]
#[path = "rolling_tests.rs"]
mod tests;
