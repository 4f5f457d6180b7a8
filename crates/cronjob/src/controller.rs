//! Wiring (the CronJob and Job informers and their handlers, the work queue, the workers) and the
//! entry of a sync (upstream `ControllerV2`).

use std::{future::Future, sync::Arc, time::Duration};

use controller::{
    Clock, Controller, ControllerMetrics, EventRecorder, Reconciler, SystemClock, Wiring,
    pod_util::controller_of, shadow::ShadowState,
};
use informer::{InformerOptions, LabelMatcher, Lister, ObjectKey, SharedInformerFactory, WorkQueue};
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::Client;

use crate::{
    error::SyncError,
    executor::Executor,
    handlers::{CronJobHandler, JobHandler},
    metrics::{CronJobMetrics, NoCronJobMetrics},
    shadow,
    sync::Run,
};

/// Workers (kube-controller-manager `--concurrent-cron-job-syncs` default).
pub const DEFAULT_WORKERS: usize = 5;
/// The work queue's name, the `name` label of the workqueue metrics (upstream: `cronjob`).
pub const QUEUE_NAME: &str = "cronjob";
/// KCM's name for the controller, its client's and its events' source (upstream:
/// `cronjob-controller`).
pub const COMPONENT: &str = "cronjob-controller";

#[derive(Debug, Clone)]
pub struct CronJobOptions {
    pub workers: usize,
    /// This process's identity, written as the reportingInstance of its events.
    pub instance: String,
    /// How often the informers replay every cached object to the handlers (KCM:
    /// `--min-resync-period` × [1, 2), drawn once). `None`: no resync.
    pub resync_period: Option<Duration>,
    /// The zone of a schedule with no `spec.timeZone`: the controller manager's own, as Go's
    /// `time.Local` is upstream's (the system's zone; UTC in most containers).
    pub local: TimeZone,
}

impl Default for CronJobOptions {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            instance: COMPONENT.to_owned(),
            resync_period: None,
            local: TimeZone::try_system().unwrap_or(TimeZone::UTC),
        }
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
    /// Set in shadow mode: the sync is compared with what upstream did instead of executed.
    shadow: Option<Arc<ShadowState>>,
}

impl std::fmt::Debug for CronJobController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CronJobController").finish_non_exhaustive()
    }
}

impl CronJobController {
    /// A controller writing through `client`, reading through `factory`'s shared informers.
    pub fn new(
        factory: &SharedInformerFactory,
        client: Client,
        options: CronJobOptions,
        metrics: &dyn ControllerMetrics,
        cron_job_metrics: Arc<dyn CronJobMetrics>,
    ) -> Self {
        let recorder = EventRecorder::new(client.clone(), COMPONENT, &options.instance);
        Self::with_clock(
            factory,
            client,
            recorder,
            options,
            metrics,
            cron_job_metrics,
            Arc::new(SystemClock),
        )
    }

    /// A read-only controller for shadow mode: a sync that would write is recorded in `state` as a
    /// disagreement until upstream has done the same.
    pub fn shadow(
        factory: &SharedInformerFactory,
        client: Client,
        state: Arc<ShadowState>,
        options: CronJobOptions,
        metrics: &dyn ControllerMetrics,
    ) -> Self {
        let mut c = Self::with_clock(
            factory,
            client,
            EventRecorder::in_memory(),
            options,
            metrics,
            Arc::new(NoCronJobMetrics),
            Arc::new(SystemClock),
        );
        c.shadow = Some(state);
        c
    }

    /// [`Self::new`] with the events going to `recorder` and the time taken from `clock`.
    pub fn with_clock(
        factory: &SharedInformerFactory,
        client: Client,
        recorder: EventRecorder,
        options: CronJobOptions,
        metrics: &dyn ControllerMetrics,
        cron_job_metrics: Arc<dyn CronJobMetrics>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let cron_jobs = factory.namespaced::<CronJob>(InformerOptions::default());
        let jobs = factory.namespaced::<Job>(InformerOptions::default());
        let queue = WorkQueue::named(QUEUE_NAME, metrics);
        let executor = Arc::new(Executor {
            client,
            recorder: recorder.clone(),
            metrics: cron_job_metrics,
        });
        let mut wiring = Wiring::new(queue.clone(), options.workers, metrics.sync_metrics(QUEUE_NAME))
            .with_events(recorder);
        let on_jobs = JobHandler {
            cron_jobs: cron_jobs.lister(),
            queue: queue.clone(),
        };
        let on_cron_jobs = CronJobHandler {
            queue,
            clock: clock.clone(),
            local: options.local.clone(),
            executor: executor.clone(),
        };
        wiring.register(cron_jobs.add_event_handler(on_cron_jobs, options.resync_period));
        wiring.register(jobs.add_event_handler(on_jobs, options.resync_period));
        Self {
            wiring,
            cron_jobs: cron_jobs.lister(),
            jobs: jobs.lister(),
            executor,
            clock,
            local: options.local,
            shadow: None,
        }
    }

    /// One sync of the CronJob at `key`: `Ok(Some(d))` looks again after `d`, at its next slot.
    pub async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, SyncError> {
        let Some(cron_job) = self.cron_jobs.get(key.namespace(), key.name()) else {
            if let Some(state) = &self.shadow {
                state.forget(COMPONENT, key.as_str());
            }
            return Ok(None);
        };
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
