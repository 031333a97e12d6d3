//! Hashers: a cheap one for maps keyed by ids, tokens and names this side chose itself, and
//! std's keyed SipHash for maps keyed by what the peer sends.
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
            self.write_u64(short_word(rest) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Up to eight bytes as a little-endian word, zero above them (`short_word(b"ab") == 0x6261`).
///
/// Read with two loads that may overlap, as a copy of that length stores them, not copied
/// byte by byte into a zeroed buffer: a word loaded from bytes stored one at a time a moment
/// before waits until they reach the cache (the CPU forwards a store only to a load no wider
/// than it). Such a copy of a method name's last word was a quarter of the time of the router's
/// lookup.
#[inline(always)]
pub(crate) fn short_word(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!(n <= 8);
    if n >= 4 {
        let lo = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let hi = u64::from(u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]));
        // The two overlap where `n < 8`: the same bytes at the same places, so `|` keeps them.
        lo | hi << (8 * (n - 4))
    } else if n >= 2 {
        // The last byte alone, not the last two: a copy of two or three bytes stores a pair at
        // the start and the last byte by itself, and a pair loaded across both would wait.
        let lo = u64::from(u16::from_le_bytes([b[0], b[1]]));
        lo | u64::from(b[n - 1]) << (8 * (n - 1))
    } else {
        b.first().map_or(0, |&byte| u64::from(byte))
    }
}

/// `HashMap<u64, V, IdBuild>` for maps keyed by our own ids (and the router's method names: the
/// peer looks names up but never enters one, so it cannot crowd a bucket).
pub(crate) type IdBuild = BuildHasherDefault<IdHasher>;

/// For maps keyed by what the peer chose (its request ids): std's `RandomState` (SipHash-1-3
/// with random keys), a hash meant to resist chosen keys. The word hash above does not: flipping
/// bit 63 of one word and bit 28 of the next gives the same hash whatever the starting seed
/// (the multiply carries the top bit straight through, the rotation moves it to bit 28), so a
/// peer could aim every id at one bucket. Such a map is touched only for requests that stay in
/// flight, never for one answered in its first poll.
pub(crate) type PeerBuild = std::collections::hash_map::RandomState;

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, Hash};

    use super::*;

    /// Two words hashed one after the other.
    #[derive(Hash)]
    struct Words(u64, u64);

    #[test]
    fn the_word_hash_has_seed_independent_collisions_and_the_peer_maps_do_not_use_it() {
        let (a, b) = (Words(0x1234, 0x5678), Words(0x1234 ^ (1 << 63), 0x5678 ^ (1 << 28)));
        let word = |w: &Words, seed: u64| {
            let mut h = IdHasher(seed);
            w.hash(&mut h);
            h.finish()
        };
        for seed in [0, 1, 0x5eed, u64::MAX] {
            assert_eq!(word(&a, seed), word(&b, seed), "the flaw this type is not used for");
        }
        // Maps keyed by the peer's ids hash these apart (with a vanishing chance of a true
        // collision, twice in a row).
        let (m1, m2) = (PeerBuild::default(), PeerBuild::default());
        assert!(m1.hash_one(&a) != m1.hash_one(&b) || m2.hash_one(&a) != m2.hash_one(&b));
    }

    #[test]
    fn a_short_word_is_its_bytes_zero_padded() {
        let bytes = *b"\x01\x82\x03\xf4\x05\x06\xa7\x08";
        for n in 0..=8 {
            let mut padded = [0u8; 8];
            padded[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(short_word(&bytes[..n]), u64::from_le_bytes(padded), "{n} bytes");
        }
        // Names that differ only in their last bytes hash apart.
        let hash = |s: &str| IdBuild::default().hash_one(s);
        assert_ne!(hash("notify"), hash("notifz"));
        assert_ne!(hash("add"), hash("ad"));
    }

    #[test]
    fn a_short_word_tells_apart_every_byte_at_every_length() {
        let bytes = b"abcdefgh";
        for n in 0..=bytes.len() {
            let a = &bytes[..n];
            let word = short_word(a);
            assert_eq!(word.to_le_bytes()[..n], *a, "{n} bytes, in order");
            assert!(word.to_le_bytes()[n..].iter().all(|&b| b == 0), "{n} bytes, zero above");
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 0x80;
                assert_ne!(short_word(&b), word, "{n} bytes, byte {i} differs");
            }
        }
    }
}
