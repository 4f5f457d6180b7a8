//! Wiring (the CronJob and Job informers and their handlers, the work queue, the workers) and the
//! steps of a sync (upstream `ControllerV2`).

use std::{sync::Arc, time::Duration};

use controller::{
    Build, Clock, Comparison, ConsistencyStore, Context, Controller, Decided, EventRecorder, Freshness,
    Steps, SystemClock, Wiring, pod_util::controller_of, shadow::ShadowState,
};
use informer::{LabelMatcher, Lister, ObjectKey, SharedInformer};
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob, Job};

use crate::{
    error::SyncError,
    executor::Executor,
    handlers::{CronJobHandler, JobHandler},
    metrics::{CronJobMetrics, NoCronJobMetrics},
    shadow,
    sync::Run,
};

/// The work queue's name, the `name` label of the workqueue metrics (upstream: `cronjob`).
pub const QUEUE_NAME: &str = "cronjob";
/// KCM's name for the controller, its client's and its events' source (upstream:
/// `cronjob-controller`).
pub const COMPONENT: &str = "cronjob-controller";

/// How soon a CronJob whose cache was older than this controller's own status write is looked at
/// again, should the event of that write not wake it first (kcm-rs's own bound: upstream has no
/// such gate; one second is a few hundred times the event's usual delay, and a tenth of a slot of
/// `@every 10s`).
pub const STALE_RECHECK: Duration = Duration::from_secs(1);

/// What is this controller's alone; the rest comes with its [`Context`].
#[derive(Clone)]
pub struct CronJobOptions {
    /// The zone of a schedule with no `spec.timeZone`: the controller manager's own, as Go's
    /// `time.Local` is upstream's (the system's zone; UTC in most containers).
    pub local: TimeZone,
    /// Where the creation skew goes.
    pub metrics: Arc<dyn CronJobMetrics>,
    /// The time (tests: a fake clock).
    pub clock: Arc<dyn Clock>,
    /// Testing only (shadow mode's self-check): decide as if no CronJob were suspended.
    pub ignore_suspend: bool,
}

impl Default for CronJobOptions {
    fn default() -> Self {
        Self {
            local: TimeZone::try_system().unwrap_or(TimeZone::UTC),
            metrics: Arc::new(NoCronJobMetrics),
            clock: Arc::new(SystemClock),
            ignore_suspend: false,
        }
    }
}

impl std::fmt::Debug for CronJobOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CronJobOptions")
            .field("local", &self.local)
            .field("ignore_suspend", &self.ignore_suspend)
            .finish_non_exhaustive()
    }
}

/// The CronJob controller.
pub struct CronJobController {
    wiring: Wiring,
    cron_jobs: Lister<CronJob>,
    /// The CronJob informer itself, for the newest version it applied (the read-your-writes check
    /// in [`Steps::decide`]).
    cron_job_informer: SharedInformer<CronJob>,
    jobs: Lister<Job>,
    executor: Arc<Executor>,
    clock: Arc<dyn Clock>,
    local: TimeZone,
    ignore_suspend: bool,
    /// Set in shadow mode: the sync is compared with what upstream did instead of executed.
    shadow: Option<Arc<ShadowState>>,
}

impl std::fmt::Debug for CronJobController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CronJobController").finish_non_exhaustive()
    }
}

impl Build for CronJobController {
    type Options = CronJobOptions;
    type Shadow = Self;

    /// A controller writing through the context's client, reading the shared CronJob and Job
    /// informers.
    fn build(cx: Context<'_>, options: CronJobOptions) -> Self {
        let recorder = cx.recorder(COMPONENT);
        Self::with_recorder(cx, recorder, options)
    }

    /// A sync that would write is recorded in `state` as a disagreement until upstream has done
    /// the same; nothing is written, no event either.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: CronJobOptions) -> Self {
        let options = CronJobOptions {
            metrics: Arc::new(NoCronJobMetrics),
            ..options
        };
        let mut c = Self::with_recorder(cx, EventRecorder::in_memory(), options);
        c.shadow = Some(state);
        c
    }
}

impl CronJobController {
    fn with_recorder(cx: Context<'_>, recorder: EventRecorder, options: CronJobOptions) -> Self {
        let cron_jobs = cx.informer::<CronJob>();
        let jobs = cx.informer::<Job>();
        let (queue, wiring) = cx.wiring(QUEUE_NAME);
        let mut wiring = wiring.with_events(recorder.clone());
        let executor = Arc::new(Executor {
            client: cx.client,
            recorder,
            metrics: options.metrics,
            consistency: ConsistencyStore::new(),
        });
        let on_jobs = JobHandler {
            cron_jobs: cron_jobs.lister(),
            queue: queue.clone(),
        };
        let on_cron_jobs = CronJobHandler {
            queue,
            clock: options.clock.clone(),
            local: options.local.clone(),
            executor: executor.clone(),
        };
        wiring.watch(&cron_jobs, on_cron_jobs);
        wiring.watch(&jobs, on_jobs);
        Self {
            wiring,
            cron_jobs: cron_jobs.lister(),
            cron_job_informer: cron_jobs,
            jobs: jobs.lister(),
            executor,
            clock: options.clock,
            local: options.local,
            ignore_suspend: options.ignore_suspend,
            shadow: None,
        }
    }

    /// The Jobs of the CronJob's namespace whose controller reference names it (upstream
    /// `getJobsToBeReconciled` compares the name only, not the kind or UID).
    fn jobs_of(&self, cron_job: &CronJob) -> Vec<Arc<Job>> {
        let ns = cron_job.metadata.namespace.as_deref().unwrap_or_default();
        let name = cron_job.metadata.name.as_deref();
        self.jobs
            .list_namespace(ns, &LabelMatcher::Everything)
            .into_iter()
            .filter(|j| controller_of(&j.metadata).is_some_and(|r| Some(r.name.as_str()) == name))
            .collect()
    }
}

impl Controller for CronJobController {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

/// What a CronJob's sync decides on: the CronJob, its Jobs and the time. The decision itself is
/// made as it is carried out ([`Run`]): upstream reads the active Jobs afresh in between.
#[derive(Debug)]
pub struct Snapshot {
    cron_job: Arc<CronJob>,
    jobs: Vec<Arc<Job>>,
    now: jiff::Timestamp,
}

impl Steps for CronJobController {
    const NAME: &'static str = COMPONENT;
    /// Upstream's `processNextWorkItem` forgets a key only when the sync asks for it again after a
    /// delay; a sync with nothing to come back for (the CronJob gone, suspended, its schedule
    /// unparseable) leaves its failures counted.
    const FORGETS_WHEN_DONE: bool = false;
    type Object = CronJob;
    type Plan = Snapshot;
    type Error = SyncError;

    /// Reading one's own writes, which upstream's CronJob controller does not do (its 1.36 gates
    /// cover the ReplicaSet and Job controllers): no decision on a CronJob cache older than this
    /// controller's last status write of it. A sync on the CronJob as it was before the write that
    /// listed a slot's Job, once that Job is gone from the Job cache (deleted by someone else),
    /// would start the slot again: a second Job of the same name, which the listed entry's name
    /// then answers for, so that the entry never leaves the list.
    ///
    /// A quiet recheck rather than an error retried with backoff: this stale cache comes with
    /// ordinary slots (whenever the new Job's event wakes the CronJob before the status write
    /// reaches its cache) and is not a failure.
    fn ensure_fresh(&self, key: &ObjectKey) -> Result<Freshness, SyncError> {
        let applied = |_: &'static str| {
            self.cron_job_informer
                .last_synced_resource_version_in(key.namespace())
        };
        Ok(
            match self.executor.consistency.ensure_ready(key.as_str(), applied) {
                Ok(()) => Freshness::Fresh,
                Err(stale) => {
                    tracing::debug!(cronjob = %key, "not syncing yet: {stale}");
                    Freshness::Recheck(STALE_RECHECK)
                }
            },
        )
    }

    fn forget(&self, key: &ObjectKey) {
        self.executor.consistency.clear(key.as_str());
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<CronJob>> {
        let mut cron_job = self.cron_jobs.get(key.namespace(), key.name())?;
        if self.ignore_suspend {
            Arc::make_mut(&mut cron_job).spec.suspend = None;
        }
        Some(cron_job)
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_deref()
    }

    fn client(&self) -> &kube::Client {
        &self.executor.client
    }

    fn decide(&self, _: &ObjectKey, cron_job: Arc<CronJob>) -> Result<Decided<Snapshot>, SyncError> {
        let jobs = self.jobs_of(&cron_job);
        Ok(Decided::Plan(Snapshot {
            cron_job,
            jobs,
            now: self.clock.now(),
        }))
    }

    /// The Jobs and status the CronJob would get, against upstream's; the next slot is looked at
    /// whatever the comparison finds.
    fn compare(&self, _: &ObjectKey, s: Snapshot) -> Comparison {
        let (differences, again) = shadow::differences(&s.cron_job, &s.jobs, s.now, &self.local);
        Comparison {
            fingerprint: controller::shadow::fingerprint(&*s.cron_job, &s.jobs),
            differences,
            again,
        }
    }

    async fn execute(&self, key: &ObjectKey, s: Snapshot) -> Result<Option<Duration>, SyncError> {
        let run = Run {
            executor: &self.executor,
            key,
            jobs: &s.jobs,
            now: s.now,
            local: &self.local,
        };
        run.sync(&s.cron_job).await
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
