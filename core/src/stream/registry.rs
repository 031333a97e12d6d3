//! The streams this side generates, by token; and which of them belong to one of our requests
//! (streams passed as arguments die when that request is answered).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::producer::Producer;
use crate::id_hash::IdBuild;

#[derive(Default)]
struct Inner {
    live: HashMap<u64, Arc<Producer>, IdBuild>,
    /// Our request id → the tokens of the streams in its params.
    owned: HashMap<u64, Vec<u64>, IdBuild>,
    closed: bool,
}

pub(crate) struct Producers {
    /// StreamJsonRpc numbers its generator tokens from 1, per connection.
    next_token: AtomicU64,
    inner: Mutex<Inner>,
    /// Entries of `owned`, so that answers to calls without streams skip the lock.
    owned_count: AtomicUsize,
}

impl Default for Producers {
    fn default() -> Self {
        Producers { next_token: AtomicU64::new(1), inner: Mutex::default(), owned_count: AtomicUsize::new(0) }
    }
}

impl Producers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every critical section is a few map operations: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn next_token(&self) -> u64 {
        self.next_token.fetch_add(1, Ordering::Relaxed)
    }

    /// Make a producer reachable by its token (on a closed connection it is disposed at once).
    pub(crate) fn insert(&self, producer: Arc<Producer>) {
        let mut inner = self.lock();
        if inner.closed {
            drop(inner);
            producer.dispose();
            return;
        }
        inner.live.insert(producer.token, producer);
    }

    pub(crate) fn get(&self, token: u64) -> Option<Arc<Producer>> {
        self.lock().live.get(&token).cloned()
    }

    /// End a stream: its source is dropped (once a `next` in progress lets go of it), and its
    /// token is unknown from now on. `false` when it was not live.
    pub(crate) fn dispose(&self, token: u64) -> bool {
        let producer = self.lock().live.remove(&token);
        match producer {
            Some(p) => {
                p.dispose();
                true
            }
            None => false,
        }
    }

    /// The stream `token` travels in the params of our request `id`: it ends when `id` is answered.
    pub(crate) fn bind_to_call(&self, token: u64, id: u64) {
        let mut inner = self.lock();
        if inner.live.contains_key(&token) {
            inner.owned.entry(id).or_default().push(token);
            self.owned_count.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Our request `id` was answered (or given up, or never sent): its argument streams end.
    pub(crate) fn release_call(&self, id: u64) {
        if self.owned_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let disposed: Vec<Arc<Producer>> = {
            let mut inner = self.lock();
            let Some(tokens) = inner.owned.remove(&id) else { return };
            self.owned_count.fetch_sub(tokens.len(), Ordering::AcqRel);
            tokens.iter().filter_map(|t| inner.live.remove(t)).collect()
        };
        for p in disposed {
            tracing::debug!(target: crate::LOG_TARGET, token = p.token, id, "argument stream ended with its call");
            p.dispose();
        }
    }

    /// The connection ended: every stream ends, and later ones are disposed at once.
    pub(crate) fn close(&self) {
        let all: Vec<Arc<Producer>> = {
            let mut inner = self.lock();
            inner.closed = true;
            self.owned_count.store(0, Ordering::Release);
            inner.owned.clear();
            inner.live.drain().map(|(_, p)| p).collect()
        };
        for p in all {
            p.dispose();
        }
    }
}
