//! Cheap hashers: one for maps keyed by ids and tokens this side chose itself, and a seeded one
//! for maps keyed by what the peer sends.
//!
//! Our request ids, stream tokens and progress tokens come from per-connection counters, so the
//! maps keyed by them need no protection against crafted collisions (the peer chooses no entry;
//! a lookup with a key of its choosing cannot degrade the table). One multiply mixes sequential
//! integers well enough and costs a fraction of SipHash, on a path taken several times per call.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // A word at a time (a method name costs a few multiplies, not one per byte); the last
        // partial word is padded and tagged with its length.
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.write_u64(u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// `HashMap<u64, V, IdBuild>` for maps keyed by our own ids.
pub(crate) type IdBuild = BuildHasherDefault<IdHasher>;

/// For maps keyed by ids the peer chose (its request ids): the same cheap mixing, but started
/// from a random seed per map and finished with a full avalanche, so the peer cannot aim its
/// ids at one bucket without knowing the seed. (Such a map also stays small: it holds the
/// peer's requests in flight, which the connection bounds.)
#[derive(Clone)]
pub(crate) struct SeededBuild(u64);

impl Default for SeededBuild {
    fn default() -> Self {
        use std::hash::BuildHasher;
        SeededBuild(std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64))
    }
}

impl std::hash::BuildHasher for SeededBuild {
    type Hasher = SeededHasher;
    fn build_hasher(&self) -> SeededHasher {
        SeededHasher(IdHasher(self.0))
    }
}

pub(crate) struct SeededHasher(IdHasher);

impl Hasher for SeededHasher {
    fn finish(&self) -> u64 {
        // murmur3's fmix64.
        let mut h = self.0.finish();
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }
    fn write_u64(&mut self, n: u64) {
        self.0.write_u64(n);
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn seeded_maps_hash_the_same_key_differently_and_spread_sequential_ids() {
        let (a, b) = (SeededBuild::default(), SeededBuild::default());
        assert_ne!(a.hash_one(1u64), b.hash_one(1u64), "two maps get different seeds");
        let buckets: std::collections::HashSet<u64> = (0..1024u64).map(|n| a.hash_one(n) & 1023).collect();
        assert!(buckets.len() > 600, "sequential ids spread over the low bits: {}", buckets.len());
    }
}
