//! Which of our tokens (argument streams, progress receivers) travel in which of our requests:
//! they end when that request is answered, given up, or never sent.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::id_hash::IdBuild;

#[derive(Default)]
pub(crate) struct CallBindings {
    /// Our request id → the tokens in its params.
    owned: Mutex<HashMap<u64, Vec<u64>, IdBuild>>,
    /// Entries of `owned`, so that answers to calls that carry no token skip the lock.
    count: AtomicUsize,
}

impl CallBindings {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<u64>, IdBuild>> {
        // Every critical section is one map operation: a poisoned lock is still consistent.
        self.owned.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `token` travels in the params of our request `id`.
    pub(crate) fn bind(&self, id: u64, token: u64) {
        self.lock().entry(id).or_default().push(token);
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    /// Our request `id` ended: the tokens it carried (none, without taking the lock, in the
    /// common case of a call that carries none).
    pub(crate) fn take(&self, id: u64) -> Vec<u64> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let tokens = self.lock().remove(&id).unwrap_or_default();
        self.count.fetch_sub(tokens.len(), Ordering::AcqRel);
        tokens
    }

    /// The connection ended: forget every binding.
    pub(crate) fn clear(&self) {
        let mut owned = self.lock();
        owned.clear();
        self.count.store(0, Ordering::Release);
    }
}
