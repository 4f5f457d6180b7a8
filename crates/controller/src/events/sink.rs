//! Writing one correlated event, and trying again when the API server could not be reached, as
//! client-go's `recordToSink` does: an event matters most when the cluster is in trouble, so a
//! reset connection, a timeout or a refused dial does not lose it ([`transient`]). The server's own
//! answer is final (client-go gives up on any `StatusError`). So is a refusal by this process (a
//! shard's write fence, shadow mode's read-only guard), which no wait changes.
//!
//! Each try reuses the event's name, so a create whose answer was lost and that is sent again meets
//! AlreadyExists instead of writing the event twice.

use std::{error::Error as StdError, time::Duration};

use k8s_openapi::api::core::v1::Event;
use kube::{
    Client,
    api::{Patch, PatchParams},
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{RefusedHere, errors::namespace_terminating};

/// How many times one event is sent at most (client-go `maxTriesPerEvent`).
pub const EVENT_TRIES: u32 = 12;
/// The wait between two tries; the first wait is a random part of it, so that the recorders of many
/// processes do not all try again at once when the API server comes back (client-go
/// `defaultSleepDuration`).
pub const EVENT_RETRY_WAIT: Duration = Duration::from_secs(10);

/// One write of an event: a create, or a patch of the event already written under the same key.
pub(super) enum Write<'a> {
    Create(&'a Event),
    /// A patch of `name`, or if that event is gone, a create of `then` (client-go creates when the
    /// patch finds nothing).
    Patch {
        name: &'a str,
        patch: &'a Value,
        then: &'a Event,
    },
}

/// Where events go, and the token a stopping recorder cancels to end the waits between tries.
pub(super) struct Sink {
    pub client: Client,
    pub stopping: CancellationToken,
}

impl Sink {
    /// Sends `write` to `namespace`, trying again after transport failures as described above, until
    /// it is written or given up on (refused by the server or by this process, out of tries, or the
    /// recorder stopped while waiting to try again).
    pub(super) async fn send(&self, namespace: &str, write: Write<'_>, reason: &str) {
        for attempt in 1..=EVENT_TRIES {
            let err = match self.try_once(namespace, &write).await {
                Ok(()) => return,
                Err(e) => e,
            };
            if !transient(&err) {
                log_refused(namespace, reason, &err);
                return;
            }
            if attempt == EVENT_TRIES {
                tracing::error!(
                    namespace,
                    reason,
                    "unable to write event (retry limit exceeded): {err}"
                );
                return;
            }
            tracing::warn!(namespace, reason, "unable to write event (will try again): {err}");
            let wait = if attempt == 1 {
                EVENT_RETRY_WAIT.mul_f64(rand::random::<f64>())
            } else {
                EVENT_RETRY_WAIT
            };
            tokio::select! {
                biased;
                () = self.stopping.cancelled() => {
                    tracing::warn!(namespace, reason, "event not written: the recorder stopped: {err}");
                    return;
                }
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn try_once(&self, namespace: &str, write: &Write<'_>) -> kube::Result<()> {
        let create = match write {
            Write::Create(event) => event,
            Write::Patch { name, patch, then } => {
                let sent = crate::writes::patch::<Event, _>(
                    &self.client,
                    namespace,
                    name,
                    &PatchParams::default(),
                    &Patch::Strategic(patch),
                )
                .await;
                match sent {
                    Ok(_) => return Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 404 => then,
                    Err(e) => return Err(e),
                }
            }
        };
        crate::writes::create(&self.client, namespace, *create)
            .await
            .map(|_| ())
    }
}

/// Whether an event's write that failed with `err` is tried again: client-go gives up only on the
/// server's answer (`StatusError`) and on a request it could not build, and tries again after
/// anything else (a reset, a refused or timed-out dial, a credential refresh that failed, an answer
/// it could not read). kcm-rs also gives up on a refusal by its own client ([`RefusedHere`]), which
/// client-go's has no counterpart of.
pub fn transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(_) | kube::Error::BuildRequest(_) | kube::Error::HttpError(_) => false,
        kube::Error::Service(e) => !refused_here(&**e),
        _ => true,
    }
}

/// Whether [`RefusedHere`] is in `err`'s chain.
fn refused_here(err: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<RefusedHere>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// Logs an event given up on without trying again, at client-go's levels: at V(5) (trace) when it
/// exists already or its namespace is going away, as an error when the server refused it otherwise, and as
/// a warning when this process refused to send it.
fn log_refused(namespace: &str, reason: &str, err: &kube::Error) {
    match err {
        kube::Error::Api(s) if s.is_already_exists() || namespace_terminating(s) => {
            tracing::trace!(namespace, reason, "server rejected event (will not retry): {err}");
        }
        kube::Error::Api(_) => {
            tracing::error!(namespace, reason, "server rejected event (will not retry): {err}");
        }
        _ => tracing::warn!(namespace, reason, "event not written: {err}"),
    }
}
