//! Wiring: informers and handlers, the `job` and `job_orphan_pod` queues, workers (upstream
//! `Controller.Run`, `syncJob`'s entry and `syncOrphanPod`).

use controller::compact_pod::Pod;
use std::{future::Future, sync::Arc, time::Duration};

use controller::ConsistencyStore;
use controller::Controller;
use controller::ControllerMetrics;
use controller::EventRecorder;
use controller::Expectations;
use controller::FeatureGates;
use controller::KubePodControl;
use controller::NoWrites;
use controller::OWNER_INDEX;
use controller::Owner;
use controller::PodControl;
use controller::Reconciler;
use controller::SystemClock;
use controller::Wiring;
use controller::WorkerOptions;
use controller::candidates;
use controller::events::TYPE_WARNING;
use controller::object_reference;
use controller::owner_index;
use controller::run_workers;
use controller::shadow::ShadowState;
use futures::{FutureExt as _, future::BoxFuture};
use informer::{
    InformerOptions, ObjectKey, SharedInformer, SharedInformerFactory, WorkQueue,
    workqueue::ItemExponentialRateLimiter,
};
use k8s_openapi::api::batch::v1::Job;
use kube::Client;
use tokio_util::sync::CancellationToken;

use crate::{
    backoff::BackoffStore,
    conditions::{EVENT_UNKNOWN_COMPLETION_MODE, EVENT_UNKNOWN_COMPLETION_MODE_MESSAGE},
    executor::{Executor, GR_JOBS, GR_PODS, SyncError},
    finalizer_expectations::FinalizerExpectations,
    handlers::{Handlers, JobHandler, PodHandler},
    metrics::{ACTION_RECONCILING, JobMetrics},
    observed_finishes::{FinishObserver, ObservedFinishes},
    orphans::{OrphanCleaner, OrphanKey},
    plan::{Decision, ManageOutcome, PlanError, SyncInput, plan_pods, status_plan},
    shadow,
    spec::completion_mode_label,
};

/// Workers (kube-controller-manager `--concurrent-job-syncs` default).
pub const DEFAULT_WORKERS: usize = 5;
/// The work queues' names, the `name` label of the workqueue metrics (upstream's).
pub const QUEUE_NAME: &str = "job";
pub const ORPHAN_QUEUE_NAME: &str = "job_orphan_pod";
/// The events' source component (upstream: `job-controller`).
pub const COMPONENT: &str = "job-controller";
/// The queues' per-item backoff: 1 s doubling to 1 min, no token bucket (upstream
/// `DefaultJobApiBackOff`, `MaxJobApiBackOff`).
pub const API_BACKOFF_BASE: Duration = Duration::from_secs(1);
pub const API_BACKOFF_MAX: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct JobOptions {
    pub workers: usize,
    /// This process's identity, written as the reportingInstance of its events.
    pub instance: String,
    /// The feature gates the controller reads (`--feature-gates`; default: Kubernetes 1.36's):
    /// `StaleControllerConsistencyJob` (no sync while a cache is older than a pod create or status
    /// write this controller made) and `MutableSchedulingDirectivesForSuspendedJobs` (suspending a
    /// Job clears its startTime).
    pub features: FeatureGates,
    /// How often the informers replay every cached object to the handlers (KCM:
    /// `--min-resync-period` × [1, 2), drawn once). `None`: no resync.
    pub resync_period: Option<Duration>,
    /// Testing only (shadow mode's self-check): plan as if no Job were suspended.
    pub ignore_suspend: bool,
}

impl Default for JobOptions {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            instance: COMPONENT.to_owned(),
            features: FeatureGates::default(),
            resync_period: None,
            ignore_suspend: false,
        }
    }
}

/// The Job controller.
pub struct JobController<P> {
    wiring: Wiring,
    handlers: Handlers,
    jobs: SharedInformer<Job>,
    pods: SharedInformer<Pod>,
    executor: Executor<P>,
    options: JobOptions,
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
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl JobController<KubePodControl> {
    /// A controller writing through `client`, reading through `factory`'s shared informers.
    pub fn new(
        factory: &SharedInformerFactory,
        client: Client,
        options: JobOptions,
        metrics: &dyn ControllerMetrics,
        job_metrics: Arc<dyn JobMetrics>,
    ) -> Self {
        let recorder = EventRecorder::new(client.clone(), COMPONENT, &options.instance);
        let control = KubePodControl::new(client.clone(), recorder.clone());
        Self::with_control(factory, client, control, recorder, options, metrics, job_metrics)
    }
}

impl JobController<NoWrites> {
    /// A read-only controller for shadow mode: plans every sync and records in `state` where the plan
    /// disagrees with what upstream's controller did.
    pub fn shadow(
        factory: &SharedInformerFactory,
        client: Client,
        state: Arc<ShadowState>,
        options: JobOptions,
        metrics: &dyn ControllerMetrics,
    ) -> Self {
        let mut c = Self::with_control(
            factory,
            client,
            NoWrites,
            EventRecorder::in_memory(),
            options,
            metrics,
            Arc::new(crate::metrics::NoJobMetrics),
        );
        let finishes = Arc::new(ObservedFinishes::default());
        let observer = c.pods.add_event_handler(FinishObserver(finishes.clone()), None);
        c.wiring.register(observer);
        c.shadow = Some(Shadow { state, finishes });
        c
    }
}

impl<P: PodControl> JobController<P> {
    pub fn with_control(
        factory: &SharedInformerFactory,
        client: Client,
        control: P,
        recorder: EventRecorder,
        options: JobOptions,
        metrics: &dyn ControllerMetrics,
        job_metrics: Arc<dyn JobMetrics>,
    ) -> Self {
        let jobs = factory.namespaced::<Job>(InformerOptions::default());
        let pods = factory.namespaced::<Pod>(InformerOptions::default());
        pods.store().add_index(OWNER_INDEX, owner_index());
        let clock: Arc<dyn controller::Clock> = Arc::new(SystemClock);
        let queue = WorkQueue::with_limiter(
            ItemExponentialRateLimiter::new(API_BACKOFF_BASE, API_BACKOFF_MAX),
            QUEUE_NAME,
            metrics,
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
                metrics,
            ),
            metrics: job_metrics.clone(),
            clock: clock.clone(),
            backoff: Arc::new(BackoffStore::default()),
            finished: Arc::default(),
        };
        let mut wiring = Wiring::new(queue, options.workers, metrics.sync_metrics(QUEUE_NAME))
            .with_events(recorder.clone());
        wiring.register(jobs.add_event_handler(JobHandler(handlers.clone()), options.resync_period));
        wiring.register(pods.add_event_handler(PodHandler(handlers.clone()), options.resync_period));
        let executor = Executor {
            control,
            client,
            recorder,
            expectations: handlers.expectations.clone(),
            finalizers: handlers.finalizers.clone(),
            backoff: handlers.backoff.clone(),
            finished: handlers.finished.clone(),
            clock,
            metrics: job_metrics,
            consistency: Arc::new(ConsistencyStore::new()),
        };
        Self {
            wiring,
            handlers,
            jobs,
            pods,
            executor,
            options,
            shadow: None,
        }
    }

    /// One sync of the Job at `key` (upstream `syncJob`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<Option<Duration>, SyncError> {
        let started = tokio::time::Instant::now();
        let h = &self.handlers;
        // Read our own writes: no sync while a cache is older than what this controller wrote
        // (upstream checks before reading the Job).
        if self.options.features.stale_controller_consistency_job {
            self.wiring
                .ensure_fresh(&self.executor.consistency, key, |gr| match gr {
                    GR_PODS => self.pods.last_synced_resource_version(),
                    GR_JOBS => self.jobs.last_synced_resource_version(),
                    _ => u64::MAX,
                })
                .map_err(|source| SyncError::Stale {
                    key: key.clone(),
                    source,
                })?;
        }
        let Some(mut job) = h.jobs.get(key.namespace(), key.name()) else {
            h.expectations.delete(key.as_str());
            h.finalizers.delete(key.as_str());
            self.executor.consistency.clear(key.as_str());
            self.executor.backoff.remove(key.as_str());
            self.forget_shadow(key);
            return Ok(None);
        };
        if self.options.ignore_suspend
            && let Some(spec) = Arc::make_mut(&mut job).spec.as_mut()
        {
            spec.suspend = Some(false);
        }
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        if crate::spec::is_finished(&job) {
            h.finished.observed(uid);
        } else if h.finished.awaited(uid) {
            tracing::debug!(job = %key, "written finished, not yet seen so in the cache; skipping");
            return Ok(None);
        }
        let satisfied = h.expectations.satisfied(key.as_str());
        let candidates = candidates(self.pods.store(), &*job);
        let expected = h.finalizers.expected(key.as_str());
        let backoff = match &self.shadow {
            Some(s) => s.finishes.record(&job, &candidates),
            None => self.executor.backoff.get(key.as_str()),
        };
        let input = SyncInput {
            job: &job,
            candidates: &candidates,
            expectations_satisfied: satisfied,
            expected_rm_finalizers: &expected,
            backoff,
            now: self.executor.clock.now(),
            suspend_clears_start_time: self
                .options
                .features
                .mutable_scheduling_directives_for_suspended_jobs,
        };
        let mode = completion_mode_label(&job);
        let plan = match plan_pods(&input) {
            Ok(Decision::Sync(plan)) => *plan,
            Ok(Decision::ManagedExternally(name)) => {
                tracing::debug!(job = %key, controller = name, "managed by another controller; skipping");
                self.forget_shadow(key);
                return Ok(None);
            }
            Ok(Decision::Finished) => {
                self.executor.backoff.remove(key.as_str());
                if let Some(Shadow { state, .. }) = &self.shadow {
                    // The final status is compared before the Job is forgotten: a finished Job
                    // gets no more events, so a difference would otherwise never be seen.
                    let differences = shadow::final_status_differences(&input);
                    let fingerprint = controller::shadow::fingerprint(&*job, &candidates);
                    return Ok(state
                        .observe_sync(&self.executor.client, COMPONENT, key, fingerprint, differences)
                        .await);
                }
                return Ok(None);
            }
            Ok(Decision::UnknownCompletionMode) => {
                self.executor.recorder.record(
                    &object_reference(&Owner::of(&*job)),
                    TYPE_WARNING,
                    EVENT_UNKNOWN_COMPLETION_MODE,
                    EVENT_UNKNOWN_COMPLETION_MODE_MESSAGE.to_owned(),
                );
                return Ok(None);
            }
            Err(PlanError::InvalidSelector { key, source }) => {
                // As upstream: an error (retried with backoff, no event) that only a change to the
                // Job fixes; other Jobs go on meanwhile.
                let elapsed = started.elapsed();
                self.executor
                    .metrics
                    .job_sync(mode, "error", ACTION_RECONCILING, elapsed);
                return Err(SyncError::InvalidSelector { key, source });
            }
        };
        if let Some(Shadow { state, .. }) = &self.shadow {
            let status = status_plan(&plan, &ManageOutcome::assumed(&plan.action));
            let full = crate::plan::FullPlan { sync: plan, status };
            let differences = shadow::differences(&job, &full);
            let fingerprint = controller::shadow::fingerprint(&*job, &candidates);
            return Ok(state
                .observe_sync(&self.executor.client, COMPONENT, key, fingerprint, differences)
                .await);
        }
        let action = plan.metrics_action;
        let requeue = plan.requeue_after;
        let result = self.executor.execute(plan).await;
        if result.is_err()
            && let Some(after) = requeue
        {
            // Upstream queues its timed wake-ups (the active deadline, the end of a backoff) while
            // it syncs, whatever the sync returns; the queue keeps the earlier of this and the
            // rate-limited retry, so a Job whose writes keep failing still fails on its deadline.
            h.queue.add_after(key.clone(), after);
        }
        let outcome = if result.is_ok() { "success" } else { "error" };
        self.executor
            .metrics
            .job_sync(mode, outcome, action, started.elapsed());
        result
    }

    /// A Job that is gone or not ours: nothing of it stands in shadow mode (a divergence reported
    /// while it ran is over). A finished Job is still compared, on its final status.
    fn forget_shadow(&self, key: &ObjectKey) {
        if let Some(s) = &self.shadow {
            s.state.forget(COMPONENT, key.as_str());
            s.finishes.forget(key.as_str());
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

impl<P: PodControl> Reconciler for JobController<P> {
    type Error = SyncError;

    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<Option<Duration>, SyncError>> + Send {
        JobController::sync(self, key)
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

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
