//! Shadow mode's account of a pass: every pod it would force-delete is a disagreement with upstream
//! until upstream's collector deletes it, reported once the pod has stayed unchanged for the settle
//! time and the lag of upstream's passes ([`lag`]). A pass decides over every pod at once, so what it
//! no longer decides is forgotten.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use controller::{CompactPod as Pod, shadow::ShadowState};

use crate::{
    controller::{CHECK_PERIOD, COMPONENT},
    decide::Reason,
};

/// What one pass would force-delete, in the order it decided it.
#[derive(Debug, Default)]
pub(crate) struct Would(Vec<(Arc<Pod>, Reason)>);

impl Would {
    pub(crate) fn add(&mut self, pods: &[Arc<Pod>], reason: Reason) {
        self.0.extend(pods.iter().map(|p| (p.clone(), reason)));
    }

    /// Files the pass with `state`; a pod two reasons name (none today) is filed under the first.
    pub(crate) fn file(self, state: &ShadowState) {
        let mut filed = BTreeSet::new();
        for (pod, reason) in self.0 {
            let object = key(&pod);
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

/// `namespace/name`, as the controller's logs and `/debug/shadow` name a pod.
pub(crate) fn key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
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
}
