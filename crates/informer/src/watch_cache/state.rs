//! What a watch cache holds, and how a view subscribes to it: the objects (until they are dropped
//! after the warm-up), the resourceVersion they are at, a window of recent changes to replay, and the
//! subscribers. Synchronous and pure of I/O, so that its rules are unit-tested without a server; the
//! caller holds it under one lock, which is what makes a view's list, replay and live events
//! gapless.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
};

use ahash::AHashMap;
use kube::Resource;
use tokio::sync::mpsc;

use crate::{key::ObjectKey, reflector::ReflectorEvent};

/// Recent changes kept for watches that start from an older resourceVersion. A view watches from
/// the resourceVersion of its own list, taken moments before, so a short window suffices; the API
/// server's own watch cache starts at 100 events per kind (`defaultLowerBoundCapacity`) and grows.
pub const REPLAY_WINDOW: usize = 4096;

/// Which objects a view serves.
pub type Keep<K> = Arc<dyn Fn(&K) -> bool + Send + Sync>;

/// One change, as the cache received it.
#[derive(Debug)]
pub enum Change<K> {
    Added(Arc<K>),
    Modified(Arc<K>),
    Deleted(Arc<K>),
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Change::Added(o) => Change::Added(o.clone()),
            Change::Modified(o) => Change::Modified(o.clone()),
            Change::Deleted(o) => Change::Deleted(o.clone()),
        }
    }
}

impl<K> Change<K> {
    fn object(&self) -> &Arc<K> {
        match self {
            Change::Added(o) | Change::Modified(o) | Change::Deleted(o) => o,
        }
    }
}

/// What a subscriber receives.
#[derive(Debug)]
pub enum Out<K> {
    Change(Change<K>),
    /// Everything up to this resourceVersion was sent.
    Bookmark(String),
    /// The end of a streaming list's initial events, at this resourceVersion.
    InitialEventsEnd(String),
    /// The cache relisted: the subscriber's resourceVersion means nothing any more; relist.
    Expired,
}

/// Why a list or watch cannot be served as asked.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not yet listed: wait.
    NotSynced,
    /// The objects were dropped after the warm-up, or the view came after the cache's list began:
    /// list from the API server.
    NotCached,
    /// Older than the replay window, or not a number: relist.
    Expired,
    /// The cache stopped.
    Closed,
}

/// What the cache knows of one view.
struct ViewInfo<K> {
    keep: Keep<K>,
    /// Made before the cache's list began, so the cache holds all its objects, until `taken`.
    complete: bool,
    /// Its objects went to its informer's first list: the cache keeps no copy of them.
    taken: bool,
    /// The cache's resourceVersion when the view was made: the stream carries its changes from
    /// then on, so a watch from before then would miss some.
    since: u64,
}

struct Subscriber<K> {
    keep: Keep<K>,
    /// Only changes above this resourceVersion are sent: what the subscriber's list already held.
    after: u64,
    tx: mpsc::UnboundedSender<Out<K>>,
}

/// The cache's contents and subscribers.
pub struct State<K> {
    /// `None` once dropped: new views then list from the API server, and only the stream is shared.
    objects: Option<AHashMap<ObjectKey, Arc<K>>>,
    /// The resourceVersion everything applied is at; `None` until the first list.
    rv: Option<u64>,
    /// Changes with a resourceVersion above `window_start`, oldest first: a watch from any
    /// resourceVersion from `window_start` to `rv` replays from here.
    recent: VecDeque<(u64, Change<K>)>,
    window_start: u64,
    capacity: usize,
    subscribers: Vec<Subscriber<K>>,
    views: HashMap<u64, ViewInfo<K>>,
    /// The cache's reflector has started: views made from now on are not complete.
    started: bool,
    closed: bool,
}

impl<K> State<K> {
    /// The cache's list begins now: it holds the objects of the views made so far.
    pub fn start(&mut self) {
        self.started = true;
    }

    /// A view is made (its informer has not listed yet), when the stream had been read up to
    /// `since`.
    pub fn register(&mut self, view: u64, since: u64, keep: Keep<K>) {
        let info = ViewInfo {
            keep,
            complete: !self.started,
            taken: false,
            since,
        };
        self.views.insert(view, info);
    }

    pub fn unregister(&mut self, view: u64) {
        self.views.remove(&view);
    }
}

impl<K: Resource> State<K> {
    pub fn new(capacity: usize) -> Self {
        Self {
            objects: Some(AHashMap::new()),
            rv: None,
            recent: VecDeque::new(),
            window_start: 0,
            capacity: capacity.max(1),
            subscribers: Vec::new(),
            views: HashMap::new(),
            started: false,
            closed: false,
        }
    }

    /// Whether the cache still holds all of `view`'s objects.
    fn cached(&self, view: u64) -> Result<(), Refused> {
        match self.views.get(&view) {
            Some(v) if v.complete && !v.taken && self.objects.is_some() => Ok(()),
            _ => Err(Refused::NotCached),
        }
    }

    /// Moves `view`'s objects out of the cache, for its informer's first list.
    fn take(&mut self, view: u64) -> Result<Vec<Arc<K>>, Refused> {
        self.cached(view)?;
        let info = self.views.get_mut(&view).ok_or(Refused::NotCached)?;
        info.taken = true;
        let keep = info.keep.clone();
        let objects = self.objects.as_mut().ok_or(Refused::NotCached)?;
        let keys: Vec<ObjectKey> = objects
            .iter()
            .filter(|(_, o)| keep(o))
            .map(|(k, _)| k.clone())
            .collect();
        Ok(keys.iter().filter_map(|k| objects.remove(k)).collect())
    }

    /// Some view still to list from the cache wants `obj`.
    fn awaited(&self, obj: &K) -> bool {
        self.views
            .values()
            .any(|v| v.complete && !v.taken && (v.keep)(obj))
    }

    pub fn synced(&self) -> bool {
        self.rv.is_some()
    }

    pub fn subscribers(&self) -> usize {
        self.subscribers.len()
    }

    /// Applies what the cache's reflector reported and passes it on to the subscribers it concerns.
    pub fn apply(&mut self, event: ReflectorEvent<K>) {
        match event {
            ReflectorEvent::Replace {
                objects,
                resource_version,
            } => {
                let rv = parse(&resource_version).or(self.rv).unwrap_or(0);
                if self.objects.is_some() {
                    let mut objects = objects;
                    objects.retain(|_, o| self.awaited(o));
                    self.objects = Some(objects);
                }
                self.rv = Some(rv);
                self.recent.clear();
                self.window_start = rv;
                // What a subscriber holds may now be missing deletions: it relists from here.
                for s in self.subscribers.drain(..) {
                    let _ = s.tx.send(Out::Expired);
                }
            }
            ReflectorEvent::Added(o) => self.change(Change::Added(Arc::new(o))),
            ReflectorEvent::Modified(o) => self.change(Change::Modified(Arc::new(o))),
            ReflectorEvent::Deleted(o) => self.change(Change::Deleted(Arc::new(o))),
            ReflectorEvent::Bookmark { resource_version } => {
                if let Some(rv) = parse(&resource_version) {
                    self.rv = Some(self.rv.map_or(rv, |old| old.max(rv)));
                }
                let rv = parse(&resource_version).unwrap_or(0);
                self.subscribers
                    .retain(|s| rv <= s.after || s.tx.send(Out::Bookmark(resource_version.clone())).is_ok());
            }
        }
    }

    fn change(&mut self, change: Change<K>) {
        let obj = change.object().clone();
        let key = ObjectKey::of(&*obj);
        let rv = obj
            .meta()
            .resource_version
            .as_deref()
            .and_then(parse)
            .or(self.rv)
            .unwrap_or(0);
        let awaited = self.awaited(&obj);
        if let Some(objects) = &mut self.objects {
            match &change {
                Change::Added(o) | Change::Modified(o) if awaited => {
                    objects.insert(key, o.clone());
                }
                _ => {
                    objects.remove(&key);
                }
            }
        }
        self.rv = Some(self.rv.map_or(rv, |old| old.max(rv)));
        self.subscribers
            .retain(|s| rv <= s.after || !(s.keep)(&obj) || s.tx.send(Out::Change(change.clone())).is_ok());
        self.recent.push_back((rv, change));
        while self.recent.len() > self.capacity {
            if let Some((dropped, _)) = self.recent.pop_front() {
                self.window_start = self.window_start.max(dropped);
            }
        }
    }

    /// `view`'s objects and the resourceVersion they are at (a list), moved out of the cache: a
    /// view lists from the cache once, later lists go to the API server.
    pub fn list(&mut self, view: u64) -> Result<(Vec<Arc<K>>, String), Refused> {
        let rv = self.rv.ok_or(Refused::NotSynced)?;
        Ok((self.take(view)?, rv.to_string()))
    }

    /// Drops the objects: from now on views list from the API server and share only the stream,
    /// so that a replica keeps no copy of what its shards do not hold.
    pub fn drop_objects(&mut self) {
        self.objects = None;
    }

    /// Subscribes a view from resourceVersion `from` (`initial`: a streaming list, the current
    /// objects first, then the end marker). `from` may lie ahead of the cache, when the view listed
    /// from the API server: changes up to it are then skipped. Returns what to send before the live
    /// changes.
    pub fn subscribe(
        &mut self,
        view: u64,
        from: &str,
        initial: bool,
        keep: Keep<K>,
        tx: mpsc::UnboundedSender<Out<K>>,
    ) -> Result<Vec<Out<K>>, Refused> {
        if self.closed {
            return Err(Refused::Closed);
        }
        let rv = self.rv.ok_or(Refused::NotSynced)?;
        // Views whose informer is gone, found before something is sent to them.
        self.subscribers.retain(|s| !s.tx.is_closed());
        let (first, after) = if initial {
            let mut out: Vec<Out<K>> = self
                .take(view)?
                .into_iter()
                .map(|o| Out::Change(Change::Added(o)))
                .collect();
            out.push(Out::InitialEventsEnd(rv.to_string()));
            (out, rv)
        } else {
            let from = parse(from).ok_or(Refused::Expired)?;
            let since = self.views.get(&view).map_or(u64::MAX, |v| v.since);
            if from < self.window_start || from < since {
                return Err(Refused::Expired);
            }
            let replay = self
                .recent
                .iter()
                .filter(|(at, c)| *at > from && keep(c.object()))
                .map(|(_, c)| Out::Change(c.clone()))
                .collect();
            (replay, from)
        };
        self.subscribers.push(Subscriber { keep, after, tx });
        Ok(first)
    }

    /// Ends every subscriber's stream and refuses new ones (the cache stops).
    pub fn close(&mut self) {
        self.closed = true;
        self.subscribers.clear();
    }
}

fn parse(rv: &str) -> Option<u64> {
    rv.parse().ok()
}
