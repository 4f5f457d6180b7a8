//! The two calls a reflector makes (client-go `cache.ListerWatcher`), so that how a kind is fetched
//! and decoded can differ by kind: [`crate::json::JsonListWatch`] (and kube's `Api`) ask for JSON,
//! [`crate::protobuf::ProtobufListWatch`] asks for protobuf, as KCM does for built-in kinds.

use std::sync::Arc;

use futures::{StreamExt as _, future::BoxFuture, stream::BoxStream};
use kube::{
    Api,
    api::{ListParams, ObjectList, WatchEvent, WatchParams},
};
use serde::de::DeserializeOwned;

/// The events of one watch request, in the order the server sent them.
pub type WatchStream<K> = BoxStream<'static, kube::Result<WatchEvent<K>>>;

/// Lists and watches one resource in one scope. Errors are kube's, so that the reflector tells a
/// 410 Gone or a refused streaming list apart the same way whatever the wire format.
pub trait ListerWatcher<K: Clone>: Send + Sync + 'static {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>>;

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>>;
}

impl<K> ListerWatcher<K> for Api<K>
where
    K: Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Box::pin(Api::list(self, params))
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>> {
        Box::pin(async move { Ok(Api::watch(self, params, version).await?.boxed()) })
    }
}

impl<K: Clone, L: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<L> {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        (**self).list(params)
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        version: &'a str,
    ) -> BoxFuture<'a, kube::Result<WatchStream<K>>> {
        (**self).watch(params, version)
    }
}
