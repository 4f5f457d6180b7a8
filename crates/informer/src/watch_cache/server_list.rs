//! A view the cache cannot fill (made after the cache listed) takes its initial events from the API
//! server, as a streaming list filtered one event at a time: it never holds more than its own part,
//! where a LIST would bring the whole kind into memory at once. At the end marker it leaves the
//! server's stream and goes on with the cache's, from the marker's resourceVersion.

use futures::StreamExt as _;
use kube::api::{WatchEvent, WatchParams};

use super::state::Keep;
use crate::{listwatch::ListerWatcher, reflector::INITIAL_EVENTS_END_ANNOTATION};

/// How the server's streaming list went.
pub enum Initial<K> {
    /// The view's initial events, and the resourceVersion they end at.
    Listed(Vec<WatchEvent<K>>, String),
    /// It failed or ended before its end marker: what came, to pass on as the server sent it (the
    /// reflector then falls back to a LIST, or relists).
    Ended(Vec<kube::Result<WatchEvent<K>>>),
}

/// The initial events of a streaming list from `upstream` that `keep` selects.
pub async fn initial_events<K: Clone + 'static>(
    upstream: &dyn ListerWatcher<K>,
    params: &WatchParams,
    version: &str,
    keep: &Keep<K>,
) -> kube::Result<Initial<K>> {
    let mut server = upstream.watch(params, version).await?;
    let mut kept = Vec::new();
    while let Some(event) = server.next().await {
        match event {
            Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) if keep(&o) => kept.push(WatchEvent::Added(o)),
            Ok(WatchEvent::Deleted(o)) if keep(&o) => kept.push(WatchEvent::Deleted(o)),
            Ok(WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_)) => {}
            Ok(WatchEvent::Bookmark(b)) => {
                let end = b
                    .metadata
                    .annotations
                    .get(INITIAL_EVENTS_END_ANNOTATION)
                    .map(String::as_str);
                if end == Some("true") {
                    return Ok(Initial::Listed(kept, b.metadata.resource_version));
                }
            }
            failed @ (Ok(WatchEvent::Error(_)) | Err(_)) => {
                let mut came: Vec<_> = kept.into_iter().map(Ok).collect();
                came.push(failed);
                return Ok(Initial::Ended(came));
            }
        }
    }
    Ok(Initial::Ended(kept.into_iter().map(Ok).collect()))
}
