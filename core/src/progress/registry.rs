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

#[derive(Default)]
struct Inner {
    live: HashMap<u64, mpsc::UnboundedSender<Report>, IdBuild>,
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

    /// A new token and the channel its reports go to. On a closed connection the channel says so.
    pub(crate) fn open(&self) -> (u64, mpsc::UnboundedReceiver<Report>) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut inner = self.lock();
        match &inner.closed {
            Some(reason) => {
                let _ = tx.send(Err(Error::ConnectionLost(reason.clone())));
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

    /// Hand a report to its receiver; `false` when the token is not (or no longer) ours.
    pub(crate) fn deliver(&self, token: u64, value: Box<RawValue>) -> bool {
        let inner = self.lock();
        match inner.live.get(&token) {
            Some(tx) => {
                // A receiver dropped meanwhile is removed by its `Drop`; the report is moot.
                let _ = tx.send(Ok(value));
                true
            }
            None => false,
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
            let _ = tx.send(Err(Error::ConnectionLost(reason.clone())));
        }
    }
}
