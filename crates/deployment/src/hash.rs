//! The pod-template hash that names a Deployment's ReplicaSets and labels their pods (upstream
//! `controller.ComputeHash`).
//!
//! Upstream hashes a `spew` dump of the Go struct, which Rust cannot reproduce byte for byte; the hash
//! here is FNV-1a-32 over the template's JSON (struct fields in declaration order, maps sorted, so the
//! same template always gives the same bytes), then the collision count as upstream appends it, then
//! upstream's encoding. Names therefore differ from upstream's, which is harmless: which ReplicaSet
//! belongs to which template is decided by comparing templates, never by hash.

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

/// Maps every byte of `s` into [`SAFE_ALPHABET`] (apimachinery `rand.SafeEncodeString`).
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()]))
        .collect()
}

/// The hash of `template` (its own hash label ignored) and `collision_count`, as it appears in
/// ReplicaSet names and in the `pod-template-hash` label.
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut t = template.clone();
    if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    let mut h = Fnv1a32::default();
    // Serializing these generated types cannot fail (string map keys only); an empty input would
    // still give a valid, stable hash.
    h.write(&serde_json::to_vec(&t).unwrap_or_default());
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
    fn hash_is_stable_ignores_its_own_label_and_depends_on_the_collision_count() {
        let t = deployment("foo", 1).build().spec.unwrap().template;
        let h = compute_hash(&t, None);
        assert_eq!(h, compute_hash(&t, None), "deterministic");
        assert!(h.bytes().all(|b| SAFE_ALPHABET.contains(&b)));
        let mut labelled = t.clone();
        labelled
            .metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert(POD_TEMPLATE_HASH_LABEL.into(), "whatever".into());
        assert_eq!(compute_hash(&labelled, None), h);
        assert_ne!(compute_hash(&t, Some(1)), h);
        assert_ne!(compute_hash(&t, Some(1)), compute_hash(&t, Some(2)));
        let other = deployment("foo", 1).image("other").build().spec.unwrap().template;
        assert_ne!(compute_hash(&other, None), h);
    }
}
