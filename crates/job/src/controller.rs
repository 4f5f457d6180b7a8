//! Wiring: informers and handlers, the `job` and `job_orphan_pod` queues, workers (upstream
//! `Controller.Run`, `syncJob`'s entry and `syncOrphanPod`).

use controller::compact_pod::Pod;
use std::{future::Future, sync::Arc, time::Duration};

use controller::Build;
use controller::ConsistencyStore;
use controller::Context;
use controller::Controller;
use controller::EventRecorder;
use controller::Expectations;
use controller::FeatureGates;
use controller::KubePodControl;
use controller::NoWrites;
use controller::PodControl;
use controller::Reconciler;
use controller::SystemClock;
use controller::Wiring;
use controller::WorkerOptions;
use controller::run_workers;
use controller::shadow::ShadowState;
use futures::{FutureExt as _, future::BoxFuture};
use informer::{SharedInformer, WorkQueue, workqueue::ItemExponentialRateLimiter};
use k8s_openapi::api::batch::v1::Job;
use tokio_util::sync::CancellationToken;

use crate::{
    backoff::BackoffStore,
    delays::JobDelays,
    executor::{Executor, SyncError},
    finalizer_expectations::FinalizerExpectations,
    handlers::{Handlers, JobHandler, PodHandler},
    metrics::JobMetrics,
    observed_finishes::{FinishObserver, ObservedFinishes},
    orphans::{OrphanCleaner, OrphanKey},
};

/// The work queues' names, the `name` label of the workqueue metrics (upstream's).
pub const QUEUE_NAME: &str = "job";
pub const ORPHAN_QUEUE_NAME: &str = "job_orphan_pod";
/// The events' source component (upstream: `job-controller`).
pub const COMPONENT: &str = "job-controller";
/// The queues' per-item backoff: 1 s doubling to 1 min, no token bucket (upstream
/// `DefaultJobApiBackOff`, `MaxJobApiBackOff`).
pub const API_BACKOFF_BASE: Duration = Duration::from_secs(1);
pub const API_BACKOFF_MAX: Duration = Duration::from_secs(60);

/// What is this controller's alone; the rest comes with its [`Context`]. Of the feature gates it
/// reads `StaleControllerConsistencyJob` (no sync while a cache is older than a pod create or status
/// write this controller made) and `MutableSchedulingDirectivesForSuspendedJobs` (suspending a Job
/// clears its startTime).
#[derive(Clone)]
pub struct JobOptions {
    /// Where the Job metrics go (upstream's `job_controller_*`).
    pub metrics: Arc<dyn JobMetrics>,
    /// Testing only (shadow mode's self-check): plan as if no Job were suspended.
    pub ignore_suspend: bool,
    /// The backoff's steps and the batch period; for tests other than upstream's, which shadow mode
    /// never uses.
    pub delays: JobDelays,
}

impl Default for JobOptions {
    fn default() -> Self {
        Self {
            metrics: Arc::new(crate::metrics::NoJobMetrics),
            ignore_suspend: false,
            delays: JobDelays::UPSTREAM,
        }
    }
}

impl std::fmt::Debug for JobOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobOptions")
            .field("ignore_suspend", &self.ignore_suspend)
            .field("delays", &self.delays)
            .finish_non_exhaustive()
    }
}

/// The Job controller.
pub struct JobController<P> {
    wiring: Wiring,
    handlers: Handlers,
    jobs: SharedInformer<Job>,
    pods: SharedInformer<Pod>,
    executor: Executor<P>,
    features: FeatureGates,
    ignore_suspend: bool,
    shadow: Option<Shadow>,
}

/// What a shadow controller keeps beside the live one's state.
struct Shadow {
    state: Arc<ShadowState>,
    /// Finished pods seen, standing in for the backoff record upstream builds as it counts them.
    finishes: Arc<ObservedFinishes>,
}

impl<P> std::fmt::Debug for JobController<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobController")
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

impl Build for JobController<KubePodControl> {
    type Options = JobOptions;
    type Shadow = JobController<NoWrites>;

    /// A controller writing through the context's client, reading the shared informers.
    fn build(cx: Context<'_>, options: JobOptions) -> Self {
        let recorder = cx.recorder(COMPONENT);
        let control = KubePodControl::new(cx.client.clone(), recorder.clone());
        Self::with_control(cx, control, recorder, options)
    }

    /// Plans every sync and records in `state` where the plan disagrees with what upstream's
    /// controller did.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, options: JobOptions) -> JobController<NoWrites> {
        // Judged against upstream's controller, so on upstream's waits.
        let options = JobOptions {
            metrics: Arc::new(crate::metrics::NoJobMetrics),
            delays: JobDelays::UPSTREAM,
            ..options
        };
        let mut c = JobController::with_control(cx, NoWrites, EventRecorder::in_memory(), options);
        let finishes = Arc::new(ObservedFinishes::default());
        let observer = c.pods.add_event_handler(FinishObserver(finishes.clone()), None);
        c.wiring.register(observer);
        c.shadow = Some(Shadow { state, finishes });
        c
    }
}

impl<P: PodControl> JobController<P> {
    /// A controller writing pods through `control` and events to `recorder`.
    pub fn with_control(cx: Context<'_>, control: P, recorder: EventRecorder, options: JobOptions) -> Self {
        let jobs = cx.informer::<Job>();
        let pods = cx.owned_informer::<Pod>();
        let clock: Arc<dyn controller::Clock> = Arc::new(SystemClock);
        let queue = WorkQueue::with_limiter(
            ItemExponentialRateLimiter::new(API_BACKOFF_BASE, API_BACKOFF_MAX),
            QUEUE_NAME,
            cx.metrics,
        );
        let handlers = Handlers {
            jobs: jobs.lister(),
            pods: pods.lister(),
            expectations: Arc::new(Expectations::new()),
            finalizers: Arc::new(FinalizerExpectations::default()),
            queue: queue.clone(),
            orphan_queue: WorkQueue::with_limiter(
                ItemExponentialRateLimiter::new(API_BACKOFF_BASE, API_BACKOFF_MAX),
                ORPHAN_QUEUE_NAME,
                cx.metrics,
            ),
            metrics: options.metrics.clone(),
            clock: clock.clone(),
            backoff: Arc::new(BackoffStore::default()),
            finished: Arc::default(),
            consistency: Arc::new(ConsistencyStore::gated(
                cx.options.features.stale_controller_consistency_job,
            )),
            delays: options.delays,
        };
        let mut wiring = cx.wiring_of(QUEUE_NAME, queue).with_events(recorder.clone());
        wiring.watch(&jobs, JobHandler(handlers.clone()));
        wiring.watch(&pods, PodHandler(handlers.clone()));
        let executor = Executor {
            control,
            client: cx.client,
            recorder,
            expectations: handlers.expectations.clone(),
            finalizers: handlers.finalizers.clone(),
            backoff: handlers.backoff.clone(),
            finished: handlers.finished.clone(),
            clock,
            metrics: options.metrics,
            consistency: handlers.consistency.clone(),
        };
        Self {
            wiring,
            handlers,
            jobs,
            pods,
            executor,
            features: cx.options.features,
            ignore_suspend: options.ignore_suspend,
            shadow: None,
        }
    }

    /// One item of the orphan queue (upstream `syncOrphanPod`); see `orphans.rs`.
    pub async fn sync_orphan(&self, key: &OrphanKey) -> Result<Option<Duration>, SyncError> {
        let cleaner = OrphanCleaner {
            pods: &self.handlers.pods,
            jobs: &self.handlers.jobs,
            control: &self.executor.control,
            read_only: self.shadow.is_some(),
        };
        cleaner.sync(key).await.map(|()| None)
    }
}

impl<P: PodControl> Controller for JobController<P> {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }

    /// The orphan-pod workers: as many as the Job workers (upstream starts one of each per
    /// `--concurrent-job-syncs`).
    fn run_beside(
        self: &Arc<Self>,
        options: WorkerOptions,
        cancel: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        let queue = self.handlers.orphan_queue.clone();
        let metrics = self.wiring.metrics().clone();
        let orphans = Arc::new(OrphanPods(self.clone()));
        Some(run_workers(COMPONENT, orphans, queue, metrics, options, cancel).boxed())
    }
}

/// The orphan-pod worker's view of the controller.
struct OrphanPods<P>(Arc<JobController<P>>);

impl<P: PodControl> Reconciler<OrphanKey> for OrphanPods<P> {
    type Error = SyncError;

    fn sync(&self, key: &OrphanKey) -> impl Future<Output = Result<Option<Duration>, SyncError>> + Send {
        self.0.sync_orphan(key)
    }
}

/// The steps of the sync, in a file of its own.
#[path = "sync.rs"]
mod sync;

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
