//! Lists and watches a kind in JSON, as kube's `Api` does, decoding each object without its
//! managedFields ([`WithoutManagedFields`]).

use std::{io, marker::PhantomData};

use bytes::Bytes;
use futures::{StreamExt as _, future::BoxFuture};
use kube::{
    Client,
    api::{ListParams, ObjectList, WatchEvent, WatchParams},
    core::Status,
};
use serde::de::DeserializeOwned;
use tokio::io::AsyncRead;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};

use super::WithoutManagedFields;
use crate::{
    listwatch::{ListerWatcher, WatchStream},
    request::{self, Collection},
};

/// What a JSON client accepts.
const ACCEPT: &str = "application/json";

/// Lists and watches `K` at one collection path (`/apis/apps/v1/replicasets`,
/// `/apis/apps/v1/namespaces/ns/replicasets`), in JSON.
pub struct JsonListWatch<K> {
    collection: Collection,
    _kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for JsonListWatch<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonListWatch")
            .field("path", &self.collection.path())
            .finish()
    }
}

impl<K> JsonListWatch<K> {
    pub fn new(client: Client, path: impl Into<String>) -> Self {
        JsonListWatch {
            collection: Collection::new(client, path.into()),
            _kind: PhantomData,
        }
    }
}

impl<K> ListerWatcher<K> for JsonListWatch<K>
where
    K: DeserializeOwned + Clone + Send + Sync + 'static,
{
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Box::pin(async move {
            let res = self.collection.list(params, ACCEPT).await?;
            list(&request::body(res).await?)
        })
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>> {
        Box::pin(async move {
            let res = self.collection.watch(params, version, ACCEPT).await?;
            Ok(events(request::reader(res)))
        })
    }
}

/// A JSON list answer.
pub(crate) fn list<K: DeserializeOwned + Clone>(body: &Bytes) -> kube::Result<ObjectList<K>> {
    let list: ObjectList<WithoutManagedFields<K>> =
        serde_json::from_slice(body).map_err(kube::Error::SerdeError)?;
    Ok(ObjectList {
        types: list.types,
        metadata: list.metadata,
        items: list.items.into_iter().map(|o| o.0).collect(),
    })
}

/// A JSON watch answer: one event per line. As kube reads it: a line that ends before its event does
/// (an empty one) is skipped, and a line holding a `Status` instead of an event is that error. Lines
/// are cut from the body without a copy and parsed as bytes (serde checks their strings are UTF-8),
/// where kube's `LinesCodec` copies each into a `String` first.
pub(crate) fn events<K: DeserializeOwned + Clone + Send + 'static>(
    body: impl AsyncRead + Send + 'static,
) -> WatchStream<K> {
    let lines = AnyDelimiterCodec::new(b"\n".to_vec(), Vec::new());
    let events = FramedRead::new(body, lines).filter_map(|line| {
        futures::future::ready(match line {
            Ok(line) => event(&line),
            Err(AnyDelimiterCodecError::Io(e)) => Some(Err(kube::Error::ReadEvents(e))),
            Err(other) => Some(Err(kube::Error::ReadEvents(io::Error::other(other)))),
        })
    });
    request::until_eof(events)
}

/// One watch event's line: `None` for a line to skip.
pub(super) fn event<K: DeserializeOwned + Clone>(line: &[u8]) -> Option<kube::Result<WatchEvent<K>>> {
    let event = match serde_json::from_slice::<WatchEvent<WithoutManagedFields<K>>>(line) {
        Ok(event) => event,
        Err(e) if e.is_eof() => return None,
        Err(e) => {
            return Some(Err(match serde_json::from_slice::<Status>(line) {
                Ok(status) => kube::Error::Api(Box::new(status)),
                Err(_) => kube::Error::SerdeError(e),
            }));
        }
    };
    Some(Ok(match event {
        WatchEvent::Added(o) => WatchEvent::Added(o.0),
        WatchEvent::Modified(o) => WatchEvent::Modified(o.0),
        WatchEvent::Deleted(o) => WatchEvent::Deleted(o.0),
        WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b),
        WatchEvent::Error(status) => WatchEvent::Error(status),
    }))
}
