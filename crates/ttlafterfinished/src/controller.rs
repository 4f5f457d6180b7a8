//! Wiring (the Job informer and its handler, the work queue, the workers) and the steps of a sync:
//! decide on the cached Job; a Job due goes to [`delete_if_due`] (upstream `Controller.processJob`).

use std::{sync::Arc, time::Duration};

use controller::{
    Build, Clock, Comparison, Context, Controller, Decided, Steps, SystemClock, Wiring, shadow::ShadowState,
};
use informer::{DeletedObject, EventHandler, Lister, ObjectKey, WorkQueue};
use k8s_openapi::api::batch::v1::Job;
use kube::Client;

use crate::{
    cleanup::{Cleanup, delete_if_due},
    error::SyncError,
    expiry::{Decision, decide, needs_cleanup},
    metrics::{NoTtlMetrics, TtlMetrics},
};

/// The work queue's name, the `name` label of the workqueue metrics (upstream: `ttl_jobs_to_delete`).
pub const QUEUE_NAME: &str = "ttl_jobs_to_delete";
/// KCM's name for the controller, and the client's (upstream: `ttl-after-finished-controller`).
pub const COMPONENT: &str = "ttl-after-finished-controller";

/// What is this controller's alone; the rest comes with its [`Context`].
#[derive(Clone)]
pub struct TtlAfterFinishedOptions {
    /// Where the deletion's lateness goes.
    pub metrics: Arc<dyn TtlMetrics>,
    /// Testing only (shadow mode's self-check): decide as if every TTL after finishing were 0.
    pub ignore_ttl_seconds: bool,
}

impl Default for TtlAfterFinishedOptions {
    fn default() -> Self {
        Self {
            metrics: Arc::new(NoTtlMetrics),
            ignore_ttl_seconds: false,
        }
    }
}

impl std::fmt::Debug for TtlAfterFinishedOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlAfterFinishedOptions")
            .field("ignore_ttl_seconds", &self.ignore_ttl_seconds)
            .finish_non_exhaustive()
    }
}

/// The TTL-after-finished controller.
pub struct TtlAfterFinishedController {
    wiring: Wiring,
    jobs: Lister<Job>,
    client: Client,
    clock: Arc<dyn Clock>,
    metrics: Arc<dyn TtlMetrics>,
    /// Set in shadow mode: a Job kcm-rs would delete is reported instead, unless upstream deletes it.
    shadow: Option<Arc<ShadowState>>,
    ignore_ttl_seconds: bool,
}

impl std::fmt::Debug for TtlAfterFinishedController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlAfterFinishedController")
            .finish_non_exhaustive()
    }
}

impl Build for TtlAfterFinishedController {
    type Options = TtlAfterFinishedOptions;
    type Shadow = Self;

    /// A controller deleting through the context's client, reading the shared Job informer.
    fn build(cx: Context<'_>, options: TtlAfterFinishedOptions) -> Self {
        let jobs = cx.informer::<Job>();
        let (queue, mut wiring) = cx.wiring(QUEUE_NAME);
        wiring.watch(&jobs, JobHandler(queue));
        Self {
            wiring,
            jobs: jobs.lister(),
            client: cx.client,
            clock: Arc::new(SystemClock),
            metrics: options.metrics,
            shadow: None,
            ignore_ttl_seconds: options.ignore_ttl_seconds,
        }
    }

    /// A Job whose TTL has run out and that upstream has not deleted is recorded in `state` as a
    /// disagreement; nothing is deleted.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: TtlAfterFinishedOptions) -> Self {
        let options = TtlAfterFinishedOptions {
            metrics: Arc::new(NoTtlMetrics),
            ..options
        };
        let mut c = Self::build(cx, options);
        c.shadow = Some(state);
        c
    }
}

impl Steps for TtlAfterFinishedController {
    const NAME: &'static str = COMPONENT;
    type Object = Job;
    /// The decision, and the Job it was made on.
    type Plan = (Decision, Arc<Job>);
    type Error = SyncError;

    fn get(&self, key: &ObjectKey) -> Option<Arc<Job>> {
        let mut job = self.jobs.get(key.namespace(), key.name())?;
        if self.ignore_ttl_seconds
            && let Some(spec) = Arc::make_mut(&mut job).spec.as_mut()
            && spec.ttl_seconds_after_finished.is_some()
        {
            spec.ttl_seconds_after_finished = Some(0);
        }
        Some(job)
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_deref()
    }

    fn client(&self) -> &Client {
        &self.client
    }

    /// Only a Job due for deletion has a plan; in shadow mode every decision is compared, so that a
    /// Job no longer due clears what was reported for it.
    fn decide(&self, key: &ObjectKey, job: Arc<Job>) -> Result<Decided<Self::Plan>, SyncError> {
        let decision = decide(&job, self.clock.now()).map_err(|source| SyncError::Expiry {
            key: key.clone(),
            source,
        })?;
        Ok(match decision {
            Decision::Delete { .. } => Decided::Plan((decision, job)),
            _ if self.shadow.is_some() => Decided::Plan((decision, job)),
            _ => Decided::Nothing(later(decision)),
        })
    }

    /// A Job due for deletion is a disagreement until upstream deletes it.
    fn compare(&self, _: &ObjectKey, (decision, job): Self::Plan) -> Comparison {
        let differences = match decision {
            Decision::Delete { expired_at } => vec![format!(
                "job: kcm-rs would delete it (its TTL after finishing ran out at {expired_at})"
            )],
            _ => Vec::new(),
        };
        Comparison {
            fingerprint: controller::shadow::fingerprint::<Job, Job>(&job, &[]),
            differences,
            again: later(decision),
        }
    }

    /// Deletes the Job if a fresh read still finds it due (upstream `processJob`).
    async fn execute(&self, key: &ObjectKey, _: Self::Plan) -> Result<Option<Duration>, SyncError> {
        match delete_if_due(&self.client, &*self.clock, key).await? {
            Cleanup::Nothing => Ok(None),
            Cleanup::Later(d) => Ok(Some(d)),
            Cleanup::Deleted { late_seconds } => {
                self.metrics.job_deletion_duration(late_seconds);
                tracing::debug!(job = %key, "deleted: its TTL after finishing ran out");
                Ok(None)
            }
        }
    }
}

fn later(decision: Decision) -> Option<Duration> {
    match decision {
        Decision::Later(d) => Some(d),
        Decision::Nothing | Decision::Delete { .. } => None,
    }
}

/// Enqueues finished Jobs with a TTL on every add and update (upstream `addJob`, `updateJob`);
/// deletions concern nobody.
#[derive(Debug, Clone)]
struct JobHandler(WorkQueue<ObjectKey>);

impl JobHandler {
    fn consider(&self, job: &Job) {
        if job.metadata.deletion_timestamp.is_none() && needs_cleanup(job) {
            self.0.add(ObjectKey::of(job));
        }
    }
}

impl EventHandler<Job> for JobHandler {
    fn on_add(&self, job: &Arc<Job>, _: bool) {
        self.consider(job);
    }

    fn on_update(&self, _: &Arc<Job>, job: &Arc<Job>) {
        self.consider(job);
    }

    fn on_delete(&self, _: &DeletedObject<Job>) {}
}

impl Controller for TtlAfterFinishedController {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}
