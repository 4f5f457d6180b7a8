//! Shadow mode's stand-in for the re-creation backoff record.
//!
//! The live controller builds its [`BackoffRecord`] from the finished pods it counts itself, in the
//! sync that removes their finalizers. A shadow controller never counts a pod: upstream's controller
//! does, within moments, and a pod deleted while running is gone from the cache as soon as upstream
//! lets go of its finalizer. Planning with an empty record, the shadow would replace a failed pod
//! at once while upstream waits out its 10 s backoff, and report that as a disagreement. So shadow
//! mode watches the pods itself and remembers, per Job, every pod it saw finish (succeeded, failed,
//! or deleted before succeeding) with its latest finish time; the sync turns the ones upstream has
//! already counted into the record upstream holds.

use controller::compact_pod::Pod;
use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::Arc,
};

use controller::pod_util::controller_of;
use informer::{DeletedObject, EventHandler};
use k8s_openapi::{api::batch::v1::Job, jiff::Timestamp};
use parking_lot::Mutex;

use crate::{
    backoff::{BackoffRecord, finished_time},
    spec::{has_tracking_finalizer, only_replace_failed, phase},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Succeeded,
    Failed,
    /// Deleted before it succeeded: a failure unless the Job replaces failed pods only
    /// (upstream `isPodFailed`).
    Deleted,
}

#[derive(Debug, Clone, Copy)]
struct Finish {
    outcome: Outcome,
    at: Timestamp,
}

/// The finished pods of one Job, by pod UID.
#[derive(Debug, Default)]
struct JobFinishes {
    /// The Job these pods belong to: a Job deleted and created again under the same name starts
    /// afresh.
    job_uid: String,
    pods: BTreeMap<String, Finish>,
}

/// Finished pods seen, by the controlling Job's `namespace/name`.
#[derive(Debug, Default)]
pub(crate) struct ObservedFinishes {
    by_job: Mutex<HashMap<String, JobFinishes>>,
}

impl ObservedFinishes {
    fn observe(&self, pod: &Pod) {
        let Some(owner) = controller_of(&pod.metadata).filter(|r| r.kind == "Job") else {
            return;
        };
        let outcome = match phase(pod) {
            "Succeeded" => Outcome::Succeeded,
            "Failed" => Outcome::Failed,
            _ if pod.metadata.deletion_timestamp.is_some() => Outcome::Deleted,
            _ => return,
        };
        let key = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            owner.name
        );
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut by_job = self.by_job.lock();
        let finishes = by_job.entry(key).or_default();
        if finishes.job_uid != owner.uid {
            *finishes = JobFinishes {
                job_uid: owner.uid.clone(),
                pods: BTreeMap::new(),
            };
        }
        // The latest state wins: upstream counts the pod as its cache shows it then.
        finishes.pods.insert(
            uid,
            Finish {
                outcome,
                at: finished_time(pod),
            },
        );
    }

    /// Forgets a Job (`namespace/name`) that is gone or finished.
    pub(crate) fn forget(&self, job_key: &str) {
        self.by_job.lock().remove(job_key);
    }

    /// The record upstream holds for `job`: every finish seen but those of `pods` that upstream has
    /// not counted yet (the tracking finalizer still on, not in `uncountedTerminatedPods`), which
    /// the plan adds itself as this sync's newly finished pods.
    pub(crate) fn record(&self, job: &Job, pods: &[Arc<Pod>]) -> BackoffRecord {
        let uncounted: HashSet<&str> = job
            .status
            .as_ref()
            .and_then(|s| s.uncounted_terminated_pods.as_ref())
            .map(|u| {
                u.succeeded
                    .iter()
                    .chain(u.failed.iter())
                    .flatten()
                    .map(String::as_str)
                    .collect()
            })
            .unwrap_or_default();
        let not_counted_yet: HashSet<&str> = pods
            .iter()
            .filter(|p| has_tracking_finalizer(&p.metadata))
            .filter_map(|p| p.metadata.uid.as_deref())
            .filter(|uid| !uncounted.contains(uid))
            .collect();
        let deleted_fails = !only_replace_failed(job);
        let by_job = self.by_job.lock();
        let key = format!(
            "{}/{}",
            job.metadata.namespace.as_deref().unwrap_or_default(),
            job.metadata.name.as_deref().unwrap_or_default()
        );
        let Some(finishes) = by_job
            .get(&key)
            .filter(|f| Some(f.job_uid.as_str()) == job.metadata.uid.as_deref())
        else {
            return BackoffRecord::default();
        };
        let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
        for (_, f) in finishes
            .pods
            .iter()
            .filter(|(uid, _)| !not_counted_yet.contains(uid.as_str()))
        {
            match f.outcome {
                Outcome::Succeeded => succeeded.push(f.at),
                Outcome::Failed => failed.push(f.at),
                Outcome::Deleted if deleted_fails => failed.push(f.at),
                Outcome::Deleted => {}
            }
        }
        BackoffRecord::default().with_finish_times(&succeeded, &failed)
    }
}

/// Feeds [`ObservedFinishes`] from the pod informer.
#[derive(Debug, Clone)]
pub(crate) struct FinishObserver(pub(crate) Arc<ObservedFinishes>);

impl EventHandler<Pod> for FinishObserver {
    fn on_add(&self, pod: &Arc<Pod>, _: bool) {
        self.0.observe(pod);
    }

    fn on_update(&self, _: &Arc<Pod>, cur: &Arc<Pod>) {
        self.0.observe(cur);
    }

    fn on_delete(&self, pod: &DeletedObject<Pod>) {
        self.0.observe(pod.object());
    }
}

#[cfg(test)]
#[path = "observed_finishes_tests.rs"]
mod tests;
