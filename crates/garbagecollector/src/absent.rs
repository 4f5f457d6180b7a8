//! Owners verified absent, so that the dependents of one deleted owner do not each ask the API
//! server again (upstream `ReferenceCache`, 500 entries).

use std::num::NonZeroUsize;

use lru::LruCache;

use crate::identity::Identity;

/// How many absent owners are remembered (upstream `NewDependencyGraphBuilder`).
pub const ABSENT_OWNERS: NonZeroUsize = NonZeroUsize::new(500).expect("non-zero");

/// A bounded set of identities, the least recently added or looked up dropped first.
#[derive(Debug)]
pub struct AbsentOwners(LruCache<Identity, ()>);

impl Default for AbsentOwners {
    fn default() -> Self {
        Self(LruCache::new(ABSENT_OWNERS))
    }
}

impl AbsentOwners {
    pub fn add(&mut self, identity: Identity) {
        self.0.put(identity, ());
    }

    pub fn has(&mut self, identity: &Identity) -> bool {
        self.0.get(identity).is_some()
    }
}
