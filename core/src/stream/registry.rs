//! The streams this side generates, by token, and whether each was sent yet.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::producer::Producer;
use crate::connection::UnboundCount;
use crate::util::hash::IdBuild;

struct Entry {
    producer: Arc<Producer>,
    /// Offered and not sent yet: it counts in the connection's unbound values.
    unsent: bool,
}

#[derive(Default)]
struct Inner {
    live: HashMap<u64, Entry, IdBuild>,
    closed: bool,
}

pub(crate) struct Producers {
    /// StreamJsonRpc numbers its generator tokens from 1, per connection.
    next_token: AtomicU64,
    /// Streams that may be live at once ([`Builder::max_offered_streams`](crate::Limits::max_offered_streams)).
    max_live: usize,
    inner: Mutex<Inner>,
    unbound: UnboundCount,
}

impl Producers {
    pub(crate) fn new(max_live: usize, unbound: UnboundCount) -> Self {
        Producers { next_token: AtomicU64::new(1), max_live, inner: Mutex::default(), unbound }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every critical section is a few map operations: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn next_token(&self) -> u64 {
        self.next_token.fetch_add(1, Ordering::Relaxed)
    }

    /// Make a producer reachable by its token, not sent yet (on a closed connection it is
    /// disposed at once). `Err` with the limit, and the producer disposed, when as many streams
    /// are live as may be.
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
        self.unbound.arm();
        inner.live.insert(producer.token, Entry { producer, unsent: true });
        Ok(())
    }

    pub(crate) fn get(&self, token: u64) -> Option<Arc<Producer>> {
        self.lock().live.get(&token).map(|e| e.producer.clone())
    }

    /// The stream `token` is being sent: `false` when it is not live.
    pub(crate) fn sent(&self, token: u64) -> bool {
        let mut inner = self.lock();
        let Some(entry) = inner.live.get_mut(&token) else { return false };
        if std::mem::take(&mut entry.unsent) {
            self.unbound.disarm();
        }
        true
    }

    /// End a stream: its source is dropped (once a `next` in progress lets go of it), and its
    /// token is unknown from now on. `false` when it was not live.
    pub(crate) fn dispose(&self, token: u64) -> bool {
        let entry = self.lock().live.remove(&token);
        match entry {
            Some(entry) => {
                self.gone(entry);
                true
            }
            None => false,
        }
    }

    /// An entry out of the map: its source is dropped here, outside the lock.
    fn gone(&self, entry: Entry) {
        if entry.unsent {
            self.unbound.disarm();
        }
        entry.producer.dispose();
    }

    /// The connection ended: every stream ends, and later ones are disposed at once.
    pub(crate) fn close(&self) {
        let all: Vec<Entry> = {
            let mut inner = self.lock();
            inner.closed = true;
            inner.live.drain().map(|(_, e)| e).collect()
        };
        for entry in all {
            self.gone(entry);
        }
    }
}
