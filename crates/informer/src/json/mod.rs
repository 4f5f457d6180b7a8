//! Listing and watching in JSON, for the kinds not read as protobuf.
//!
//! Why not kube's `Api`: it decodes every object whole, and k8s-openapi's `ObjectMeta` builds each
//! managedFields entry's `fieldsV1` as a `serde_json::Value` tree, only for the informer's transform
//! to drop it (KCM strips managedFields from its informers' objects too). On a ReplicaSet or a
//! Deployment, that was most of a watch event's decoding (`cargo bench --bench wire_decode`, figures
//! in `benches/results/`). [`JsonListWatch`] sends the requests `Api` sends, through the same
//! `Client`, and decodes each object through [`WithoutManagedFields`], which steps over that one
//! field in the parser. Everything else reaches the kind's own decoder unchanged, so the objects
//! stored are the ones `Api` and the transform gave.

mod listwatch;
mod skip;

pub use listwatch::JsonListWatch;
pub(crate) use listwatch::{events, list};
pub use skip::WithoutManagedFields;

#[cfg(test)]
mod tests;
