//! How the namespace-hash space is cut into shards: equal ranges, or cuts fitted to the namespaces
//! present.
//!
//! Why cuts of one's own: FNV-1a's top bits hardly move with a name's last two bytes, so names that
//! differ only at the end (`team-a` … `team-z`, `app-1` … `app-99`) hash next to each other, and
//! equal ranges put them in one shard whatever the count (separating `team-*` would take 2^24
//! ranges). Their hashes still differ, so ranges whose bounds are placed between them do separate
//! them. KEP-5866 leaves the choice of ranges to clients for this reason ("Hot Shards": clients
//! adjust their ranges). [`Layout::fit`] places the bounds at the weighted quantiles of the
//! namespaces' hashes, as range-partitioned stores split their key space.

use std::fmt;

use crate::shard::{MAX_SHARDS, Shard, ShardError, fnv1a64};

/// The tag of every layout whose cuts are refitted online (`--shard-cuts=auto`): one tag for all its
/// versions, so that a shard whose range a refit keeps keeps its Lease (named after tag and range)
/// and its holder. A fixed set of cuts never gets it ([`Layout::with_cuts`]).
pub const AUTO_TAG: u32 = 0xa;

/// The shards of one layout: `count` equal ranges, or the ranges between `cuts`.
/// Invariant: `cuts` is empty or has `count - 1` strictly increasing values, none 0; `tag` is 0
/// exactly when `cuts` is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    count: u32,
    cuts: Vec<u64>,
    tag: u32,
}

/// Why a layout could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error(transparent)]
    Count(#[from] ShardError),
    #[error("shard cuts must be increasing hash values above 0x0000000000000000: {0}")]
    Order(String),
    #[error("a shard cut must be written 0x and 16 hex digits: {0:?}")]
    Syntax(String),
}

impl Layout {
    /// `count` equal ranges, what `--shards` alone gives.
    pub fn equal(count: u32) -> Result<Self, LayoutError> {
        Shard::new(0, count)?;
        Ok(Self {
            count,
            cuts: Vec::new(),
            tag: 0,
        })
    }

    /// The ranges between `cuts`: `[0, cuts[0])`, `[cuts[0], cuts[1])`, … `[cuts[last], 2^64)`.
    pub fn with_cuts(cuts: Vec<u64>) -> Result<Self, LayoutError> {
        let count = u32::try_from(cuts.len() + 1).unwrap_or(u32::MAX);
        Shard::new(0, count.min(MAX_SHARDS + 1))?;
        if cuts.is_empty() {
            return Self::equal(1);
        }
        if cuts[0] == 0 || cuts.windows(2).any(|w| w[0] >= w[1]) {
            return Err(LayoutError::Order(text(&cuts)));
        }
        let bytes: Vec<u8> = cuts.iter().flat_map(|c| c.to_be_bytes()).collect();
        let hash = fnv1a64(&bytes);
        let tag = (hash ^ (hash >> 32)) as u32;
        Ok(Self {
            count,
            cuts,
            tag: if tag <= AUTO_TAG { tag + AUTO_TAG + 1 } else { tag },
        })
    }

    /// A version of the refitted layout of `count` shards: `cuts`, or before the first fit the equal
    /// ranges' bounds written as cuts. Every version has [`AUTO_TAG`].
    pub fn auto(count: u32, cuts: Option<Vec<u64>>) -> Result<Self, LayoutError> {
        Shard::new(0, count)?;
        let cuts = match cuts {
            Some(c) => c,
            None => (1..count)
                .map(|i| Shard::new(i, count).map(|s| s.start() as u64))
                .collect::<Result<_, _>>()?,
        };
        let mut layout = Self::with_cuts(cuts)?;
        if layout.count != count {
            return Err(LayoutError::Count(ShardError {
                index: layout.count.saturating_sub(1),
                count,
            }));
        }
        if !layout.cuts.is_empty() {
            layout.tag = AUTO_TAG;
        }
        Ok(layout)
    }

    /// Whether this is a version of the refitted layout.
    pub fn is_auto(&self) -> bool {
        self.tag == AUTO_TAG
    }

    /// The next version of this refitted layout: fitted to `weighted` as [`Layout::fit`] does, but
    /// each cut that would put no namespace on another side than this version's cut does stays
    /// where it is, so that the shards it bounds keep their ranges and their holders.
    pub fn refit(&self, weighted: &[(u64, u64)]) -> Result<Self, LayoutError> {
        let fitted = Self::fit(self.count, weighted.iter().copied())?;
        if fitted.cuts.len() != self.cuts.len() {
            return Self::auto(self.count, Some(fitted.cuts));
        }
        let kept: Vec<u64> = self
            .cuts
            .iter()
            .zip(&fitted.cuts)
            .map(|(&old, &new)| {
                let (low, high) = (old.min(new), old.max(new));
                let moves_one = weighted.iter().any(|(h, _)| (low..high).contains(h));
                if moves_one { new } else { old }
            })
            .collect();
        let cuts = if kept.windows(2).all(|w| w[0] < w[1]) {
            kept
        } else {
            fitted.cuts
        };
        Self::auto(self.count, Some(cuts))
    }

    /// The weight in each shard, in shard order, of `weighted` (each namespace's hash and weight).
    pub fn loads(&self, weighted: &[(u64, u64)]) -> Vec<u64> {
        let mut loads = vec![0u64; self.count as usize];
        for (hash, weight) in weighted {
            let index = self.cuts.partition_point(|c| c <= hash);
            let index = if self.cuts.is_empty() {
                Shard::of_hash_index(*hash, self.count)
            } else {
                index
            };
            loads[index] = loads[index].saturating_add(*weight);
        }
        loads
    }

    /// Cuts as `--shard-cuts` takes them: `0x…,0x…`, each as the API server writes bounds.
    pub fn parse_cuts(value: &str) -> Result<Self, LayoutError> {
        let cuts = value
            .split(',')
            .map(str::trim)
            .map(|c| {
                c.strip_prefix("0x")
                    .filter(|h| h.len() == 16)
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .ok_or_else(|| LayoutError::Syntax(c.to_owned()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::with_cuts(cuts)
    }

    /// Cuts fitted to `weighted` (each namespace's hash and weight): the k-th cut where the running
    /// weight, in hash order, comes closest to k/count of the total, so that each shard carries
    /// about an equal part. A namespace is never split: one heavier than a shard's part leaves its
    /// neighbours' shards lighter. No namespaces: equal ranges.
    pub fn fit(count: u32, weighted: impl IntoIterator<Item = (u64, u64)>) -> Result<Self, LayoutError> {
        Shard::new(0, count)?;
        let mut points: Vec<(u64, u64)> = weighted.into_iter().collect();
        points.sort_unstable();
        points.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        if points.is_empty() || count == 1 {
            return Self::equal(count);
        }
        let n = points.len();
        // before[i]: the weight of the namespaces before the i-th.
        let mut before = Vec::with_capacity(n + 1);
        before.push(0u128);
        for (_, w) in &points {
            before.push(before[before.len() - 1] + u128::from(*w));
        }
        let total = before[n];
        let mut cuts = Vec::with_capacity(count as usize - 1);
        let mut first = 0usize; // where the last shard placed began
        for k in 1..u128::from(count) {
            let target = total * k / u128::from(count);
            // The next shard starts at namespace b > first (or past the end), closest to target.
            let b = ((first + 1).min(n)..=n)
                .min_by_key(|&b| before[b].abs_diff(target))
                .unwrap_or(n);
            cuts.push(match points.get(b) {
                Some((hash, _)) => *hash,
                None => points[n - 1].0.saturating_add(1),
            });
            first = b;
        }
        Self::with_cuts(increasing(cuts))
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// 0 for equal ranges, else a hash of the cuts: layouts of one count but other cuts differ.
    pub fn tag(&self) -> u32 {
        self.tag
    }

    pub fn cuts(&self) -> &[u64] {
        &self.cuts
    }

    /// Every shard, in hash order.
    pub fn shards(&self) -> Vec<Shard> {
        (0..self.count).map(|i| self.shard(i)).collect()
    }

    fn shard(&self, index: u32) -> Shard {
        if self.cuts.is_empty() {
            return Shard::new(index, self.count).expect("index below a valid count");
        }
        let i = index as usize;
        let start = if i == 0 { 0 } else { u128::from(self.cuts[i - 1]) };
        let end = self.cuts.get(i).map_or(1 << 64, |c| u128::from(*c));
        Shard::cut(index, self.count, self.tag, start, end).expect("cuts increasing, tag non-zero")
    }

    /// The shard holding namespace `ns`.
    pub fn shard_of_namespace(&self, ns: &str) -> Shard {
        let hash = fnv1a64(ns.as_bytes());
        if self.cuts.is_empty() {
            return Shard::of_namespace(ns, self.count).expect("valid count");
        }
        let index = self.cuts.partition_point(|c| *c <= hash);
        self.shard(u32::try_from(index).expect("fewer than MAX_SHARDS cuts"))
    }

    /// The value `--shard-cuts` takes for this layout (empty for equal ranges).
    pub fn cuts_text(&self) -> String {
        text(&self.cuts)
    }
}

/// `12`, or `12c0a1b2c3d` for a layout with cuts of its own: how Lease names tell layouts apart.
impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.count)?;
        if self.tag != 0 {
            write!(f, "c{:08x}", self.tag)?;
        }
        Ok(())
    }
}

fn text(cuts: &[u64]) -> String {
    let cuts: Vec<String> = cuts.iter().map(|c| format!("0x{c:016x}")).collect();
    cuts.join(",")
}

/// Makes non-decreasing cuts strictly increasing and above 0, moving as few as it can: forward to
/// one past the previous, then, where that ran past the top of the hash space, back below the next.
fn increasing(mut cuts: Vec<u64>) -> Vec<u64> {
    let mut floor = 1u64;
    for c in &mut cuts {
        *c = (*c).max(floor);
        floor = c.saturating_add(1);
    }
    let mut ceiling = u64::MAX;
    for c in cuts.iter_mut().rev() {
        *c = (*c).min(ceiling);
        ceiling = c.saturating_sub(1);
    }
    cuts
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
