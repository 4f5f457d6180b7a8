//! Reading what event handlers queued.

use std::{fmt::Display, hash::Hash};

use informer::WorkQueue;

/// Takes every key queued now, marking each done, sorted: a handler test checks which owners an event
/// wakes, not the order the queue hands them out in.
pub fn drain<T>(queue: &WorkQueue<T>) -> Vec<String>
where
    T: Clone + Eq + Hash + Ord + Display + Send + Sync + 'static,
{
    let mut out = Vec::new();
    while let Some(key) = queue.try_get() {
        out.push(key.to_string());
        queue.done(&key);
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn takes_every_queued_key_once_in_sorted_order() {
        let queue = WorkQueue::new();
        for key in ["ns/b", "ns/a", "ns/b"] {
            queue.add(key.to_owned());
        }
        assert_eq!(drain(&queue), ["ns/a", "ns/b"]);
        assert!(drain(&queue).is_empty());
    }
}
