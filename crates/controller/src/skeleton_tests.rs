use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use informer::{NoopMetrics, ObjectKey};
use parking_lot::Mutex;

use super::*;

/// A controller with no informers (its own caches count as synced at once) that records its syncs.
struct Recorder {
    wiring: Wiring,
    synced: Mutex<Vec<String>>,
}

impl Reconciler for Recorder {
    type Error = String;

    async fn sync(&self, key: &ObjectKey) -> Result<Option<std::time::Duration>, String> {
        self.synced.lock().push(key.as_str().to_owned());
        Ok(None)
    }
}

impl Controller for Recorder {
    const NAME: &'static str = "recorder";

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

#[tokio::test(start_paused = true)]
async fn a_gated_controller_syncs_nothing_until_its_gate_opens() {
    let controller = Arc::new(Recorder {
        wiring: Wiring::new(WorkQueue::new(), 2, Arc::new(NoopMetrics)),
        synced: Mutex::new(Vec::new()),
    });
    controller.queue().add(ObjectKey::parse("ns/a"));
    let open = Arc::new(AtomicBool::new(false));
    let gate: StartGate = {
        let open = open.clone();
        Arc::new(move || open.load(Ordering::SeqCst))
    };
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run_gated(controller.clone(), cancel.clone(), Some(gate)));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        controller.synced.lock().is_empty(),
        "its caches synced, but the gate is closed"
    );
    open.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(*controller.synced.lock(), ["ns/a"]);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_ungated_controller_starts_once_its_caches_synced() {
    let controller = Arc::new(Recorder {
        wiring: Wiring::new(WorkQueue::new(), 1, Arc::new(NoopMetrics)),
        synced: Mutex::new(Vec::new()),
    });
    controller.queue().add(ObjectKey::parse("ns/a"));
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run(controller.clone(), cancel.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(*controller.synced.lock(), ["ns/a"]);
    cancel.cancel();
    task.await.unwrap();
}

/// A controller that records an event for each key it syncs.
struct Announcer {
    wiring: Wiring,
    events: EventRecorder,
}

impl Reconciler for Announcer {
    type Error = String;

    async fn sync(&self, key: &ObjectKey) -> Result<Option<std::time::Duration>, String> {
        let object = k8s_openapi::api::core::v1::ObjectReference {
            namespace: key.namespace().map(str::to_owned),
            name: Some(key.name().to_owned()),
            ..Default::default()
        };
        self.events
            .record(&object, crate::events::TYPE_NORMAL, "Synced", "synced".into());
        Ok(None)
    }
}

impl Controller for Announcer {
    const NAME: &'static str = "announcer";

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

/// The binary releases its Lease once the controllers' tasks end: the events of the last syncs must
/// be written by then, not after.
#[tokio::test]
async fn a_stopped_controller_has_written_its_events_when_its_task_ends() {
    let server = kcm_testing::ApiServer::new();
    let events = EventRecorder::new(server.client(), Announcer::NAME, "test");
    let controller = Arc::new(Announcer {
        wiring: Wiring::new(WorkQueue::new(), 1, Arc::new(NoopMetrics)).with_events(events.clone()),
        events,
    });
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run(controller.clone(), cancel.clone()));
    for name in ["a", "b", "c"] {
        controller.queue().add(ObjectKey::parse(&format!("ns/{name}")));
    }
    while !controller.queue().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    task.await.unwrap();
    let written = server.list::<k8s_openapi::api::core::v1::Event>();
    assert_eq!(written.len(), 3, "{written:?}");
}

/// A controller whose loop beside the workers panics once its caches have synced.
struct Crasher {
    wiring: Wiring,
}

impl Reconciler for Crasher {
    type Error = String;

    async fn sync(&self, _: &ObjectKey) -> Result<Option<std::time::Duration>, String> {
        Ok(None)
    }
}

impl Controller for Crasher {
    const NAME: &'static str = "crasher";

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }

    fn run_beside(
        self: &Arc<Self>,
        _: WorkerOptions,
        _: CancellationToken,
    ) -> Option<BoxFuture<'static, ()>> {
        Some(Box::pin(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            panic!("the graph broke");
        }))
    }
}

/// A panic outside the syncs ends the controller: its health check must say so instead of
/// reporting a dead controller as synced, and the panic must not reach whoever awaits its task.
#[tokio::test(start_paused = true)]
async fn a_panic_outside_the_syncs_fails_the_health_check() {
    let cancel = CancellationToken::new();
    let started = spawn(
        Crasher {
            wiring: Wiring::new(WorkQueue::new(), 1, Arc::new(NoopMetrics)),
        },
        &cancel,
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!((started.synced)(), "running, with its caches synced");
    assert!(!(started.stopped)());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(started.task.is_finished(), "the panic ended the controller");
    assert!((started.stopped)(), "a stopped controller is not healthy");
    assert!(
        (started.synced)(),
        "its caches stay synced: a shard's fence must not close on the others"
    );
    started.task.await.expect("the panic was caught");
    assert!(!cancel.is_cancelled(), "the other controllers go on");
}
