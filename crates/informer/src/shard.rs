//! Namespace-hash shards, for Kubernetes 1.36's server-side sharded list and watch (KEP-5866, alpha,
//! kube-apiserver feature gate `ShardedListAndWatch`).
//!
//! The API server hashes a field of each object with 64-bit FNV-1a and keeps the object when the hash
//! lies in `[start, end)` of a `shardRange` term of the request's `shardSelector` (apimachinery
//! `pkg/sharding`: `HashField`, `shardSelector.Matches`). kcm-rs shards by `object.metadata.namespace`
//! because everything one sync of a Deployment, ReplicaSet or Job reads or writes shares the owner's
//! namespace (`docs/scale-out.md`). Shard i of N covers `[floor(i·2^64/N), floor((i+1)·2^64/N))`, so the
//! N shards are contiguous and cover every hash. The same arithmetic filters on this side when the API
//! server does not (see [`crate::ShardFiltered`]).

use std::fmt;

/// The field kcm-rs shards by. (The server also accepts `object.metadata.uid`.)
pub const SHARD_FIELD: &str = "object.metadata.namespace";
/// The most shards one `--shards` may ask for: each is a Lease and a watch per kind, and the 2^64 hash
/// space cut finer than this buys nothing a cluster can use.
pub const MAX_SHARDS: u32 = 1024;

/// The 64-bit FNV-1a hash (Go's `hash/fnv.New64a`), the server's shard hash.
#[must_use]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET_BASIS, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// Shard `index` of `count`, of the layout `tag` names (0: equal ranges; see [`crate::Layout`]).
/// Invariant: `1 <= count <= MAX_SHARDS`, `index < count`, `start < end <= 2^64`, and for tag 0 the
/// bounds are the equal cut's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    index: u32,
    count: u32,
    tag: u32,
    start: u128,
    end: u128,
}

/// Why a shard could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shard {index} of {count}: the count must be 1 to {MAX_SHARDS} and the index below it")]
pub struct ShardError {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 || count > MAX_SHARDS || index >= count {
            return Err(ShardError { index, count });
        }
        Ok(Self::equal(index, count))
    }

    fn equal(index: u32, count: u32) -> Self {
        Self {
            index,
            count,
            tag: 0,
            start: bound(index, count),
            end: bound(index + 1, count),
        }
    }

    /// Shard `index` of `count` of a layout with cuts of its own (`tag` non-zero), `[start, end)`.
    pub fn cut(index: u32, count: u32, tag: u32, start: u128, end: u128) -> Result<Self, ShardError> {
        if count == 0 || count > MAX_SHARDS || index >= count || tag == 0 || start >= end || end > 1 << 64 {
            return Err(ShardError { index, count });
        }
        Ok(Self {
            index,
            count,
            tag,
            start,
            end,
        })
    }

    /// Every shard of `count`, in order.
    pub fn all(count: u32) -> Result<impl Iterator<Item = Shard>, ShardError> {
        Shard::new(0, count)?;
        Ok((0..count).map(move |index| Shard::equal(index, count)))
    }

    /// The shard holding objects of namespace `ns` among `count`.
    pub fn of_namespace(ns: &str, count: u32) -> Result<Shard, ShardError> {
        Shard::new(0, count)?;
        Ok(Self::of_hash(fnv1a64(ns.as_bytes()), count))
    }

    /// The index of the equal range of `count` holding `hash` (`count` valid).
    pub(crate) fn of_hash_index(hash: u64, count: u32) -> usize {
        Self::of_hash(hash, count).index as usize
    }

    fn of_hash(hash: u64, count: u32) -> Shard {
        // floor(h·N / 2^64) is the shard up to the rounding of the bounds; step to the exact one.
        let mut index = ((u128::from(hash) * u128::from(count)) >> 64) as u32;
        while index + 1 < count && u128::from(hash) >= bound(index + 1, count) {
            index += 1;
        }
        while u128::from(hash) < bound(index, count) {
            index -= 1;
        }
        Shard::equal(index, count)
    }

    pub fn index(self) -> u32 {
        self.index
    }

    pub fn count(self) -> u32 {
        self.count
    }

    /// The layout's tag: 0 for equal ranges, else a hash of its cuts.
    pub fn tag(self) -> u32 {
        self.tag
    }

    /// The first hash in this shard.
    pub fn start(self) -> u128 {
        self.start
    }

    /// One past the last hash in this shard (2^64 for the last shard).
    pub fn end(self) -> u128 {
        self.end
    }

    pub fn contains_hash(self, hash: u64) -> bool {
        (self.start()..self.end()).contains(&u128::from(hash))
    }

    /// Some hash lies in both.
    pub fn overlaps(self, other: Shard) -> bool {
        self.start < other.end && other.start < self.end
    }

    pub fn contains_namespace(self, ns: &str) -> bool {
        self.contains_hash(fnv1a64(ns.as_bytes()))
    }

    /// `shardRange(object.metadata.namespace, '0x…', '0x…')`, bounds as the server wants them: `0x`
    /// and 16 lowercase hex digits, the end of the last shard `0x10000000000000000`.
    pub fn selector(self) -> String {
        format!(
            "shardRange({SHARD_FIELD}, '{}', '{}')",
            hex_bound(self.start()),
            hex_bound(self.end())
        )
    }
}

/// `3-of-12`, or `3-of-12c0a1b2c3d` in a layout with cuts of its own: how logs, metrics and Lease
/// names say which shard.
impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-of-{}", self.index, self.count)?;
        if self.tag != 0 {
            write!(f, "c{:08x}", self.tag)?;
        }
        Ok(())
    }
}

/// The start of shard `index` of `count`: floor(index·2^64 / count), in u128 so that `count` itself
/// gives 2^64.
fn bound(index: u32, count: u32) -> u128 {
    (u128::from(index) << 64) / u128::from(count)
}

fn hex_bound(b: u128) -> String {
    format!("0x{b:016x}")
}

/// The shards a lister-watcher asks for and keeps: their selector terms joined with `||`.
/// Invariant: non-empty, all of one layout, sorted, no duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSet {
    shards: Vec<Shard>,
}

impl ShardSet {
    /// `None` when `shards` is empty or mixes layouts.
    pub fn new(mut shards: Vec<Shard>) -> Option<Self> {
        let first = *shards.first()?;
        if shards
            .iter()
            .any(|s| (s.count, s.tag) != (first.count, first.tag))
        {
            return None;
        }
        shards.sort_unstable();
        shards.dedup();
        Some(Self { shards })
    }

    pub fn one(shard: Shard) -> Self {
        Self { shards: vec![shard] }
    }

    pub fn shards(&self) -> &[Shard] {
        &self.shards
    }

    pub fn contains_namespace(&self, ns: &str) -> bool {
        let hash = fnv1a64(ns.as_bytes());
        self.shards.iter().any(|s| s.contains_hash(hash))
    }

    /// The value of the `shardSelector` query parameter.
    pub fn selector(&self) -> String {
        let terms: Vec<_> = self.shards.iter().map(|s| s.selector()).collect();
        terms.join(" || ")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Values from Go: `fnv.New64a()` over the bytes, `%016x` (apimachinery `HashField`).
    #[test]
    fn the_hash_is_gos_fnv1a64() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn bounds_are_written_as_the_server_parses_them() {
        let all = Shard::new(0, 1).unwrap();
        assert_eq!(
            all.selector(),
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"
        );
        let halves: Vec<_> = Shard::all(2).unwrap().map(Shard::selector).collect();
        assert_eq!(
            halves,
            [
                "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
                "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
            ]
        );
        let set = ShardSet::new(halves_of(4, &[3, 1])).unwrap();
        assert_eq!(
            set.selector(),
            "shardRange(object.metadata.namespace, '0x4000000000000000', '0x8000000000000000') || \
             shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')"
        );
    }

    fn halves_of(count: u32, indexes: &[u32]) -> Vec<Shard> {
        indexes.iter().map(|i| Shard::new(*i, count).unwrap()).collect()
    }

    #[test]
    fn out_of_range_counts_and_mixed_sets_are_refused() {
        assert!(Shard::new(0, 0).is_err());
        assert!(Shard::new(3, 3).is_err());
        assert!(Shard::new(0, MAX_SHARDS + 1).is_err());
        let mixed = vec![Shard::new(0, 2).unwrap(), Shard::new(0, 3).unwrap()];
        assert!(ShardSet::new(mixed).is_none());
        assert!(ShardSet::new(Vec::new()).is_none());
    }

    proptest! {
        #[test]
        fn shards_are_contiguous_and_cover_every_hash(count in 1..=MAX_SHARDS) {
            let shards: Vec<_> = Shard::all(count).unwrap().collect();
            prop_assert_eq!(shards[0].start(), 0);
            prop_assert_eq!(shards[shards.len() - 1].end(), 1u128 << 64);
            for w in shards.windows(2) {
                prop_assert_eq!(w[0].end(), w[1].start());
                prop_assert!(w[0].start() < w[0].end());
            }
        }

        #[test]
        fn a_hash_falls_in_exactly_its_shard(hash in any::<u64>(), count in 1..=MAX_SHARDS) {
            let shard = Shard::of_hash(hash, count);
            prop_assert!(shard.contains_hash(hash));
            let holding = Shard::all(count).unwrap().filter(|s| s.contains_hash(hash)).count();
            prop_assert_eq!(holding, 1);
        }

        #[test]
        fn a_namespace_is_in_a_set_when_its_shard_is(ns in "[a-z0-9-]{1,63}", count in 1..=64u32, pick in any::<u64>()) {
            let picked: Vec<_> = Shard::all(count).unwrap().filter(|s| pick >> (s.index() % 64) & 1 == 1).collect();
            let Some(set) = ShardSet::new(picked.clone()) else { return Ok(()) };
            let own = Shard::of_namespace(&ns, count).unwrap();
            prop_assert_eq!(set.contains_namespace(&ns), picked.contains(&own));
        }
    }
}
