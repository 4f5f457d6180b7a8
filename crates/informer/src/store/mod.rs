//! The informer's cache: a thread-safe indexed store, index functions and listers.

mod index;
mod lister;
mod thread_safe;

pub use index::{IndexFn, NAMESPACE_INDEX, namespace_index};
pub use lister::Lister;
pub use thread_safe::{NoSuchIndex, Store};
