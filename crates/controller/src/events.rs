//! Events on the objects a controller acts on (client-go `record.EventRecorder` writing core/v1
//! Events), sent in the background so that a slow or failing Events API never slows a sync.
//!
//! Kept from client-go: the source component (`replicaset-controller`, ...), an identical event (same
//! object, type, reason and message) updating the count of the existing one instead of creating
//! another, and the per-object spam filter (a bucket of 25 events refilled at one per 5 minutes), so a
//! 500-pod scale-up writes 25 SuccessfulCreate events as upstream does. Not kept: the aggregation of
//! ten similar events into one "(combined from similar events)" event.

use std::{sync::Arc, time::Duration};

use ahash::AHashMap;
use k8s_openapi::{
    api::core::v1::{Event, EventSource, ObjectReference},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use parking_lot::Mutex;
use serde_json::json;
use tokio::{sync::mpsc, time::Instant};

/// Events a recorder holds before it drops new ones (client-go's broadcaster queue length).
pub const EVENT_QUEUE_LENGTH: usize = 1000;
/// Per-object burst of the spam filter (client-go `defaultSpamBurst`).
pub const SPAM_BURST: f64 = 25.0;
/// Per-object refill period of the spam filter (client-go `defaultSpamQPS` = 1/300).
pub const SPAM_REFILL: Duration = Duration::from_secs(300);

pub const TYPE_NORMAL: &str = "Normal";
pub const TYPE_WARNING: &str = "Warning";

/// One event to record.
#[derive(Debug, Clone)]
pub struct EventRecord {
    pub object: ObjectReference,
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
}

/// Records events from a controller. Cloning shares the background writer.
#[derive(Debug, Clone)]
pub struct EventRecorder {
    tx: Option<mpsc::Sender<EventRecord>>,
    /// Every event recorded, for tests and shadow mode (kept only when asked for).
    recorded: Option<Arc<Mutex<Vec<EventRecord>>>>,
}

impl EventRecorder {
    /// A recorder writing to the API server as `component`, from `instance` (this process's
    /// identity, in each event's reportingInstance). Must be created inside a tokio runtime.
    pub fn new(client: Client, component: &str, instance: &str) -> Self {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE_LENGTH);
        tokio::spawn(write_events(
            client,
            component.to_owned(),
            instance.to_owned(),
            rx,
        ));
        EventRecorder {
            tx: Some(tx),
            recorded: None,
        }
    }

    /// A recorder that only remembers what it was given (tests, shadow mode).
    pub fn in_memory() -> Self {
        EventRecorder {
            tx: None,
            recorded: Some(Arc::new(Mutex::new(Vec::new()))),
        }
    }

    pub fn record(
        &self,
        object: &ObjectReference,
        type_: &'static str,
        reason: &'static str,
        message: String,
    ) {
        tracing::debug!(object = ?object.name, reason, %message, "event");
        let record = EventRecord {
            object: object.clone(),
            type_,
            reason,
            message,
        };
        if let Some(r) = &self.recorded {
            r.lock().push(record.clone());
        }
        if let Some(tx) = &self.tx
            && tx.try_send(record).is_err()
        {
            tracing::warn!(reason, "event queue full; dropping event");
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

struct Bucket {
    tokens: f64,
    last: Instant,
}

async fn write_events(
    client: Client,
    component: String,
    instance: String,
    mut rx: mpsc::Receiver<EventRecord>,
) {
    let mut buckets: AHashMap<String, Bucket> = AHashMap::new();
    // Identical events seen before: key -> (event name, namespace, count).
    let mut seen: AHashMap<String, (String, String, i32)> = AHashMap::new();
    while let Some(ev) = rx.recv().await {
        let obj_key = format!(
            "{}/{}/{}/{}",
            ev.object.kind.as_deref().unwrap_or(""),
            ev.object.namespace.as_deref().unwrap_or(""),
            ev.object.name.as_deref().unwrap_or(""),
            ev.object.uid.as_deref().unwrap_or("")
        );
        let now = Instant::now();
        let bucket = buckets.entry(obj_key.clone()).or_insert(Bucket {
            tokens: SPAM_BURST,
            last: now,
        });
        let refill = (now - bucket.last).as_secs_f64() / SPAM_REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + refill).min(SPAM_BURST);
        bucket.last = now;
        if bucket.tokens < 1.0 {
            continue;
        }
        bucket.tokens -= 1.0;
        let namespace = ev
            .object
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
        let stamp = Time(Timestamp::now());
        let identical = format!("{obj_key}/{}/{}/{}", ev.type_, ev.reason, ev.message);
        if let Some((name, ns, count)) = seen.get_mut(&identical) {
            *count += 1;
            let patch = json!({"count": *count, "lastTimestamp": stamp});
            let api: Api<Event> = Api::namespaced(client.clone(), ns);
            if api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .is_ok()
            {
                continue;
            }
        }
        let name = format!(
            "{}.{:x}",
            ev.object.name.as_deref().unwrap_or("unknown"),
            Timestamp::now().as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: ev.object.clone(),
            reason: Some(ev.reason.to_owned()),
            message: Some(ev.message.clone()),
            type_: Some(ev.type_.to_owned()),
            source: Some(EventSource {
                component: Some(component.clone()),
                host: None,
            }),
            first_timestamp: Some(stamp.clone()),
            last_timestamp: Some(stamp),
            count: Some(1),
            reporting_component: Some(component.clone()),
            reporting_instance: Some(instance.clone()),
            ..Event::default()
        };
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                seen.insert(identical, (name, namespace, 1));
            }
            // Namespaces being deleted refuse events; nothing to report then.
            Err(e) => tracing::debug!(reason = ev.reason, "could not write event: {e}"),
        }
    }
}
