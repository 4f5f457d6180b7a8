//! The watch half of list-and-watch.

use futures::StreamExt as _;
use kube::{
    Resource,
    api::{WatchEvent, WatchParams},
};
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::listwatch::WatchStream;

use super::{
    Ended, Reflector, ReflectorError, ReflectorEvent, Sink, VERY_SHORT_WATCH,
    errors::{is_expired, is_expired_status, is_retriable},
};

/// How one watch stream ended.
enum StreamEnd {
    /// Server timeout or a dropped connection: watch again from the last RV, no relist.
    Closed,
    /// The server ended the stream with 429: watch again after the backoff, no relist (client-go).
    Throttled,
    Cancelled,
    SinkClosed,
}

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    /// Watches from the last RV, reconnecting when a stream ends, until an error calls for a relist.
    /// `first` is a stream already open (the rest of a streaming list).
    pub(super) async fn watch_loop(
        &mut self,
        mut first: Option<WatchStream<K>>,
        sink: &Sink<K>,
        cancel: &CancellationToken,
    ) -> Result<Ended, ReflectorError> {
        loop {
            let stream = match first.take() {
                Some(s) => s,
                None => {
                    let mut wp = WatchParams::default().timeout(Self::watch_timeout());
                    wp.label_selector.clone_from(&self.config.label_selector);
                    wp.field_selector.clone_from(&self.config.field_selector);
                    self.config.metrics.watch();
                    match self.api.watch(&wp, &self.last_sync_rv).await {
                        Ok(s) => s,
                        Err(e) if is_expired(&e) => {
                            return Err(ReflectorError::Expired {
                                resource: self.resource.clone(),
                                resource_version: self.last_sync_rv.clone(),
                            });
                        }
                        Err(e) if is_retriable(&e) => {
                            self.config.metrics.watch_error();
                            tracing::info!(resource = %self.resource, "watch refused ({e}); retrying without relist");
                            let delay = self.backoff.next_delay();
                            tokio::select! {
                                () = cancel.cancelled() => return Ok(Ended::Cancelled),
                                () = tokio::time::sleep(delay) => continue,
                            }
                        }
                        Err(source) => {
                            self.config.metrics.watch_error();
                            return Err(ReflectorError::Watch {
                                resource: self.resource.clone(),
                                source,
                            });
                        }
                    }
                }
            };
            match self.handle_stream(stream, sink, cancel).await? {
                StreamEnd::Closed => {}
                StreamEnd::Throttled => {
                    let delay = self.backoff.next_delay();
                    tokio::select! {
                        () = cancel.cancelled() => return Ok(Ended::Cancelled),
                        () = tokio::time::sleep(delay) => {}
                    }
                }
                StreamEnd::Cancelled => return Ok(Ended::Cancelled),
                StreamEnd::SinkClosed => return Ok(Ended::SinkClosed),
            }
        }
    }

    async fn handle_stream(
        &mut self,
        mut stream: WatchStream<K>,
        sink: &Sink<K>,
        cancel: &CancellationToken,
    ) -> Result<StreamEnd, ReflectorError> {
        let started = Instant::now();
        let mut events = 0usize;
        loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(StreamEnd::Cancelled),
                n = stream.next() => n,
            };
            let event = match next {
                None => break,
                Some(Ok(e)) => e,
                Some(Err(e)) => {
                    // A connection dropped mid-stream: resume from the last RV (client-go does the same).
                    tracing::debug!(resource = %self.resource, "watch stream broke off: {e}");
                    break;
                }
            };
            events += 1;
            let (rv, out) = match event {
                WatchEvent::Added(o) => (rv_of(&o), ReflectorEvent::Added(self.apply_transform(o))),
                WatchEvent::Modified(o) => (rv_of(&o), ReflectorEvent::Modified(self.apply_transform(o))),
                WatchEvent::Deleted(o) => (rv_of(&o), ReflectorEvent::Deleted(self.apply_transform(o))),
                WatchEvent::Bookmark(b) => {
                    self.last_sync_rv.clone_from(&b.metadata.resource_version);
                    let resource_version = b.metadata.resource_version;
                    if sink.send(ReflectorEvent::Bookmark { resource_version }).is_err() {
                        return Ok(StreamEnd::SinkClosed);
                    }
                    continue;
                }
                WatchEvent::Error(s) if is_expired_status(s.code, &s.reason, &s.message) => {
                    self.config.metrics.watch_events(events);
                    return Err(ReflectorError::Expired {
                        resource: self.resource.clone(),
                        resource_version: self.last_sync_rv.clone(),
                    });
                }
                WatchEvent::Error(s) if s.code == 429 => {
                    self.config.metrics.watch_events(events);
                    self.config.metrics.watch_error();
                    tracing::info!(resource = %self.resource, "watch ended with 429 ({}); backing off", s.message);
                    return Ok(StreamEnd::Throttled);
                }
                WatchEvent::Error(s) => {
                    self.config.metrics.watch_error();
                    return Err(ReflectorError::WatchStatus {
                        resource: self.resource.clone(),
                        code: s.code,
                        reason: s.reason.clone(),
                        message: s.message.clone(),
                    });
                }
            };
            if sink.send(out).is_err() {
                return Ok(StreamEnd::SinkClosed);
            }
            if let Some(rv) = rv {
                self.last_sync_rv = rv;
            }
        }
        self.config.metrics.watch_events(events);
        let elapsed = started.elapsed();
        if events == 0 && elapsed < VERY_SHORT_WATCH {
            return Err(ReflectorError::VeryShortWatch {
                resource: self.resource.clone(),
                elapsed,
            });
        }
        Ok(StreamEnd::Closed)
    }
}

fn rv_of<K: Resource>(obj: &K) -> Option<String> {
    obj.meta().resource_version.clone().filter(|rv| !rv.is_empty())
}
