//! The pod-template hash that names a Deployment's ReplicaSets and labels their pods (upstream
//! `controller.ComputeHash`).
//!
//! FNV-1a-32 over the text upstream hashes, a go-spew dump of the Go template ([`upstream_dump`]),
//! then the collision count as upstream appends it, then upstream's encoding. The dump is
//! reproduced byte for byte so that a Deployment gets the ReplicaSet and pod names upstream would
//! give it: a controller taking over from upstream's, or running beside it, finds and creates the
//! same ReplicaSets. The Go types come from `hash/go_types.txt`; how their values print, and the
//! few cases followed only under an assumption, are in `hash/go_dump.rs` and `hash/quantity.rs`.
//! `tests-data/pod-template-hash` holds templates with the dump and hashes upstream gave them.

mod go_dump;
mod quantity;

use k8s_openapi::api::core::v1::PodTemplateSpec;

/// The label and selector key a Deployment adds to each of its ReplicaSets (apps/v1
/// `DefaultDeploymentUniqueLabelKey`).
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// FNV-1a 32-bit parameters (the FNV specification; Go's `hash/fnv.New32a`).
const FNV_OFFSET_BASIS: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

/// Characters of apimachinery's `rand.SafeEncodeString`: no vowels (no words) and no look-alikes
/// (`0`, `1`, `3`).
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Incremental FNV-1a over 32 bits.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a32(u32);

impl Default for Fnv1a32 {
    fn default() -> Self {
        Fnv1a32(FNV_OFFSET_BASIS)
    }
}

impl Fnv1a32 {
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u32::from(*b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    pub fn finish(self) -> u32 {
        self.0
    }
}

/// Maps every byte of `s` into `SAFE_ALPHABET` (apimachinery `rand.SafeEncodeString`).
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()]))
        .collect()
}

/// The text upstream feeds to the hash for `template`, kept apart from the hash so that a
/// difference can be read.
pub fn upstream_dump(template: &PodTemplateSpec) -> String {
    // Serializing these generated types cannot fail (string map keys only).
    let json = serde_json::to_value(template).unwrap_or_default();
    go_dump::dump("v1.PodTemplateSpec", &json)
}

/// The hash of `template` and `collision_count`, as it appears in ReplicaSet names and in the
/// `pod-template-hash` label. The template is hashed as it is: upstream does not drop a
/// `pod-template-hash` label the Deployment's template may carry.
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut h = Fnv1a32::default();
    h.write(upstream_dump(template).as_bytes());
    if let Some(c) = collision_count {
        // Upstream writes the count as 8 bytes, of which only the low 4 (little-endian) are set.
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&c.to_le_bytes());
        h.write(&bytes);
    }
    safe_encode(&h.finish().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::deployment;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        let hash = |s: &str| {
            let mut h = Fnv1a32::default();
            h.write(s.as_bytes());
            h.finish()
        };
        assert_eq!(hash(""), 0x811c_9dc5);
        assert_eq!(hash("a"), 0xe40c_292c);
        assert_eq!(hash("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn safe_encoding_uses_upstreams_alphabet() {
        // Each byte modulo 27: the digits '0'..'9' (48..57) land on the last nine characters and
        // wrap round to the first ones, which is why upstream's hashes are mostly digits.
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
    }

    #[test]
    fn hash_is_stable_and_depends_on_the_template_and_the_collision_count() {
        let t = deployment("foo", 1).build().spec.unwrap().template;
        let h = compute_hash(&t, None);
        assert_eq!(h, compute_hash(&t, None), "deterministic");
        assert!(h.bytes().all(|b| SAFE_ALPHABET.contains(&b)));
        assert_ne!(compute_hash(&t, Some(1)), h);
        assert_ne!(compute_hash(&t, Some(1)), compute_hash(&t, Some(2)));
        let other = deployment("foo", 1).image("other").build().spec.unwrap().template;
        assert_ne!(compute_hash(&other, None), h);
    }

    /// Templates with the dump and hashes upstream's own code gave them (k8s.io/api and
    /// apimachinery v0.36.3, after the protobuf round trip through which the controller reads
    /// them, the process in the UTC zone), one file each: `template` as kcm-rs receives it,
    /// `dump`, and `hashes` for several collision counts.
    #[test]
    fn dump_and_hash_match_upstreams_byte_for_byte() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests-data/pod-template-hash");
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 10, "{files:?}");
        for file in files {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            let name = v["name"].as_str().unwrap();
            let t: PodTemplateSpec = serde_json::from_value(v["template"].clone()).unwrap();
            let dump = upstream_dump(&t);
            let want = v["dump"].as_str().unwrap();
            if dump != want {
                let at = dump.bytes().zip(want.bytes()).take_while(|(a, b)| a == b).count();
                panic!(
                    "{name}: dumps differ at byte {at}:\n ours: {}\n    go: {}",
                    &dump[at.saturating_sub(200)..(at + 200).min(dump.len())],
                    &want[at.saturating_sub(200)..(at + 200).min(want.len())],
                );
            }
            for h in v["hashes"].as_array().unwrap() {
                let cc = h["collisionCount"].as_i64().map(|c| i32::try_from(c).unwrap());
                assert_eq!(compute_hash(&t, cc), h["hash"].as_str().unwrap(), "{name} {cc:?}");
            }
        }
    }
}
