//! Events on the objects a controller acts on (client-go `record.EventRecorder` writing core/v1
//! Events), sent in the background so that a slow or failing Events API never slows a sync, and
//! sent again after a transport failure as client-go's are (`sink`).
//!
//! Kept from client-go: the source component (`replicaset-controller`, ...) and its event correlator
//! (`correlator`): similar events combined into one "(combined from similar events)" event,
//! identical ones counted, and the per-object spam filter, so a 500-pod scale-up writes the events
//! upstream writes.
//!
//! One field differs on purpose: `reportingInstance` names the process that wrote the event (its
//! leader-election identity), where KCM's recorders leave it empty. With several replicas (leader
//! election, `--shards`) it is the one way to tell from the API which of them acted.

use std::{borrow::Cow, sync::Arc};

use k8s_openapi::{
    api::core::v1::{Event, EventSource, ObjectReference},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use kube::Client;
use parking_lot::Mutex;
use serde_json::json;
use tokio::{
    sync::{mpsc, oneshot},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

mod correlator;
mod name;
mod record;
mod sink;

pub use correlator::{
    AGGREGATE_INTERVAL, AGGREGATE_MAX_EVENTS, CACHE_ENTRIES, COMBINED_PREFIX, Correlator, Decision, Existing,
    SPAM_BURST, SPAM_REFILL,
};
pub use record::{EVENT_QUEUE_LENGTH, EventRecord, PlannedEvent, TYPE_NORMAL, TYPE_WARNING};
pub use sink::{EVENT_RETRY_WAIT, EVENT_TRIES, transient};
use sink::{Sink, Write};

/// Records events from a controller. Cloning shares the background writer.
#[derive(Debug, Clone)]
pub struct EventRecorder {
    /// Invariant: the writer takes what is sent in order, so a [`Queued::Flush`] is answered only
    /// once every event recorded before it has been written or given up on.
    tx: Option<mpsc::Sender<Queued>>,
    /// Cancelled by [`EventRecorder::flush`]: the writer then waits no longer to try an event again.
    stopping: CancellationToken,
    /// Every event recorded, for tests and shadow mode (kept only when asked for).
    recorded: Option<Arc<Mutex<Vec<EventRecord>>>>,
}

impl EventRecorder {
    /// A recorder writing to the API server as `component`, from `instance` (this process's
    /// identity, in each event's reportingInstance). Must be created inside a tokio runtime.
    pub fn new(client: Client, component: &str, instance: &str) -> Self {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE_LENGTH);
        let stopping = CancellationToken::new();
        let sink = Sink {
            client,
            stopping: stopping.clone(),
        };
        tokio::spawn(write_events(sink, component.to_owned(), instance.to_owned(), rx));
        EventRecorder {
            tx: Some(tx),
            stopping,
            recorded: None,
        }
    }

    /// A recorder that only remembers what it was given (tests, shadow mode).
    pub fn in_memory() -> Self {
        EventRecorder {
            tx: None,
            stopping: CancellationToken::new(),
            recorded: Some(Arc::new(Mutex::new(Vec::new()))),
        }
    }

    pub fn record(
        &self,
        object: &ObjectReference,
        type_: &'static str,
        reason: impl Into<Cow<'static, str>>,
        message: String,
    ) {
        let reason = reason.into();
        tracing::debug!(object = ?object.name, %reason, %message, "event");
        let record = EventRecord {
            object: object.clone(),
            type_,
            reason,
            message,
        };
        if let Some(r) = &self.recorded {
            r.lock().push(record.clone());
        }
        // Stamped now, as client-go's recorder makes the event when it is recorded: an event that
        // waits behind others (a throttled or failing Events API) keeps the time it happened at.
        if let Some(tx) = &self.tx
            && tx.try_send(Queued::Event(record, Timestamp::now())).is_err()
        {
            tracing::warn!(object = ?object.name, "event queue full; dropping event");
        }
    }

    /// Waits until every event recorded so far has been written (or failed), for a recorder that
    /// stops: an event waiting to be tried again is given up on, and later ones get one try each,
    /// as client-go's broadcaster ends its retries at shutdown. A controller that stops flushes
    /// before its task ends: the binary releases its Lease (or a shard closes its fence) once the
    /// tasks end, and an event sent after that would be a write by a replica that no longer leads.
    pub async fn flush(&self) {
        self.stopping.cancel();
        let Some(tx) = &self.tx else { return };
        let (done, written) = oneshot::channel();
        // Gone writer: nothing left to wait for.
        if tx.send(Queued::Flush(done)).await.is_ok() {
            let _ = written.await;
        }
    }

    /// Events recorded so far by an in-memory recorder.
    pub fn recorded(&self) -> Vec<EventRecord> {
        self.recorded
            .as_ref()
            .map(|r| r.lock().clone())
            .unwrap_or_default()
    }
}

/// What the background writer takes: an event, or a request to say when those before it are done.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "nearly every item is an event; boxing would allocate for each"
)]
enum Queued {
    /// An event and when it was recorded.
    Event(EventRecord, Timestamp),
    Flush(oneshot::Sender<()>),
}

async fn write_events(sink: Sink, component: String, instance: String, mut rx: mpsc::Receiver<Queued>) {
    let mut correlator = Correlator::default();
    while let Some(queued) = rx.recv().await {
        let (ev, at) = match queued {
            Queued::Event(ev, at) => (ev, at),
            Queued::Flush(done) => {
                let _ = done.send(());
                continue;
            }
        };
        // As client-go: an event keeps the time it was recorded at, and is named after it; a combined
        // one is made now, by the correlator, and takes this time instead.
        let now = Timestamp::now();
        let Some(decision) = correlator.correlate(&ev, Instant::now(), nanos(at), nanos(now)) else {
            continue;
        };
        let now_time = Time(if decision.combined { now } else { at });
        // A cluster-scoped object's events go to `default`, as client-go's recorder files them.
        let namespace = ev
            .object
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        // A combined event carries no reporting controller or instance, as client-go's aggregate.
        let (reporting_component, reporting_instance) = if decision.combined {
            (None, None)
        } else {
            (Some(component.clone()), Some(instance.clone()))
        };
        // A repeat keeps the name, first timestamp and count of the event already written under its
        // key; if that event is gone (expired, deleted), the create that follows the patch's 404
        // brings them back, as client-go's `eventObserve` does.
        let Existing { stamp, count } = decision.observed;
        let first = if decision.existing.is_some() {
            Timestamp::from_nanosecond(i128::from(stamp)).map_or_else(|_| now_time.clone(), Time)
        } else {
            now_time.clone()
        };
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name::event_name(&ev.object, decision.key, stamp)),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: ev.object.clone(),
            reason: Some(ev.reason.to_string()),
            message: Some(decision.message.clone()),
            type_: Some(ev.type_.to_owned()),
            source: Some(EventSource {
                component: Some(component.clone()),
                host: None,
            }),
            first_timestamp: Some(first),
            last_timestamp: Some(now_time.clone()),
            count: Some(count),
            reporting_component,
            reporting_instance,
            ..Event::default()
        };
        let patch = decision
            .existing
            .is_some()
            .then(|| json!({"count": count, "lastTimestamp": now_time, "message": decision.message}));
        let write = match &patch {
            Some(patch) => Write::Patch {
                name: event.metadata.name.as_deref().unwrap_or_default(),
                patch,
                then: &event,
            },
            None => Write::Create(&event),
        };
        // Whatever becomes of the write, the correlator has counted it: the next repeat patches this
        // name with a count one higher, and creates it if it never was.
        sink.send(&namespace, write, &ev.reason).await;
    }
}

/// Nanoseconds since 1970, which fit 64 bits until 2554.
fn nanos(t: Timestamp) -> u64 {
    u64::try_from(t.as_nanosecond()).unwrap_or_default()
}

#[cfg(test)]
#[path = "recorder_tests.rs"]
mod recorder_tests;
