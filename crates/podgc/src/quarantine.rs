//! Nodes that pods are bound to but the cache does not hold, each held back for
//! [`QUARANTINE`] before the API server is asked whether it is gone: a node may reach the
//! cache after a pod bound to it (upstream's `nodeQueue`, a delaying work queue).

use std::{collections::HashMap, time::Duration};

use tokio::time::Instant;

/// How long a node missing from the cache waits before it is looked up (upstream
/// `quarantineTime`).
pub const QUARANTINE: Duration = Duration::from_secs(40);

/// The nodes in quarantine, with when each may be looked up. A node named again while it waits
/// keeps its first time, as a delaying queue keeps the earlier of two.
#[derive(Debug, Default)]
pub struct Quarantine {
    ready_at: HashMap<String, Instant>,
}

impl Quarantine {
    /// Puts each of `names` into quarantine, unless it already is.
    pub fn add<'a>(&mut self, names: impl IntoIterator<Item = &'a String>, now: Instant) {
        for name in names {
            self.ready_at.entry(name.clone()).or_insert(now + QUARANTINE);
        }
    }

    /// The nodes whose quarantine is over at `now`, which leave it: a node still missing after
    /// its lookup comes back on the next pass that finds a pod bound to it.
    pub fn take_ready(&mut self, now: Instant) -> Vec<String> {
        let mut ready: Vec<String> = self
            .ready_at
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(name, _)| name.clone())
            .collect();
        ready.sort();
        for name in &ready {
            self.ready_at.remove(name);
        }
        ready
    }

    pub fn len(&self) -> usize {
        self.ready_at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ready_at.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_looked_up_once_its_quarantine_is_over_and_keeps_its_first_time() {
        let t0 = Instant::now();
        let mut q = Quarantine::default();
        let (a, b) = ("a".to_owned(), "b".to_owned());
        q.add([&a], t0);
        q.add([&a, &b], t0 + Duration::from_secs(20));
        assert!(q.take_ready(t0 + Duration::from_secs(39)).is_empty());
        assert_eq!(q.take_ready(t0 + QUARANTINE), ["a"]);
        assert_eq!(q.len(), 1, "b waits until 60 s");
        assert_eq!(q.take_ready(t0 + Duration::from_secs(60)), ["b"]);
        assert!(q.is_empty());
        q.add([&a], t0 + Duration::from_secs(60));
        assert!(
            q.take_ready(t0 + Duration::from_secs(61)).is_empty(),
            "named again after its lookup: a new quarantine"
        );
    }
}
