//! The streams this side generates, by token; and which of them belong to one of our requests
//! (streams passed as arguments die when that request is answered).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::producer::Producer;
use crate::call_bindings::CallBindings;
use crate::id_hash::IdBuild;

#[derive(Default)]
struct Inner {
    live: HashMap<u64, Arc<Producer>, IdBuild>,
    closed: bool,
}

pub(crate) struct Producers {
    /// StreamJsonRpc numbers its generator tokens from 1, per connection.
    next_token: AtomicU64,
    /// Streams that may be live at once ([`Limits::max_offered_streams`](crate::Limits)).
    max_live: usize,
    inner: Mutex<Inner>,
    /// The streams in the params of our requests.
    bindings: CallBindings,
}

impl Producers {
    pub(crate) fn new(max_live: usize) -> Self {
        Producers {
            next_token: AtomicU64::new(1),
            max_live,
            inner: Mutex::default(),
            bindings: CallBindings::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every critical section is a few map operations: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn next_token(&self) -> u64 {
        self.next_token.fetch_add(1, Ordering::Relaxed)
    }

    /// Make a producer reachable by its token (on a closed connection it is disposed at once).
    /// `Err` with the limit, and the producer disposed, when as many streams are live as may be.
    pub(crate) fn insert(&self, producer: Arc<Producer>) -> Result<(), usize> {
        let mut inner = self.lock();
        if inner.closed {
            drop(inner);
            producer.dispose();
            return Ok(());
        }
        if inner.live.len() >= self.max_live {
            drop(inner);
            producer.dispose();
            return Err(self.max_live);
        }
        inner.live.insert(producer.token, producer);
        Ok(())
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
        if self.lock().live.contains_key(&token) {
            self.bindings.bind(id, token);
        }
    }

    /// Our request `id` was answered (or given up, or never sent): its argument streams end.
    pub(crate) fn release_call(&self, id: u64) {
        let tokens = self.bindings.take(id);
        if tokens.is_empty() {
            return;
        }
        let disposed: Vec<Arc<Producer>> = {
            let mut inner = self.lock();
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
            inner.live.drain().map(|(_, p)| p).collect()
        };
        self.bindings.clear();
        for p in all {
            p.dispose();
        }
    }
}
