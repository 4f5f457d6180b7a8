//! What handlers receive (client-go `ResourceEventHandler`).

use std::sync::Arc;

use crate::key::ObjectKey;

/// A deleted object as the informer knows it.
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// The final state, from the watch's Deleted event.
    Final(Arc<K>),
    /// The object vanished between two lists, so its final state is unknown; this is the last state the
    /// cache held (client-go `DeletedFinalStateUnknown`). It may be stale.
    Unknown { key: ObjectKey, last_known: Arc<K> },
}

impl<K> DeletedObject<K> {
    /// The final or last known state.
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeletedObject::Final(o) | DeletedObject::Unknown { last_known: o, .. } => o,
        }
    }
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Final(o) => DeletedObject::Final(o.clone()),
            DeletedObject::Unknown { key, last_known } => DeletedObject::Unknown {
                key: key.clone(),
                last_known: last_known.clone(),
            },
        }
    }
}

/// Receives an informer's notifications, in order per object, one at a time per handler. Handlers
/// should be quick (enqueue a key): a slow handler delays only its own notifications, which are
/// buffered without bound meanwhile, as in client-go.
pub trait EventHandler<K>: Send + Sync + 'static {
    /// `is_initial_list` is true for objects of the first list (or of the cache, for a handler added
    /// after the informer started).
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool) {
        let _ = (obj, is_initial_list);
    }
    /// Also called on resync with `old` and `new` the same object.
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        let _ = obj;
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// An [`EventHandler`] from closures (client-go `ResourceEventHandlerFuncs`).
pub struct HandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for HandlerFns<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> std::fmt::Debug for HandlerFns<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerFns")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> HandlerFns<K> {
    pub fn new() -> Self {
        Self::default()
    }
    #[must_use]
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }
    #[must_use]
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }
    #[must_use]
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for HandlerFns<K> {
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}
