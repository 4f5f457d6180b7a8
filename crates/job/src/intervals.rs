//! Sets of completion indexes as ordered, disjoint, non-adjacent intervals, and their string form
//! in `status.completedIndexes`, `status.failedIndexes` and `successPolicy` rules (upstream
//! `orderedIntervals` in `indexed_job_utils.go`).
//!
//! The string form is upstream's exactly: intervals separated by commas, a run of two written as
//! `a,b`, a longer run as `a-b`. The API server validates these strings, so a different spelling of
//! the same set would be rejected or, worse, churn the status on every sync.

use std::fmt;

/// One run of consecutive indexes, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Interval {
    pub(crate) first: i32,
    pub(crate) last: i32,
}

/// Disjoint intervals in increasing order, never two adjacent ones (they are merged).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OrderedIntervals(pub(crate) Vec<Interval>);

impl OrderedIntervals {
    /// Parses an index string, keeping only indexes below `completions`. Like upstream, an interval
    /// that does not parse is skipped and parsing stops at the first interval starting at or beyond
    /// `completions` (the strings this controller reads are ordered, so nothing valid follows).
    pub(crate) fn parse(s: &str, completions: i32) -> Self {
        let mut out: Vec<Interval> = Vec::new();
        if s.is_empty() {
            return Self(out);
        }
        for part in s.split(',') {
            let mut limits = part.split('-');
            let Some(Ok(first)) = limits.next().map(str::parse::<i32>) else {
                tracing::info!(interval = part, "corrupted indexes interval, ignoring");
                continue;
            };
            if first >= completions {
                break;
            }
            let last = match limits.next() {
                Some(l) => match l.parse::<i32>() {
                    Ok(l) => l.min(completions - 1),
                    Err(_) => {
                        tracing::info!(interval = part, "corrupted indexes interval, ignoring");
                        continue;
                    }
                },
                None => first,
            };
            match out.last_mut() {
                Some(prev) if prev.last == first - 1 => prev.last = last,
                _ => out.push(Interval { first, last }),
            }
        }
        Self(out)
    }

    /// This set plus `indexes`, which must be in increasing order.
    #[must_use]
    pub(crate) fn with_ordered_indexes(&self, indexes: &[i32]) -> Self {
        let single = Self(indexes.iter().map(|&i| Interval { first: i, last: i }).collect());
        self.merge(&single)
    }

    /// The union of two sets.
    #[must_use]
    pub(crate) fn merge(&self, other: &Self) -> Self {
        let mut out: Vec<Interval> = Vec::with_capacity(self.0.len() + other.0.len());
        let mut push = |iv: Interval| match out.last_mut() {
            Some(prev) if iv.first <= prev.last.saturating_add(1) => prev.last = prev.last.max(iv.last),
            _ => out.push(iv),
        };
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            if self.0[i].first < other.0[j].first {
                push(self.0[i]);
                i += 1;
            } else {
                push(other.0[j]);
                j += 1;
            }
        }
        self.0[i..].iter().chain(&other.0[j..]).for_each(|iv| push(*iv));
        Self(out)
    }

    /// How many indexes the set holds.
    pub(crate) fn total(&self) -> i32 {
        self.0.iter().map(|iv| iv.last - iv.first + 1).sum()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ix` is in the set (binary search: index strings of 100,000 completions are common).
    pub(crate) fn has(&self, ix: i32) -> bool {
        let pos = self.0.partition_point(|iv| iv.last < ix);
        self.0.get(pos).is_some_and(|iv| iv.first <= ix)
    }

    /// Every index of the set, in order (the property tests check the set through it).
    #[cfg(test)]
    pub(crate) fn indexes(&self) -> impl Iterator<Item = i32> + '_ {
        self.0.iter().flat_map(|iv| iv.first..=iv.last)
    }
}

impl fmt::Display for OrderedIntervals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, iv) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", iv.first)?;
            if iv.last == iv.first + 1 {
                write!(f, ",{}", iv.last)?;
            } else if iv.last > iv.first {
                write!(f, "-{}", iv.last)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "intervals_tests.rs"]
mod tests;
