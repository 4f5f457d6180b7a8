//! The label sets of kcm-rs's series: upstream's where a series has an upstream name, each wrapped
//! in `Sharded` so that a replica sharing the work tells its shards apart.

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NameLabel {
    pub name: String,
}

/// A series' labels `L`, and `shard` (`3-of-12`) on a replica sharing the work, whose shards each
/// have their own informers, queues and workers. Unsharded output keeps KCM's label sets exactly.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Sharded<L> {
    pub labels: L,
    pub shard: Option<String>,
}

impl<L: EncodeLabelSet> EncodeLabelSet for Sharded<L> {
    fn encode(&self, encoder: &mut LabelSetEncoder<'_>) -> Result<(), std::fmt::Error> {
        self.labels.encode(encoder)?;
        match &self.shard {
            Some(shard) => vec![("shard", shard.as_str())].encode(encoder),
            None => Ok(()),
        }
    }
}

/// A work queue's labels.
pub type QueueLabel = Sharded<NameLabel>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabel {
    pub resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabel {
    pub controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupResourceLabel {
    pub group: String,
    pub resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SyncLabel {
    pub controller: String,
    pub result: String,
}
