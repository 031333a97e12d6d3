//! Helpers every layer may use; they import nothing from the rest of the crate: per-thread
//! buffer and name pools (performance caches, never correctness) and the hashers of the maps.

pub(crate) mod bufpool;
pub(crate) mod hash;
pub(crate) mod names;
