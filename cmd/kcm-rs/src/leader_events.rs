//! The events client-go's Lease lock records on its Lease, `LeaderElection` with "<identity> became
//! leader" and "<identity> stopped leading", which kube-controller-manager writes through a recorder
//! of its own: `kubectl get events -n kube-system` tells who led, and from when.

use std::time::Duration;

use controller::{EventRecorder, Owner, events::TYPE_NORMAL, object_reference};
use leaderelection::LeaderElector;

/// The events' reason (client-go `resourcelock.LeaseLock.RecordEvent`).
pub const REASON: &str = "LeaderElection";
/// Their source component, this binary's (KCM's recorder names `kube-controller-manager`).
pub const COMPONENT: &str = "kcm-rs";
/// How long a graceful stop waits for "stopped leading" to be written, before it releases the
/// Lease: after that, another replica may lead and this one writes nothing more.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// Records the leadership of one elector, as `identity`.
pub struct LeaderEvents {
    recorder: EventRecorder,
    identity: String,
}

impl LeaderEvents {
    /// A recorder through `client` (the leader election's: its rate limits, not a controller's).
    pub fn new(client: kube::Client, identity: &str) -> Self {
        Self {
            recorder: EventRecorder::new(client, COMPONENT, identity),
            identity: identity.to_owned(),
        }
    }

    pub async fn became_leader(&self, elector: &LeaderElector) {
        self.record(elector, "became leader").await;
    }

    /// On a graceful stop, once the controllers have drained, and written before it returns (or
    /// given up on after [`FLUSH_WAIT`]).
    pub async fn stopped_leading(&self, elector: &LeaderElector) {
        self.record(elector, "stopped leading").await;
        let _ = tokio::time::timeout(FLUSH_WAIT, self.recorder.flush()).await;
    }

    async fn record(&self, elector: &LeaderElector, what: &str) {
        let Some(lease) = elector.observed_lease().await else {
            return;
        };
        let on = object_reference(&Owner::of(&lease));
        self.recorder
            .record(&on, TYPE_NORMAL, REASON, format!("{} {what}", self.identity));
    }
}
