//! Shadow mode's bookkeeping: which objects a read-only controller disagrees with upstream about,
//! reported only once an object has stayed unchanged for the settle time (upstream may simply not
//! have caught up yet).

mod diff;

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use parking_lot::Mutex;
use serde::Serialize;
use tokio::time::Instant;

pub use diff::{Condition, Differences, StatusCondition, fingerprint, names};

/// A reported disagreement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    pub controller: String,
    /// `namespace/name` of the object.
    pub object: String,
    /// One line per field: what upstream shows and what kcm-rs computed, or what kcm-rs would do.
    pub differences: Vec<String>,
}

struct Pending {
    fingerprint: u64,
    since: Instant,
}

/// The divergences of every shadowed controller.
pub struct ShadowState {
    settle: Duration,
    pending: Mutex<BTreeMap<(String, String), Pending>>,
    current: Mutex<BTreeMap<(String, String), Divergence>>,
    /// Called once per newly reported divergence (the binary counts them in a metric).
    on_report: Box<dyn Fn(&Divergence) + Send + Sync>,
}

impl std::fmt::Debug for ShadowState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShadowState")
            .field("settle", &self.settle)
            .finish_non_exhaustive()
    }
}

impl ShadowState {
    pub fn new(settle: Duration, on_report: impl Fn(&Divergence) + Send + Sync + 'static) -> Self {
        Self {
            settle,
            pending: Mutex::default(),
            current: Mutex::default(),
            on_report: Box::new(on_report),
        }
    }

    /// Records what a sync found for `object`, whose state (the object and what it owns) hashes to
    /// `fingerprint`. Returns when to look again, if the object has to settle first.
    pub fn observe(
        &self,
        controller: &str,
        object: &str,
        fingerprint: u64,
        differences: Vec<String>,
    ) -> Option<Duration> {
        self.observe_after(controller, object, fingerprint, differences, Duration::ZERO)
    }

    /// [`Self::observe`] for a controller whose upstream counterpart may act up to `lag` later
    /// than kcm-rs would for reasons of timing alone (the pod garbage collector's passes, which run
    /// out of phase with upstream's): a disagreement stands for the settle time and `lag` before it
    /// is reported.
    pub fn observe_after(
        &self,
        controller: &str,
        object: &str,
        fingerprint: u64,
        differences: Vec<String>,
        lag: Duration,
    ) -> Option<Duration> {
        let settle = self.settle + lag;
        let key = (controller.to_owned(), object.to_owned());
        if differences.is_empty() {
            self.pending.lock().remove(&key);
            self.current.lock().remove(&key);
            return None;
        }
        let mut pending = self.pending.lock();
        let p = pending.entry(key.clone()).or_insert(Pending {
            fingerprint,
            since: Instant::now(),
        });
        if p.fingerprint != fingerprint {
            *p = Pending {
                fingerprint,
                since: Instant::now(),
            };
        }
        let settled_for = p.since.elapsed();
        if settled_for < settle {
            return Some(settle - settled_for);
        }
        drop(pending);
        let divergence = Divergence {
            controller: controller.to_owned(),
            object: object.to_owned(),
            differences,
        };
        let mut current = self.current.lock();
        if current.get(&key) != Some(&divergence) {
            tracing::warn!(controller, object, differences = ?divergence.differences, "shadow: kcm-rs disagrees with upstream");
            (self.on_report)(&divergence);
            current.insert(key, divergence);
        }
        None
    }

    /// [`Self::observe`] for one sync of the object at `key`, except in a namespace being deleted
    /// ([`namespace_terminating`]), where the object is forgotten instead: upstream acts there too
    /// but the API server refuses it, which is no disagreement.
    pub async fn observe_sync(
        &self,
        client: &kube::Client,
        controller: &str,
        key: &informer::ObjectKey,
        fingerprint: u64,
        differences: Vec<String>,
    ) -> Option<Duration> {
        if !differences.is_empty() && namespace_terminating(client, key.namespace().unwrap_or_default()).await
        {
            self.forget(controller, key.as_str());
            return None;
        }
        self.observe(controller, key.as_str(), fingerprint, differences)
    }

    /// Forgets an object that no longer exists.
    pub fn forget(&self, controller: &str, object: &str) {
        let key = (controller.to_owned(), object.to_owned());
        self.pending.lock().remove(&key);
        self.current.lock().remove(&key);
    }

    /// Forgets every object of `controller` that `keep` does not hold: for a controller that
    /// decides over all its objects at once (the pod garbage collector's pass), those the latest
    /// decision no longer holds anything against.
    pub fn retain(&self, controller: &str, keep: &BTreeSet<String>) {
        let stays = |(c, o): &(String, String)| c != controller || keep.contains(o);
        self.pending.lock().retain(|k, _| stays(k));
        self.current.lock().retain(|k, _| stays(k));
    }

    /// The divergences standing now.
    pub fn current(&self) -> Vec<Divergence> {
        self.current.lock().values().cloned().collect()
    }
}

/// Whether `namespace` is being deleted (or gone). Shadow mode does not report a disagreement
/// there: pods vanish and creates are refused, for upstream as for kcm-rs, so upstream's status
/// and kcm-rs's plan part for reasons neither controller chose. An error reading the namespace
/// counts as not terminating, so that a real divergence is never hidden by it.
pub async fn namespace_terminating(client: &kube::Client, namespace: &str) -> bool {
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
    match api.get(namespace).await {
        Ok(ns) => ns.metadata.deletion_timestamp.is_some(),
        Err(kube::Error::Api(s)) if s.code == 404 => true,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn reports_only_after_the_object_settles() {
        let reported = Arc::new(AtomicUsize::new(0));
        let r = reported.clone();
        let s = ShadowState::new(Duration::from_secs(10), move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        });
        let diff = || vec!["status.availableReplicas: upstream 0, kcm-rs 3".to_owned()];
        assert_eq!(s.observe("rs", "ns/a", 1, diff()), Some(Duration::from_secs(10)));
        tokio::time::advance(Duration::from_secs(6)).await;
        // The object changed: the clock starts again.
        assert_eq!(s.observe("rs", "ns/a", 2, diff()), Some(Duration::from_secs(10)));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(s.observe("rs", "ns/a", 2, diff()), None);
        assert_eq!(s.current().len(), 1);
        s.observe("rs", "ns/a", 2, diff());
        assert_eq!(reported.load(Ordering::SeqCst), 1, "reported once");
        s.observe("rs", "ns/a", 3, vec![]);
        assert!(s.current().is_empty(), "agreement clears it");
    }

    #[tokio::test(start_paused = true)]
    async fn retain_forgets_only_the_controllers_objects_not_kept() {
        let s = ShadowState::new(Duration::ZERO, |_| {});
        let diff = || vec!["pod: kcm-rs would force-delete it".to_owned()];
        for (controller, object) in [("podgc", "ns/a"), ("podgc", "ns/b"), ("gc", "ns/a")] {
            s.observe(controller, object, 1, diff());
        }
        s.retain("podgc", &BTreeSet::from(["ns/b".to_owned()]));
        let left: Vec<(String, String)> = s
            .current()
            .into_iter()
            .map(|d| (d.controller, d.object))
            .collect();
        assert_eq!(
            left,
            [("gc".into(), "ns/a".into()), ("podgc".into(), "ns/b".into())]
        );
    }
}
