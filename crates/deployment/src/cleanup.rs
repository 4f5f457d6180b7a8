//! revisionHistoryLimit: old ReplicaSets beyond the limit are deleted, lowest revision first, but only
//! those fully drained (upstream `sync.go: cleanupDeployment`).

use crate::{replica_sets as rsu, spec, work::Work};

impl Work<'_> {
    /// Deletes old ReplicaSets beyond the limit, lowest revision first, skipping any that still has
    /// pods or a size, whose latest generation its controller has not seen, or that is already
    /// being deleted. Sizes are those the sync started from.
    pub fn cleanup(&mut self) {
        let Some(limit) = spec::revision_history_limit(&self.d) else {
            return;
        };
        let mut candidates: Vec<usize> = self
            .olds()
            .into_iter()
            .filter(|i| self.slots[*i].original.metadata.deletion_timestamp.is_none())
            .collect();
        let excess = i64::try_from(candidates.len()).unwrap_or(i64::MAX) - i64::from(limit);
        if excess <= 0 {
            return;
        }
        candidates.sort_by(|a, b| rsu::by_revision(self.rs(*a)).cmp(&rsu::by_revision(self.rs(*b))));
        for i in candidates.into_iter().take(usize::try_from(excess).unwrap_or(0)) {
            let slot = &self.slots[i];
            let rs = &slot.original;
            let observed = rs
                .status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .unwrap_or(0);
            if rsu::status_replicas(rs) != 0
                || slot.snapshot_replicas != 0
                || rs.metadata.generation.unwrap_or(0) > observed
            {
                continue;
            }
            self.deletes.push(rs.clone());
        }
    }
}
