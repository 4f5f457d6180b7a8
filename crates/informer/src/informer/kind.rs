//! What a kind must be for the factory to share a namespaced informer of it, named once so that the
//! factory and every caller that hands a kind through (the controllers' context) state the same bounds.

use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use serde::de::DeserializeOwned;

/// A namespaced kind the shared factory can list, watch and cache: static type information
/// (`DynamicType = ()`), decodable, and shareable across the informer's tasks.
pub trait Namespaced:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Namespaced for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}
