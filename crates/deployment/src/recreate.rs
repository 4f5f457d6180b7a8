//! The Recreate strategy: every old pod gone before any new one starts (upstream `recreate.go`).

use controller::compact_pod::Pod;
use std::sync::Arc;

use crate::{new_rs::SizeError, replica_sets as rsu, spec, status::deployment_complete, work::Work};

impl Work<'_> {
    /// Upstream `rolloutRecreate`. `pods_of` lists the pods a ReplicaSet controls (terminal ones
    /// included).
    pub fn rollout_recreate(
        &mut self,
        pods_of: &(dyn Fn(&str) -> Vec<Arc<Pod>> + Sync),
    ) -> Result<(), SizeError> {
        // No new ReplicaSet yet: it must not start before the old ones are gone.
        self.ensure_new(false)?;
        let mut scaled = false;
        for i in self.active_olds() {
            scaled |= self.scale_and_record(i, 0);
        }
        if scaled || self.old_pods_running(pods_of) {
            self.sync_rollout_status();
            return Ok(());
        }
        self.ensure_new(true)?;
        if let Some(n) = self.new {
            self.scale_and_record(n, spec::replicas(&self.d));
        }
        if deployment_complete(&self.d, self.d.status.as_ref()) {
            self.cleanup();
        }
        self.sync_rollout_status();
        Ok(())
    }

    /// Whether an old ReplicaSet still reports pods, or any pod of a ReplicaSet other than the new
    /// one is not Succeeded or Failed (Unknown counts as running; a terminating pod runs until it is
    /// gone, which is what the pod-delete handler waits for).
    pub fn old_pods_running(&self, pods_of: &(dyn Fn(&str) -> Vec<Arc<Pod>> + Sync)) -> bool {
        if rsu::sum_status_replicas(self.olds().iter().map(|i| self.rs(*i))) > 0 {
            return true;
        }
        self.olds().iter().any(|i| {
            let uid = self.rs(*i).metadata.uid.as_deref().unwrap_or("");
            pods_of(uid).iter().any(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
        })
    }
}
