//! The progress tokens this side issued, by token, with the channel of each receiver; and which
//! of them belong to one of our requests (their receivers end when it is answered).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::call_bindings::CallBindings;
use crate::connection::{CloseReason, Error};
use crate::id_hash::IdBuild;

/// One report as it reaches a receiver: the raw value, or why no more will come.
pub(crate) type Report = Result<Box<RawValue>, Error>;

/// tokio's bound on a channel's capacity.
const MAX_CAPACITY: usize = usize::MAX >> 3;

/// What became of a report.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Queued for its receiver.
    Delivered,
    /// Not a token this side holds: the notification goes to the router.
    NotOurs,
    /// Its receiver holds as many reports as it may: the peer floods it.
    Full,
}

#[derive(Default)]
struct Inner {
    live: HashMap<u64, mpsc::Sender<Report>, IdBuild>,
    closed: Option<CloseReason>,
}

#[derive(Default)]
pub(crate) struct Receivers {
    /// StreamJsonRpc numbers its progress tokens from 0, per connection.
    next_token: AtomicU64,
    inner: Mutex<Inner>,
    live_count: AtomicUsize,
    /// The tokens in the params of our requests.
    bindings: CallBindings,
}

impl Receivers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new token and the channel its reports go to, holding up to `capacity` reports. On a
    /// closed connection the channel says so.
    pub(crate) fn open(&self, capacity: usize) -> (u64, mpsc::Receiver<Report>) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(capacity.clamp(1, MAX_CAPACITY));
        let mut inner = self.lock();
        match &inner.closed {
            Some(reason) => {
                let _ = tx.try_send(Err(Error::ConnectionLost(reason.clone())));
            }
            None => {
                inner.live.insert(token, tx);
                self.live_count.fetch_add(1, Ordering::AcqRel);
            }
        }
        (token, rx)
    }

    /// No receiver is waiting for anything (the reader's fast path).
    pub(crate) fn is_empty(&self) -> bool {
        self.live_count.load(Ordering::Acquire) == 0
    }

    /// Hand a report to its receiver (the caller has counted it as held input; a report that
    /// is not kept is given back through `release`).
    pub(crate) fn deliver(&self, token: u64, value: Box<RawValue>, release: impl FnOnce(&RawValue)) -> Delivery {
        let inner = self.lock();
        let Some(tx) = inner.live.get(&token) else {
            drop(inner);
            release(&value);
            return Delivery::NotOurs;
        };
        match tx.try_send(Ok(value)) {
            Ok(()) => Delivery::Delivered,
            Err(e) => {
                let full = matches!(e, mpsc::error::TrySendError::Full(_));
                drop(inner);
                if let Ok(value) = e.into_inner() {
                    release(&value);
                }
                // A receiver dropped meanwhile is removed by its `Drop`: the report is moot.
                if full { Delivery::Full } else { Delivery::Delivered }
            }
        }
    }

    pub(crate) fn bind_to_call(&self, token: u64, id: u64) {
        if self.lock().live.contains_key(&token) {
            self.bindings.bind(id, token);
        }
    }

    fn remove_locked(&self, inner: &mut Inner, token: u64) {
        if inner.live.remove(&token).is_some() {
            self.live_count.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The receiver is gone.
    pub(crate) fn remove(&self, token: u64) {
        let mut inner = self.lock();
        self.remove_locked(&mut inner, token);
    }

    /// Our request `id` was answered (or given up): the receivers of its tokens end once they
    /// have taken the reports already delivered.
    pub(crate) fn release_call(&self, id: u64) {
        let tokens = self.bindings.take(id);
        if tokens.is_empty() {
            return;
        }
        let mut inner = self.lock();
        for token in tokens {
            self.remove_locked(&mut inner, token);
        }
    }

    /// The connection ended: every receiver gets the reason, then ends.
    pub(crate) fn close(&self, reason: &CloseReason) {
        let live: Vec<_> = {
            let mut inner = self.lock();
            if inner.closed.is_none() {
                inner.closed = Some(reason.clone());
            }
            self.live_count.store(0, Ordering::Release);
            inner.live.drain().map(|(_, tx)| tx).collect()
        };
        self.bindings.clear();
        for tx in live {
            // A receiver that is full learns the reason from its call instead.
            let _ = tx.try_send(Err(Error::ConnectionLost(reason.clone())));
        }
    }
}
