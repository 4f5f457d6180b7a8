//! Wiring (the Namespace informer and its handler, the work queue with upstream's limits, the
//! workers) and the steps of a sync: a namespace being deleted goes to [`delete`] (upstream
//! `NamespaceController.syncNamespaceFromKey`).

use std::{sync::Arc, time::Duration};

use controller::{
    Build, Clock, Comparison, Context, Controller, Decided, Steps, SystemClock, Wiring, shadow::ShadowState,
};
use informer::{
    DeletedObject, EventHandler, Lister, ObjectKey, WorkQueue,
    workqueue::{BucketRateLimiter, ItemExponentialRateLimiter, MaxOfRateLimiter},
};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;

use crate::{
    deleter::{Deletion, delete},
    error::DeleteError,
};

/// KCM's name for the controller (`names.NamespaceController`); its client's is the role's,
/// [`ROLE`].
pub const COMPONENT: &str = "namespace-controller";
/// The bootstrap role whose rules the controller needs (`system:controller:namespace-controller`).
pub const ROLE: &str = "namespace-controller";
/// The work queue's name (upstream: `namespace`).
pub const QUEUE_NAME: &str = "namespace";
/// How long after a namespace is seen deleted its first pass waits (upstream
/// `namespaceDeletionGracePeriod`): other finalizers get a head start.
pub const DELETION_GRACE: Duration = Duration::from_secs(5);
/// KCM's `--namespace-sync-period` default: how often every namespace is handed to the handler again.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(5 * 60);
/// KCM's `--concurrent-namespace-syncs` default.
pub const DEFAULT_WORKERS: usize = 10;
/// The retry backoff of a failed pass, per namespace (upstream `nsControllerRateLimiter`: 5 ms
/// doubling to 60 s, under a 10 qps / burst 100 bucket).
const BACKOFF_BASE: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
const BUCKET_QPS: f64 = 10.0;
const BUCKET_BURST: u32 = 100;

/// What is this controller's alone.
#[derive(Debug, Clone)]
pub struct NamespaceOptions {
    /// `--namespace-sync-period`.
    pub sync_period: Duration,
}

impl Default for NamespaceOptions {
    fn default() -> Self {
        Self {
            sync_period: DEFAULT_SYNC_PERIOD,
        }
    }
}

/// The namespace controller.
pub struct NamespaceController {
    wiring: Wiring,
    namespaces: Lister<Namespace>,
    client: Client,
    clock: Arc<dyn Clock>,
    /// Set in shadow mode: a namespace kcm-rs would empty is reported instead.
    shadow: Option<Arc<ShadowState>>,
}

impl std::fmt::Debug for NamespaceController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceController").finish_non_exhaustive()
    }
}

impl Build for NamespaceController {
    type Options = NamespaceOptions;
    type Shadow = Self;

    fn build(cx: Context<'_>, options: NamespaceOptions) -> Self {
        let namespaces = cx
            .factory
            .cluster::<Namespace>(informer::InformerOptions::default());
        let queue = WorkQueue::with_limiter(
            MaxOfRateLimiter::new(vec![
                Box::new(ItemExponentialRateLimiter::new(BACKOFF_BASE, BACKOFF_MAX)),
                Box::new(BucketRateLimiter::new(BUCKET_QPS, BUCKET_BURST)),
            ]),
            QUEUE_NAME,
            cx.metrics,
        );
        let mut wiring = cx
            .wiring_of(QUEUE_NAME, queue.clone())
            .with_resync(Some(options.sync_period).filter(|p| !p.is_zero()));
        wiring.watch(&namespaces, NamespaceHandler(queue));
        Self {
            wiring,
            namespaces: namespaces.lister(),
            client: cx.client,
            clock: Arc::new(SystemClock),
            shadow: None,
        }
    }

    /// A namespace being deleted is a disagreement until upstream's controller has emptied and
    /// finalized it; nothing is deleted.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: NamespaceOptions) -> Self {
        let mut c = Self::build(cx, options);
        c.shadow = Some(state);
        c
    }
}

impl Steps for NamespaceController {
    const NAME: &'static str = COMPONENT;
    /// Upstream's worker asks for a namespace whose content is still going again without
    /// forgetting its failures, so that a failure after it waits longer.
    const FORGETS_WHEN_REQUEUED: bool = false;
    type Object = Namespace;
    type Plan = Arc<Namespace>;
    type Error = DeleteError;

    fn get(&self, key: &ObjectKey) -> Option<Arc<Namespace>> {
        self.namespaces.get(None, key.name())
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_deref()
    }

    fn client(&self) -> &Client {
        &self.client
    }

    /// Every cached namespace is handed to the pass, which decides on a fresh read: the cache may
    /// not show a deletion yet (upstream syncs whatever its lister holds).
    fn decide(&self, _: &ObjectKey, ns: Arc<Namespace>) -> Result<Decided<Self::Plan>, DeleteError> {
        Ok(Decided::Plan(ns))
    }

    fn compare(&self, _: &ObjectKey, ns: Self::Plan) -> Comparison {
        let differences = if ns.metadata.deletion_timestamp.is_some() {
            vec!["namespace: kcm-rs would delete its content and finalize it".to_owned()]
        } else {
            Vec::new()
        };
        Comparison {
            fingerprint: controller::shadow::fingerprint::<Namespace, Namespace>(&ns, &[]),
            differences,
            again: None,
        }
    }

    /// One pass; content that should go by itself is looked at again after half its estimate and
    /// a second (upstream's worker).
    async fn execute(&self, key: &ObjectKey, _: Self::Plan) -> Result<Option<Duration>, DeleteError> {
        match delete(&self.client, &*self.clock, key.name()).await? {
            Deletion::Done => Ok(None),
            Deletion::Remaining { estimate } => {
                let wait = requeue_after(estimate);
                tracing::debug!(namespace = %key, wait = ?wait, "content remaining in namespace");
                Ok(Some(wait))
            }
        }
    }
}

/// When to look again at content expected to go within `estimate` seconds: after half of it and a
/// second (upstream's worker).
pub fn requeue_after(estimate: i64) -> Duration {
    Duration::from_secs(u64::try_from(estimate / 2 + 1).unwrap_or(1))
}

/// Enqueues a namespace being deleted, after [`DELETION_GRACE`], on every add and update (upstream
/// `enqueueNamespace`); deletions concern nobody.
#[derive(Debug, Clone)]
struct NamespaceHandler(WorkQueue<ObjectKey>);

impl NamespaceHandler {
    fn consider(&self, ns: &Namespace) {
        if ns.metadata.deletion_timestamp.is_some() {
            self.0.add_after(ObjectKey::of(ns), DELETION_GRACE);
        }
    }
}

impl EventHandler<Namespace> for NamespaceHandler {
    fn on_add(&self, ns: &Arc<Namespace>, _: bool) {
        self.consider(ns);
    }

    fn on_update(&self, _: &Arc<Namespace>, ns: &Arc<Namespace>) {
        self.consider(ns);
    }

    fn on_delete(&self, _: &DeletedObject<Namespace>) {}
}

impl Controller for NamespaceController {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checked when the tests compile: failures survive a pass that finds content still going.
    const _: () = assert!(
        !<NamespaceController as controller::Reconciler>::FORGETS_WHEN_REQUEUED
            && <NamespaceController as controller::Reconciler>::FORGETS_WHEN_DONE
    );

    #[test]
    fn content_remaining_is_looked_at_again_after_half_its_estimate_and_a_second() {
        assert_eq!(requeue_after(30), Duration::from_secs(16));
        assert_eq!(requeue_after(15), Duration::from_secs(8));
        assert_eq!(requeue_after(1), Duration::from_secs(1));
        assert_eq!(
            requeue_after(i64::MAX),
            Duration::from_secs(u64::try_from(i64::MAX / 2 + 1).unwrap())
        );
    }
}
