//! A cheap hasher for maps keyed by ids and tokens this side chose itself.
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
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// `HashMap<u64, V, IdBuild>` for maps keyed by our own ids.
pub(crate) type IdBuild = BuildHasherDefault<IdHasher>;
