//! One listener per handler (client-go `processorListener`): an unbounded buffer and a task that calls
//! the handler for each notification in turn.

use std::{
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use parking_lot::Mutex;
use tokio::{
    sync::{mpsc, watch},
    time::Instant,
};

use super::handler::{DeletedObject, EventHandler};

pub(super) enum Notification<K> {
    Add { obj: Arc<K>, initial: bool },
    Update { old: Arc<K>, new: Arc<K> },
    Delete(DeletedObject<K>),
}

pub(super) struct Listener<K> {
    tx: mpsc::UnboundedSender<Notification<K>>,
    /// Initial-list notifications sent to this handler and not yet handled. The handler has synced
    /// once the informer has and this is zero.
    pending_initial: Arc<AtomicUsize>,
    /// How often this handler wants every object again (`None`: never).
    pub(super) resync_period: Option<Duration>,
    /// When the next resync is due; meaningful only with a period.
    pub(super) next_resync: Mutex<Instant>,
    /// Whether this handler takes updates that changed nothing (same resourceVersion, as a relist
    /// gives for every object it finds unchanged): client-go's per-listener `isSyncing`, true from
    /// the start and set again at each of the informer's resync checks to whether this handler's
    /// resync was due then. A handler with a period that every check finds due (KCM's: one period
    /// for all) is always syncing; one without a period stops at the first check.
    pub(super) syncing: AtomicBool,
}

impl<K: Send + Sync + 'static> Listener<K> {
    /// Starts the delivery task for `handler`.
    pub(super) fn spawn(
        handler: Arc<dyn EventHandler<K>>,
        resync_period: Option<Duration>,
    ) -> (Arc<Self>, Arc<AtomicUsize>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Notification<K>>();
        let pending_initial = Arc::new(AtomicUsize::new(0));
        let pending = pending_initial.clone();
        tokio::spawn(async move {
            while let Some(n) = rx.recv().await {
                let initial = matches!(n, Notification::Add { initial: true, .. });
                // A panicking handler loses this notification, not the listener or the informer.
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| match &n {
                    Notification::Add { obj, initial } => handler.on_add(obj, *initial),
                    Notification::Update { old, new } => handler.on_update(old, new),
                    Notification::Delete(d) => handler.on_delete(d),
                }));
                if outcome.is_err() {
                    tracing::error!("an informer event handler panicked; the notification was dropped");
                }
                if initial {
                    pending.fetch_sub(1, Ordering::AcqRel);
                }
            }
        });
        let next = resync_period.map_or_else(Instant::now, |p| Instant::now() + p);
        let listener = Arc::new(Listener {
            tx,
            pending_initial: pending_initial.clone(),
            resync_period,
            next_resync: Mutex::new(next),
            syncing: AtomicBool::new(true),
        });
        (listener, pending_initial)
    }

    pub(super) fn send(&self, n: Notification<K>) {
        if matches!(n, Notification::Add { initial: true, .. }) {
            self.pending_initial.fetch_add(1, Ordering::AcqRel);
        }
        // The receiver lives as long as the task, which ends only when this sender is dropped.
        let _ = self.tx.send(n);
    }

    /// Whether a resync is due now; if so, schedules the next one.
    pub(super) fn take_resync_due(&self, now: Instant) -> bool {
        let Some(period) = self.resync_period else {
            return false;
        };
        let mut next = self.next_resync.lock();
        if now < *next {
            return false;
        }
        *next = now + period;
        true
    }
}

/// A handler's registration: tells whether the handler has seen the informer's initial contents.
#[derive(Debug, Clone)]
pub struct HandlerRegistration {
    pub(super) pending_initial: Arc<AtomicUsize>,
    pub(super) informer_synced: watch::Receiver<bool>,
}

impl HandlerRegistration {
    /// True once the informer has synced and this handler has handled every initial notification.
    /// Controllers wait on this, not on the informer alone (client-go `ResourceEventHandlerRegistration`).
    pub fn has_synced(&self) -> bool {
        *self.informer_synced.borrow() && self.pending_initial.load(Ordering::Acquire) == 0
    }
}
