//! Shadow mode's account of a pass: every pod it would force-delete is a disagreement with upstream
//! until upstream's collector deletes it, reported once the pod has stayed unchanged for the settle
//! time and the lag of upstream's passes ([`lag`]). A pass decides over every pod at once, so what it
//! no longer decides is forgotten; what a live pass decides once (the orphans of a node confirmed
//! gone) a shadow pass must decide on every pass ([`GoneNodes`]).

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use controller::{CompactPod as Pod, shadow::ShadowState};
use parking_lot::Mutex;

use crate::{
    controller::{CHECK_PERIOD, COMPONENT},
    decide::{NodeState, Reason, pod_key},
};

/// What one pass would force-delete, in the order it decided it.
#[derive(Debug, Default)]
pub(crate) struct Would(Vec<(Arc<Pod>, Reason)>);

impl Would {
    /// Pods already force-deleted (grace 0) and held only by a finalizer are left out: upstream's
    /// collector did what kcm-rs would, and deciding them again each pass is both collectors' way.
    pub(crate) fn add(&mut self, pods: &[Arc<Pod>], reason: Reason) {
        let force_deleted = |p: &Pod| {
            p.metadata.deletion_timestamp.is_some() && p.metadata.deletion_grace_period_seconds == Some(0)
        };
        self.0.extend(
            pods.iter()
                .filter(|p| !force_deleted(p))
                .map(|p| (p.clone(), reason)),
        );
    }

    /// Files the pass with `state`; a pod two reasons name (none today) is filed under the first.
    pub(crate) fn file(self, state: &ShadowState) {
        let mut filed = BTreeSet::new();
        for (pod, reason) in self.0 {
            let object = pod_key(&pod);
            if !filed.insert(object.clone()) {
                continue;
            }
            let line = format!("pod: kcm-rs would force-delete it ({})", reason.label());
            tracing::info!(pod = %object, reason = reason.label(), "shadow: kcm-rs would force-delete the pod");
            let fingerprint = controller::shadow::fingerprint::<Pod, Pod>(&pod, &[]);
            state.observe_after(COMPONENT, &object, fingerprint, vec![line], lag(reason));
        }
        state.retain(COMPONENT, &filed);
    }
}

/// How much later than kcm-rs upstream's collector may delete a pod for timing alone. Both run a
/// pass every [`CHECK_PERIOD`], out of phase: upstream may see what kcm-rs saw a period later. An
/// orphan waits in quarantine for a time both count in passes, which may cost one period more.
fn lag(reason: Reason) -> Duration {
    match reason {
        Reason::Orphaned => 2 * CHECK_PERIOD,
        Reason::Terminated | Reason::OutOfService | Reason::Unscheduled => CHECK_PERIOD,
    }
}

/// The nodes a shadow pass found gone, for as long as the cache lacks them. A live pass deletes their
/// pods the pass it confirms them gone; a shadow pass leaves them, and the quarantine, which hands a
/// node over once, would hold it back again for its whole period, so that its pods would drop out of
/// [`Would`] for two passes of three and never stand long enough to be reported.
#[derive(Debug, Default)]
pub(crate) struct GoneNodes(Mutex<BTreeSet<String>>);

impl GoneNodes {
    /// Those of `confirmed` and of the ones found before that the cache (`cached`) still lacks.
    pub(crate) fn remember(
        &self,
        confirmed: BTreeSet<String>,
        cached: &HashMap<String, NodeState>,
    ) -> BTreeSet<String> {
        let mut gone = self.0.lock();
        gone.extend(confirmed);
        gone.retain(|n| !cached.contains_key(n));
        gone.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(name: &str, version: &str) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            spec: None,
            status: None,
        })
    }

    fn reported(state: &ShadowState) -> Vec<(String, Vec<String>)> {
        state
            .current()
            .into_iter()
            .map(|d| (d.object, d.differences))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_pod_stands_until_a_pass_no_longer_would_delete_it() {
        let state = ShadowState::new(Duration::from_secs(3), |_| {});
        let pass = |pods: &[(Arc<Pod>, Reason)]| {
            let mut would = Would::default();
            for (p, reason) in pods {
                would.add(std::slice::from_ref(p), *reason);
            }
            would.file(&state);
        };
        let (a, b) = (pod("a", "1"), pod("b", "1"));
        pass(&[(a.clone(), Reason::Terminated), (b.clone(), Reason::Orphaned)]);
        assert!(reported(&state).is_empty(), "not before the pods settle");
        tokio::time::advance(Duration::from_secs(3) + CHECK_PERIOD).await;
        pass(&[(a.clone(), Reason::Terminated), (b.clone(), Reason::Orphaned)]);
        let terminated = (
            "ns/a".to_owned(),
            vec!["pod: kcm-rs would force-delete it (terminated)".to_owned()],
        );
        let orphaned = (
            "ns/b".to_owned(),
            vec!["pod: kcm-rs would force-delete it (orphaned)".to_owned()],
        );
        assert_eq!(
            reported(&state),
            std::slice::from_ref(&terminated),
            "an orphan waits a period more: upstream's quarantine may end a pass later"
        );
        tokio::time::advance(CHECK_PERIOD).await;
        pass(&[(a.clone(), Reason::Terminated), (b, Reason::Orphaned)]);
        assert_eq!(reported(&state), [terminated, orphaned]);
        // Upstream deleted b; a is still there.
        pass(&[(a, Reason::Terminated)]);
        assert_eq!(reported(&state).len(), 1);
        pass(&[]);
        assert!(reported(&state).is_empty());
    }

    #[test]
    fn a_force_deleted_pod_is_upstreams_doing() {
        let mut held = (*pod("held", "2")).clone();
        held.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        held.metadata.deletion_grace_period_seconds = Some(0);
        let mut would = Would::default();
        would.add(&[Arc::new(held), pod("a", "1")], Reason::Orphaned);
        let names: Vec<String> = would.0.iter().map(|(p, _)| pod_key(p)).collect();
        assert_eq!(names, ["ns/a"]);
    }

    #[test]
    fn gone_nodes_are_remembered_while_the_cache_lacks_them() {
        let nodes = GoneNodes::default();
        let none = HashMap::new();
        let made_again = HashMap::from([(
            "n1".to_owned(),
            NodeState {
                ready: true,
                out_of_service: false,
            },
        )]);
        let gone = nodes.remember(BTreeSet::from(["n1".to_owned()]), &none);
        assert_eq!(gone, BTreeSet::from(["n1".to_owned()]));
        let gone = nodes.remember(BTreeSet::new(), &none);
        assert_eq!(
            gone,
            BTreeSet::from(["n1".to_owned()]),
            "the next pass still has it"
        );
        let gone = nodes.remember(BTreeSet::new(), &made_again);
        assert!(
            gone.is_empty(),
            "a node made again under the name is no longer gone"
        );
    }
}
