//! Wiring (the CronJob and Job informers and their handlers, the work queue, the workers) and the
//! entry of a sync (upstream `ControllerV2`).

use std::{future::Future, sync::Arc, time::Duration};

use controller::{
    Build, Clock, Context, Controller, EventRecorder, Reconciler, SystemClock, Wiring,
    pod_util::controller_of, shadow::ShadowState,
};
use informer::{InformerOptions, LabelMatcher, Lister, ObjectKey};
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
        let cron_jobs = cx.factory.namespaced::<CronJob>(InformerOptions::default());
        let jobs = cx.factory.namespaced::<Job>(InformerOptions::default());
        let (queue, wiring) = cx.wiring(QUEUE_NAME);
        let mut wiring = wiring.with_events(recorder.clone());
        let executor = Arc::new(Executor {
            client: cx.client,
            recorder,
            metrics: options.metrics,
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
        let resync = cx.options.resync_period;
        wiring.register(cron_jobs.add_event_handler(on_cron_jobs, resync));
        wiring.register(jobs.add_event_handler(on_jobs, resync));
        Self {
            wiring,
            cron_jobs: cron_jobs.lister(),
            jobs: jobs.lister(),
            executor,
            clock: options.clock,
            local: options.local,
            ignore_suspend: options.ignore_suspend,
            shadow: None,
        }
    }

    /// One sync of the CronJob at `key`: `Ok(Some(d))` looks again after `d`, at its next slot.
    pub async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, SyncError> {
        let Some(mut cron_job) = self.cron_jobs.get(key.namespace(), key.name()) else {
            if let Some(state) = &self.shadow {
                state.forget(COMPONENT, key.as_str());
            }
            return Ok(None);
        };
        if self.ignore_suspend {
            Arc::make_mut(&mut cron_job).spec.suspend = None;
        }
        let jobs = self.jobs_of(&cron_job);
        let now = self.clock.now();
        if let Some(state) = &self.shadow {
            let (differences, again) = shadow::differences(&cron_job, &jobs, now, &self.local);
            let fingerprint = controller::shadow::fingerprint(&*cron_job, &jobs);
            let settle = state
                .observe_sync(&self.executor.client, COMPONENT, key, fingerprint, differences)
                .await;
            return Ok(match (again, settle) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            });
        }
        let run = Run {
            executor: &self.executor,
            key,
            jobs: &jobs,
            now,
            local: &self.local,
        };
        run.sync(&cron_job).await
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

impl Reconciler for CronJobController {
    type Error = SyncError;

    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<Option<Duration>, SyncError>> + Send {
        CronJobController::sync(self, key)
    }
}
