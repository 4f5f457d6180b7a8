//! The working state of one planned sync: the Deployment and its ReplicaSets as the sync changes them,
//! in memory. Upstream's steps write as they go and feed what they wrote to the next step; here each
//! step changes this state, and the plan is the difference from the objects read (see
//! [`crate::plan`]).

use controller::PlannedEvent;
use std::{sync::Arc, time::Duration};

use controller::{events::TYPE_NORMAL, features::FeatureGates};
use k8s_openapi::{
    api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet},
    jiff::Timestamp,
};

use crate::{
    annotations, replica_sets as rsu,
    rollback::RollbackEvents,
    spec,
    status::{self, RsView},
};

/// The event reason of every ReplicaSet resize.
pub const REASON_SCALING: &str = "ScalingReplicaSet";

/// One of the Deployment's ReplicaSets, as read and as this sync leaves it.
#[derive(Debug, Clone)]
pub struct Slot {
    pub original: Arc<ReplicaSet>,
    /// A copy made on the first change; `None` while unchanged.
    pub modified: Option<ReplicaSet>,
    /// Built by this sync, not yet in the API.
    pub created: bool,
    /// spec.replicas once the new ReplicaSet was settled, before any scaling: what the status counts.
    pub snapshot_replicas: i32,
    /// Emitted once this ReplicaSet's write succeeds.
    pub events: Vec<PlannedEvent>,
    /// Where this ReplicaSet's write comes among the sync's writes: the order of the first
    /// change, which is the order upstream, writing as it goes, makes them in.
    pub write_order: Option<usize>,
    /// A rolling update's old-ReplicaSet scale-down: upstream swallows its failure and still
    /// writes the status, so a failed write here does not end the sync.
    pub best_effort: bool,
}

impl Slot {
    pub fn new(rs: Arc<ReplicaSet>, created: bool) -> Self {
        let snapshot_replicas = rsu::replicas(&rs);
        Slot {
            original: rs,
            modified: None,
            created,
            snapshot_replicas,
            events: Vec::new(),
            write_order: None,
            best_effort: false,
        }
    }

    pub fn rs(&self) -> &ReplicaSet {
        self.modified.as_ref().unwrap_or(&self.original)
    }

    /// The copy to change; `order` is the write order it takes if this is its first change.
    pub fn rs_mut(&mut self, order: usize) -> &mut ReplicaSet {
        let original = &self.original;
        self.write_order.get_or_insert(order);
        self.modified.get_or_insert_with(|| (**original).clone())
    }
}

/// Whether the new ReplicaSet has been settled yet (upstream calls `getNewReplicaSet` up to three
/// times per sync; its result is the same each time, so it is settled once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewLookup {
    NotYet,
    /// Looked for without creating: none exists.
    Missing,
    Settled,
}

/// The sync's working state.
#[derive(Debug)]
pub struct Work<'a> {
    pub original: &'a Deployment,
    /// The Deployment as this sync changes it: annotations and status.
    pub d: Deployment,
    pub slots: Vec<Slot>,
    pub new: Option<usize>,
    pub lookup: NewLookup,
    pub now: Timestamp,
    /// Events on the Deployment, emitted whatever the writes do.
    pub events: Vec<PlannedEvent>,
    /// Old ReplicaSets to delete (revision history).
    pub deletes: Vec<Arc<ReplicaSet>>,
    /// A rollback was asked for: the Deployment's spec and annotations are written, with these
    /// events around the write.
    pub rollback: Option<RollbackEvents>,
    pub requeue_after: Option<Duration>,
    /// The feature gates the plan honours (`--feature-gates`).
    pub features: FeatureGates,
}

impl<'a> Work<'a> {
    /// The working state over `owned`, taken oldest first (then by name) whatever order the cache
    /// listed them in, as upstream sorts its list by creation time before any step. Every "first"
    /// of a step (the old ReplicaSet scaled down first, the failure reported, the revision rolled
    /// back to) follows from that order.
    pub fn new(d: &'a Deployment, mut owned: Vec<Arc<ReplicaSet>>, now: Timestamp) -> Self {
        owned.sort_by(|a, b| rsu::by_creation(a).cmp(&rsu::by_creation(b)));
        Work {
            original: d,
            d: d.clone(),
            slots: owned.into_iter().map(|rs| Slot::new(rs, false)).collect(),
            new: None,
            lookup: NewLookup::NotYet,
            now,
            events: Vec::new(),
            deletes: Vec::new(),
            rollback: None,
            requeue_after: None,
            features: FeatureGates::default(),
        }
    }

    pub fn name(&self) -> &str {
        self.d.metadata.name.as_deref().unwrap_or("")
    }

    /// Indexes of the old ReplicaSets (every one but the new).
    pub fn olds(&self) -> Vec<usize> {
        (0..self.slots.len()).filter(|i| Some(*i) != self.new).collect()
    }

    /// Old ReplicaSets with spec.replicas > 0, as they are now.
    pub fn active_olds(&self) -> Vec<usize> {
        self.olds()
            .into_iter()
            .filter(|i| rsu::is_active(self.slots[*i].rs()))
            .collect()
    }

    pub fn rs(&self, i: usize) -> &ReplicaSet {
        self.slots[i].rs()
    }

    pub fn new_rs(&self) -> Option<&ReplicaSet> {
        self.new.map(|i| self.rs(i))
    }

    /// The old ReplicaSets oldest first, then the new one: upstream's `append(oldRSs, newRS)`.
    pub fn olds_then_new(&self) -> impl Iterator<Item = usize> + use<> {
        self.olds().into_iter().chain(self.new)
    }

    /// The copy of ReplicaSet `i` to change, its write placed after those changed before it.
    pub fn rs_mut(&mut self, i: usize) -> &mut ReplicaSet {
        let order = self.slots.iter().filter(|s| s.write_order.is_some()).count();
        self.slots[i].rs_mut(order)
    }

    /// Records the ReplicaSets' sizes for the status, once the new ReplicaSet is settled.
    pub fn snapshot(&mut self) {
        for s in &mut self.slots {
            s.snapshot_replicas = rsu::replicas(s.rs());
        }
    }

    pub fn views(&self) -> Vec<RsView<'_>> {
        self.slots
            .iter()
            .map(|s| RsView {
                replicas: s.snapshot_replicas,
                rs: s.rs(),
            })
            .collect()
    }

    /// Resizes a ReplicaSet to `to`, refreshing its desired/max-replicas annotations, its event
    /// saying "up" or "down" by its own change. Returns whether the size changed (upstream
    /// `scaleReplicaSet`: a write for the annotations alone is made but not reported).
    pub fn scale(&mut self, i: usize, to: i32) -> bool {
        let desired = spec::replicas(&self.d);
        // int32 as upstream, which writes the wrapped value into max-replicas.
        let max = desired.wrapping_add(spec::max_surge(&self.d));
        let from = rsu::replicas(self.rs(i));
        let resize = from != to;
        if !resize
            && !annotations::replicas_need_update(self.rs(i).metadata.annotations.as_ref(), desired, max)
        {
            return false;
        }
        let rs = self.rs_mut(i);
        rs.spec.get_or_insert_with(Default::default).replicas = Some(to);
        annotations::set_replicas(
            rs.metadata.annotations.get_or_insert_with(Default::default),
            desired,
            max,
        );
        if resize {
            let slot = &mut self.slots[i];
            let name = rsu::name(slot.rs()).to_owned();
            let op = if from < to { "up" } else { "down" };
            slot.events.push(PlannedEvent {
                type_: TYPE_NORMAL,
                reason: REASON_SCALING.into(),
                message: format!("Scaled {op} replica set {name} from {from} to {to}"),
            });
        }
        resize
    }

    /// Resizes only if the size differs (upstream `scaleReplicaSetAndRecordEvent`).
    pub fn scale_and_record(&mut self, i: usize, to: i32) -> bool {
        if rsu::replicas(self.rs(i)) == to {
            return false;
        }
        self.scale(i, to)
    }

    /// The status without progress estimation (upstream `syncDeploymentStatus`).
    pub fn sync_deployment_status(&mut self) {
        self.d.status = Some(self.calculate_status());
    }

    /// The status the ReplicaSets give (upstream `calculateStatus`); terminatingReplicas only
    /// with DeploymentReplicaSetTerminatingReplicas on, else left unset.
    pub fn calculate_status(&self) -> DeploymentStatus {
        let mut s = status::calculate_status(&self.d, &self.views(), self.new_rs(), self.now);
        if !self.features.deployment_replica_set_terminating_replicas {
            s.terminating_replicas = None;
        }
        s
    }
}
