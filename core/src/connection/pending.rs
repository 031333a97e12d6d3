//! Where replies are matched to calls: our outbound request ids → the waiting callers.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot};

use super::{CloseReason, Error};
use crate::id_hash::IdBuild;
use crate::message::ErrorObject;

/// What a waiting call receives: the answer, and how many inbound messages had been handed to
/// the dispatcher when it was read (so the caller may wait until those are handled).
pub(crate) type Outcome = (Result<Box<RawValue>, Error>, u64);

/// How many abandoned ids are remembered so that their late answers are absorbed quietly.
const ABANDONED_MEMORY: usize = 4096;

#[derive(Default)]
struct Inner {
    calls: HashMap<u64, oneshot::Sender<Outcome>, IdBuild>,
    /// Calls whose caller gave up (dropped, timed out, cancelled under MCP rules).
    abandoned: HashSet<u64, IdBuild>,
    abandoned_order: VecDeque<u64>,
    closed: Option<CloseReason>,
}

/// What became of an inbound response.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    Delivered,
    /// The caller gave up earlier; the answer is dropped quietly.
    Abandoned,
    /// We never sent this id (or answered it already).
    Unknown,
}

pub(crate) struct Pending {
    inner: Mutex<Inner>,
    /// Wakes a paused reader when a call starts (it must read on to find the answer).
    pub(crate) call_started: Notify,
    /// One permit per call awaiting its answer (`Limits::max_pending_calls`).
    slots: Arc<Semaphore>,
}

impl Pending {
    pub(crate) fn new(max_pending_calls: usize) -> Self {
        Pending {
            inner: Mutex::default(),
            call_started: Notify::new(),
            slots: Arc::new(Semaphore::new(max_pending_calls.clamp(1, Semaphore::MAX_PERMITS))),
        }
    }

    /// Wait for room for one more call; the permit is its slot until dropped.
    pub(crate) async fn slot(&self) -> Result<OwnedSemaphorePermit, Error> {
        match self.slots.clone().acquire_owned().await {
            Ok(permit) => Ok(permit),
            Err(_) => {
                let reason = self.lock().closed.clone();
                Err(Error::ConnectionLost(
                    reason
                        .unwrap_or_else(|| CloseReason::new(super::CloseKind::FatalError, "the connection is closed")),
                ))
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the maps inconsistent (every critical
        // section is a single map operation), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn register(&self, id: u64) -> Result<oneshot::Receiver<Outcome>, Error> {
        let (tx, rx) = oneshot::channel();
        {
            let mut inner = self.lock();
            if let Some(reason) = &inner.closed {
                return Err(Error::ConnectionLost(reason.clone()));
            }
            inner.calls.insert(id, tx);
        }
        self.call_started.notify_one();
        Ok(rx)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().calls.len()
    }

    pub(crate) fn complete(&self, id: u64, outcome: Result<Box<RawValue>, ErrorObject>, read_before: u64) -> Delivery {
        let mut inner = self.lock();
        if let Some(tx) = inner.calls.remove(&id) {
            drop(inner);
            // The receiver may be gone if the caller is being dropped right now: same as abandoned.
            return match tx.send((outcome.map_err(Error::Remote), read_before)) {
                Ok(()) => Delivery::Delivered,
                Err(_) => Delivery::Abandoned,
            };
        }
        if inner.abandoned.remove(&id) { Delivery::Abandoned } else { Delivery::Unknown }
    }

    /// The caller stopped waiting; remember the id so a late answer is not mistaken for garbage.
    pub(crate) fn abandon(&self, id: u64) {
        let mut inner = self.lock();
        if inner.calls.remove(&id).is_none() {
            return;
        }
        inner.abandoned.insert(id);
        inner.abandoned_order.push_back(id);
        while inner.abandoned_order.len() > ABANDONED_MEMORY {
            if let Some(old) = inner.abandoned_order.pop_front() {
                inner.abandoned.remove(&old);
            }
        }
    }

    /// Fail every waiting call and refuse new ones.
    pub(crate) fn close(&self, reason: &CloseReason) {
        self.slots.close();
        let calls = {
            let mut inner = self.lock();
            if inner.closed.is_none() {
                inner.closed = Some(reason.clone());
            }
            std::mem::take(&mut inner.calls)
        };
        for (_, tx) in calls {
            let _ = tx.send((Err(Error::ConnectionLost(reason.clone())), 0));
        }
    }
}
