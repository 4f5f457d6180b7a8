//! The working state of one planned sync: the Deployment and its ReplicaSets as the sync changes them,
//! in memory. Upstream's steps write as they go and feed what they wrote to the next step; here each
//! step changes this state, and the plan is the difference from the objects read (see
//! [`crate::plan`]).

use std::{sync::Arc, time::Duration};

use controller::events::TYPE_NORMAL;
use k8s_openapi::{
    api::apps::v1::{Deployment, ReplicaSet},
    jiff::Timestamp,
};

use crate::{
    annotations, replica_sets as rsu, spec,
    status::{self, RsView},
};

/// The event reason of every ReplicaSet resize.
pub const REASON_SCALING: &str = "ScalingReplicaSet";

/// An event the plan asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEvent {
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
}

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
        }
    }

    pub fn rs(&self) -> &ReplicaSet {
        self.modified.as_ref().unwrap_or(&self.original)
    }

    pub fn rs_mut(&mut self) -> &mut ReplicaSet {
        let original = &self.original;
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
    /// A rollback changed the template: the Deployment's spec is written, then these events.
    pub rollback: Option<Vec<PlannedEvent>>,
    pub requeue_after: Option<Duration>,
}

impl<'a> Work<'a> {
    pub fn new(d: &'a Deployment, owned: Vec<Arc<ReplicaSet>>, now: Timestamp) -> Self {
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

    /// Resizes a ReplicaSet to `to`, refreshing its desired/max-replicas annotations; `op` ("up" or
    /// "down") is what the event says. Returns whether the size changed (upstream `scaleReplicaSet`:
    /// a write for the annotations alone is made but not reported).
    pub fn scale(&mut self, i: usize, to: i32, op: &str) -> bool {
        let desired = spec::replicas(&self.d);
        let max = desired + spec::max_surge(&self.d);
        let from = rsu::replicas(self.rs(i));
        let resize = from != to;
        if !resize
            && !annotations::replicas_need_update(self.rs(i).metadata.annotations.as_ref(), desired, max)
        {
            return false;
        }
        let slot = &mut self.slots[i];
        let rs = slot.rs_mut();
        rs.spec.get_or_insert_with(Default::default).replicas = Some(to);
        annotations::set_replicas(
            rs.metadata.annotations.get_or_insert_with(Default::default),
            desired,
            max,
        );
        if resize {
            let name = rsu::name(slot.rs()).to_owned();
            slot.events.push(PlannedEvent {
                type_: TYPE_NORMAL,
                reason: REASON_SCALING,
                message: format!("Scaled {op} replica set {name} from {from} to {to}"),
            });
        }
        resize
    }

    /// Resizes only if the size differs, naming the direction (upstream `scaleReplicaSetAndRecordEvent`).
    pub fn scale_and_record(&mut self, i: usize, to: i32) -> bool {
        let from = rsu::replicas(self.rs(i));
        if from == to {
            return false;
        }
        self.scale(i, to, if from < to { "up" } else { "down" })
    }

    /// The status without progress estimation (upstream `syncDeploymentStatus`).
    pub fn sync_deployment_status(&mut self) {
        let new = status::calculate_status(&self.d, &self.views(), self.new_rs(), self.now);
        self.d.status = Some(new);
    }
}
