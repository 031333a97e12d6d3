//! The progress tokens this side issued, by token, with the channel of each receiver, and whether
//! each was sent yet.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::connection::{CloseReason, Error, UnboundCount};
use crate::util::hash::IdBuild;

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

struct Live {
    tx: mpsc::Sender<Report>,
    /// Issued and not sent yet: it counts in the connection's unbound values.
    unsent: bool,
}

#[derive(Default)]
struct Inner {
    live: HashMap<u64, Live, IdBuild>,
    closed: Option<CloseReason>,
}

pub(crate) struct Receivers {
    /// StreamJsonRpc numbers its progress tokens from 0, per connection.
    next_token: AtomicU64,
    /// Made when the first token is issued or the connection ends: a connection that never
    /// issues one pays only for the lock.
    inner: Mutex<Option<Box<Inner>>>,
    live_count: AtomicUsize,
    unbound: UnboundCount,
}

impl Receivers {
    pub(crate) fn new(unbound: UnboundCount) -> Self {
        Receivers { next_token: AtomicU64::new(0), inner: Mutex::default(), live_count: AtomicUsize::new(0), unbound }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Box<Inner>>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new token and the channel its reports go to, holding up to `capacity` reports. On a
    /// closed connection the channel says so.
    pub(crate) fn open(&self, capacity: usize) -> (u64, mpsc::Receiver<Report>) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(capacity.clamp(1, MAX_CAPACITY));
        let mut inner = self.lock();
        let inner = inner.get_or_insert_with(Default::default);
        match &inner.closed {
            Some(reason) => {
                let _ = tx.try_send(Err(Error::ConnectionLost(reason.clone())));
            }
            None => {
                self.unbound.arm();
                inner.live.insert(token, Live { tx, unsent: true });
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
        let Some(Live { tx, .. }) = inner.as_ref().and_then(|inner| inner.live.get(&token)) else {
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

    /// The token is being sent: `false` when its receiver is gone.
    pub(crate) fn sent(&self, token: u64) -> bool {
        let mut inner = self.lock();
        let Some(live) = inner.as_mut().and_then(|inner| inner.live.get_mut(&token)) else { return false };
        if std::mem::take(&mut live.unsent) {
            self.unbound.disarm();
        }
        true
    }

    /// The receiver is gone, or its call is answered: it ends once it has taken the reports
    /// already delivered.
    pub(crate) fn remove(&self, token: u64) {
        let removed = self.lock().as_mut().and_then(|inner| inner.live.remove(&token));
        if let Some(live) = removed {
            self.live_count.fetch_sub(1, Ordering::AcqRel);
            if live.unsent {
                self.unbound.disarm();
            }
        }
    }

    /// The connection ended: every receiver gets the reason, then ends.
    pub(crate) fn close(&self, reason: &CloseReason) {
        let live: Vec<_> = {
            let mut inner = self.lock();
            let inner = inner.get_or_insert_with(Default::default);
            if inner.closed.is_none() {
                inner.closed = Some(reason.clone());
            }
            self.live_count.store(0, Ordering::Release);
            inner.live.drain().map(|(_, live)| live).collect()
        };
        for Live { tx, unsent } in live {
            if unsent {
                self.unbound.disarm();
            }
            // A receiver that is full learns the reason from its call instead.
            let _ = tx.try_send(Err(Error::ConnectionLost(reason.clone())));
        }
    }
}
