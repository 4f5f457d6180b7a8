//! Adds `shardSelector` to every list and watch of a shard's informers. kube's `ListParams` and
//! `WatchParams` have no field for it, so the shard's informer client appends it to each GET it sends
//! (that client sends nothing else). An API server without the `ShardedListAndWatch` gate ignores
//! it; the informers filter on their side anyway (`informer::ShardFiltered`).

use http::{Method, Request, Uri};
use tower::Layer;

use crate::edit::{Edit, Edited};

/// The query parameter (apimachinery `ListOptions.ShardSelector`).
const PARAM: &str = "shardSelector";

#[derive(Debug, Clone)]
pub struct SelectorLayer {
    /// `shardSelector=<encoded>`.
    pair: String,
}

impl SelectorLayer {
    pub fn new(selector: &str) -> Self {
        let encoded: String = form_urlencoded::byte_serialize(selector.as_bytes()).collect();
        Self {
            pair: format!("{PARAM}={encoded}"),
        }
    }
}

impl<S> Layer<S> for SelectorLayer {
    type Service = Edited<S, SelectorLayer>;
    fn layer(&self, inner: S) -> Self::Service {
        Edited {
            edit: self.clone(),
            inner,
        }
    }
}

impl Edit for SelectorLayer {
    fn edit<B>(&self, req: &mut Request<B>) {
        if req.method() == Method::GET
            && let Some(uri) = with_pair(req.uri(), &self.pair)
        {
            *req.uri_mut() = uri;
        }
    }
}

fn with_pair(uri: &Uri, pair: &str) -> Option<Uri> {
    let pq = match uri.query() {
        Some(q) => format!("{}?{q}&{pair}", uri.path()),
        None => format!("{}?{pair}", uri.path()),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(pq.parse().ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_is_appended_encoded() {
        let layer = SelectorLayer::new(&informer::Shard::new(1, 2).unwrap().selector());
        let uri: Uri = "/api/v1/pods?watch=true&resourceVersion=5".parse().unwrap();
        let got = with_pair(&uri, &layer.pair).unwrap().to_string();
        assert_eq!(
            got,
            "/api/v1/pods?watch=true&resourceVersion=5&shardSelector=shardRange%28object.metadata.namespace%2C+\
             %270x8000000000000000%27%2C+%270x10000000000000000%27%29"
        );
        let bare: Uri = "/apis/apps/v1/replicasets".parse().unwrap();
        assert!(
            with_pair(&bare, "a=b")
                .unwrap()
                .to_string()
                .ends_with("replicasets?a=b")
        );
    }
}
