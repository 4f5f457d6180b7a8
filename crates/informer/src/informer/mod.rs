//! Shared informers: a store kept in step by reflectors, with handlers notified in order.

mod factory;
mod handler;
mod kind;
mod listener;
mod shared;
mod sync;

#[cfg(test)]
mod shared_tests;

pub use factory::{InformerOptions, SharedInformerFactory};
pub use handler::{DeletedObject, EventHandler, HandlerFns};
pub use kind::Namespaced;
pub use listener::HandlerRegistration;
pub use shared::{MIN_RESYNC_PERIOD, Scope, SharedInformer};
pub use sync::{CACHE_SYNC_POLL_PERIOD, HasSynced, wait_for_cache_sync};
