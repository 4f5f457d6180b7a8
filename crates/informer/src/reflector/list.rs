//! The two ways a reflector gets a full snapshot: a paginated LIST, or a streaming list (watch-list).

use std::sync::Arc;

use futures::StreamExt as _;
use kube::{
    Resource,
    api::{ListParams, WatchEvent, WatchParams},
};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::{
    INITIAL_EVENTS_END_ANNOTATION, LIST_PAGE_SIZE, Reflector, ReflectorError, ReflectorEvent, Sink, Snapshot,
    VERY_SHORT_WATCH,
    errors::{is_expired, is_expired_status, is_retriable, is_watch_list_refused},
};
use crate::{key::ObjectKey, listwatch::WatchStream};

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    /// LISTs the scope following the resource-version rules; on Expired retries at once with "".
    pub(super) async fn list(&mut self) -> Result<(Snapshot<K>, String), ReflectorError> {
        loop {
            let rv = self.relist_resource_version();
            match self.list_at(&rv).await {
                Ok(result) => {
                    self.last_rv_unavailable = false;
                    self.config.metrics.list(result.0.len());
                    return Ok(result);
                }
                Err(e) if is_expired(&e) && !rv.is_empty() => {
                    tracing::info!(resource = %self.resource, rv, "resource version too old for a list; listing from etcd");
                    self.last_rv_unavailable = true;
                }
                Err(source) => {
                    self.config.metrics.list_error();
                    return Err(ReflectorError::List {
                        resource: self.resource.clone(),
                        source,
                    });
                }
            }
        }
    }

    /// One LIST at `rv`, paged as client-go's reflector pages it: consistent reads ("") and lists at
    /// "0" ask for [`LIST_PAGE_SIZE`] items a page (a ready watch cache ignores the limit at "0" and
    /// answers whole; a server without one, or one still filling it, pages); a list at another RV
    /// asks for no limit, so that the watch cache serves it rather than etcd. Later pages carry
    /// only the continue token. A page whose continue token expired (etcd compacted past it) ends
    /// the paging with one consistent list of the whole, as client-go's pager does
    /// (`FullListIfExpired`): a collection too large to page through between two compactions is
    /// still listed.
    async fn list_at(&self, rv: &str) -> kube::Result<(Snapshot<K>, String)> {
        let mut items = Snapshot::new();
        let mut continue_token: Option<String> = None;
        loop {
            let mut lp = ListParams::default();
            lp.label_selector.clone_from(&self.config.label_selector);
            lp.field_selector.clone_from(&self.config.field_selector);
            if rv.is_empty() || rv == "0" {
                lp.limit = Some(LIST_PAGE_SIZE);
            }
            if continue_token.is_some() {
                lp.continue_token.clone_from(&continue_token);
            } else if !rv.is_empty() {
                lp.resource_version = Some(rv.to_owned());
            }
            let page = match self.api.list(&lp).await {
                Err(e) if is_expired(&e) && continue_token.is_some() => {
                    tracing::info!(resource = %self.resource, "continue token expired while paging; listing whole");
                    items.clear();
                    lp.limit = None;
                    lp.continue_token = None;
                    self.api.list(&lp).await?
                }
                page => page?,
            };
            items.extend(page.items.into_iter().map(|o| {
                let o = self.apply_transform(o);
                (ObjectKey::of(&o), Arc::new(o))
            }));
            continue_token = page.metadata.continue_.filter(|c| !c.is_empty());
            if continue_token.is_none() {
                return Ok((items, page.metadata.resource_version.unwrap_or_default()));
            }
        }
    }

    /// A streaming list: a watch with `sendInitialEvents=true` whose initial events end at a bookmark
    /// annotated `k8s.io/initial-events-end: "true"`. Sends the snapshot as one `Replace` and returns
    /// the still-open stream, which then serves as the watch. As client-go's: a resourceVersion too
    /// old or too new is dropped and the streaming list asked again at once, throttling or a refused
    /// connection waits the reflector's backoff first, and any other failure (the server without the
    /// feature among them) answers `Ok(None)`: LIST for this attempt, rather than no progress. So does
    /// a stream that ends at once with nothing in it; one that ends before its bookmark after events
    /// or a while is asked again (client-go `watchList`).
    pub(super) async fn watch_list(
        &mut self,
        sink: &Sink<K>,
    ) -> Result<Option<WatchStream<K>>, ReflectorError> {
        loop {
            let rv = if self.last_rv_unavailable {
                String::new()
            } else {
                self.last_sync_rv.clone()
            };
            let mut wp = WatchParams::streaming_lists().timeout(Self::watch_timeout());
            wp.label_selector.clone_from(&self.config.label_selector);
            wp.field_selector.clone_from(&self.config.field_selector);
            self.config.metrics.watch();
            match self.api.watch(&wp, &rv).await {
                Ok(stream) => match self.stream_snapshot(stream, &rv, sink).await {
                    Streamed::Done(stream) => return Ok(Some(stream)),
                    Streamed::Fallback => return Ok(None),
                    Streamed::Again => {}
                    Streamed::Expired => self.last_rv_unavailable = true,
                    Streamed::Throttled => tokio::time::sleep(self.backoff.next_delay()).await,
                },
                // A consistent snapshot needs no resourceVersion; one expired without it is not
                // asked again at once.
                Err(e) if is_expired(&e) && rv.is_empty() => {
                    return Err(ReflectorError::Expired {
                        resource: self.resource.clone(),
                        resource_version: rv,
                    });
                }
                Err(e) if is_expired(&e) => self.last_rv_unavailable = true,
                Err(e) if is_retriable(&e) => {
                    self.config.metrics.watch_error();
                    tracing::info!(resource = %self.resource, "streaming list refused ({e}); retrying after a backoff");
                    tokio::time::sleep(self.backoff.next_delay()).await;
                }
                Err(e) => {
                    if !is_watch_list_refused(&e) {
                        self.config.metrics.watch_error();
                    }
                    tracing::info!(resource = %self.resource, "streaming list failed ({e}); falling back to LIST");
                    return Ok(None);
                }
            }
        }
    }

    /// Reads a streaming list's initial events up to its end bookmark, then sends them as one
    /// `Replace`.
    async fn stream_snapshot(&mut self, mut stream: WatchStream<K>, rv: &str, sink: &Sink<K>) -> Streamed<K> {
        let mut snapshot = Snapshot::new();
        let (started, mut events) = (Instant::now(), 0usize);
        while let Some(event) = stream.next().await {
            // The connection cut (a restarting API server, a GOAWAY): as the stream's end.
            if let Err(kube::Error::ReadEvents(e)) = &event {
                tracing::info!(resource = %self.resource, "streaming list broke off ({e})");
                return Self::ended_early(events, started);
            }
            events += 1;
            match event {
                Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) => {
                    let o = self.apply_transform(o);
                    snapshot.insert(ObjectKey::of(&o), Arc::new(o));
                }
                Ok(WatchEvent::Deleted(o)) => {
                    snapshot.remove(&ObjectKey::of(&o));
                }
                Ok(WatchEvent::Bookmark(b)) => {
                    let done = b
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END_ANNOTATION)
                        .map(String::as_str)
                        == Some("true");
                    if done {
                        let resource_version = b.metadata.resource_version;
                        self.last_sync_rv.clone_from(&resource_version);
                        self.last_rv_unavailable = false;
                        self.config.metrics.list(snapshot.len());
                        // A closed sink is noticed by the watch loop's next send.
                        let _ = sink.send(ReflectorEvent::Replace {
                            objects: snapshot,
                            resource_version,
                        });
                        return Streamed::Done(stream);
                    }
                }
                Ok(WatchEvent::Error(s))
                    if is_expired_status(s.code, &s.reason, &s.message) && !rv.is_empty() =>
                {
                    return Streamed::Expired;
                }
                Ok(WatchEvent::Error(s)) if s.code == 429 => {
                    self.config.metrics.watch_error();
                    tracing::info!(resource = %self.resource, "streaming list throttled ({}); retrying after a backoff", s.message);
                    return Streamed::Throttled;
                }
                Ok(WatchEvent::Error(s)) => {
                    tracing::info!(resource = %self.resource, "streaming list failed ({} {}); falling back to LIST", s.code, s.message);
                    return Streamed::Fallback;
                }
                Err(e) => {
                    tracing::info!(resource = %self.resource, "streaming list undecodable ({e}); falling back to LIST");
                    return Streamed::Fallback;
                }
            }
        }
        Self::ended_early(events, started)
    }

    /// A streaming list that ended before its initial-events-end bookmark is asked again at once, as
    /// client-go's `watchList` loops; one that ended within a second with no event at all (client-go's
    /// `VeryShortWatchError`) falls back to LIST.
    fn ended_early(events: usize, started: Instant) -> Streamed<K> {
        if events == 0 && started.elapsed() < VERY_SHORT_WATCH {
            Streamed::Fallback
        } else {
            Streamed::Again
        }
    }
}

/// How a streaming list's initial events ended.
enum Streamed<K> {
    /// At the end bookmark: the stream goes on as the watch.
    Done(WatchStream<K>),
    /// The resourceVersion asked for is no longer (or not yet) served: ask again without one.
    Expired,
    /// The server ended it with 429: ask again after the backoff.
    Throttled,
    /// It ended before its bookmark: ask again now.
    Again,
    Fallback,
}
