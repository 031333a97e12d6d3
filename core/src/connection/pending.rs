//! Where replies are matched to calls: our outbound request ids → the waiting callers.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::OnceLock;

use serde_json::value::RawValue;
use tokio::sync::{Notify, oneshot};

use super::{CloseReason, Error};
use crate::message::ErrorObject;
use crate::sync::{Mutex, MutexGuard};
use crate::util::hash::IdBuild;

/// What a waiting call receives: the answer, and how many inbound messages had been handed to
/// the dispatcher when it was read (so the caller may wait until those are handled).
pub(crate) type Outcome = (Result<Box<RawValue>, Error>, u64);

/// How many abandoned ids are remembered so that their late answers are absorbed quietly.
const ABANDONED_MEMORY: usize = 4096;

#[derive(Default)]
struct Inner {
    calls: HashMap<u64, oneshot::Sender<Outcome>, IdBuild>,
    /// Calls whose caller gave up (dropped, timed out, cancelled under MCP rules): made when
    /// the first gives up, so a connection whose calls were all answered holds none of it.
    abandoned: Option<Box<Abandoned>>,
    closed: Option<CloseReason>,
}

#[derive(Default)]
struct Abandoned {
    ids: HashSet<u64, IdBuild>,
    order: VecDeque<u64>,
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
    /// At most this many calls await answers at once (`Limits::max_pending_calls`).
    max: usize,
    /// Signalled when a call ends while the map is full (a further call waits for that). Made
    /// by the first call that waits for a slot: it checks the map under the lock after making
    /// it, and a slot is freed under the lock before the wake-up looks for it, so a wake-up that
    /// finds none has no waiter to wake.
    slot_freed: OnceLock<Box<Notify>>,
}

impl Pending {
    pub(crate) fn new(max_pending_calls: usize) -> Self {
        Pending {
            inner: Mutex::new(Inner::default()),
            call_started: Notify::new(),
            max: max_pending_calls.max(1),
            slot_freed: OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the maps inconsistent (every critical
        // section is a single map operation), so a poisoned lock is still usable.
        crate::sync::lock(&self.inner)
    }

    /// Register our call `id` unless [`Limits::max_pending_calls`](super::Limits) calls await
    /// answers already (`None`: see [`Pending::register_waiting`]). The call's slot is its entry:
    /// freed when it is answered, failed or given up.
    pub(crate) fn try_register(&self, id: u64) -> Option<Result<oneshot::Receiver<Outcome>, Error>> {
        let mut inner = self.lock();
        if let Some(reason) = &inner.closed {
            return Some(Err(Error::ConnectionLost(reason.clone())));
        }
        if inner.calls.len() >= self.max {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        inner.calls.insert(id, tx);
        drop(inner);
        self.call_started.notify_one();
        Some(Ok(rx))
    }

    /// [`Pending::try_register`] once the map is full: wait for a slot (in a future of its own,
    /// boxed by the caller, so that a call's future stays small).
    pub(crate) async fn register_waiting(&self, id: u64) -> Result<oneshot::Receiver<Outcome>, Error> {
        let slot_freed = self.slot_freed.get_or_init(Default::default);
        loop {
            let freed = slot_freed.notified();
            tokio::pin!(freed);
            // Registered as a waiter before the check: a slot freed from here on wakes it.
            freed.as_mut().enable();
            if let Some(registered) = self.try_register(id) {
                return registered;
            }
            freed.await;
        }
    }

    /// A call left the map (`len_before` entries before): wake one that waits for a slot.
    fn freed(&self, len_before: usize) {
        if len_before >= self.max
            && let Some(slot_freed) = self.slot_freed.get()
        {
            slot_freed.notify_one();
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().calls.len()
    }

    pub(crate) fn complete(&self, id: u64, outcome: Result<Box<RawValue>, ErrorObject>, read_before: u64) -> Delivery {
        let mut inner = self.lock();
        let len = inner.calls.len();
        if let Some(tx) = inner.calls.remove(&id) {
            drop(inner);
            self.freed(len);
            // The receiver may be gone if the caller is being dropped right now: same as abandoned.
            return match tx.send((outcome.map_err(Error::Remote), read_before)) {
                Ok(()) => Delivery::Delivered,
                Err(_) => Delivery::Abandoned,
            };
        }
        if inner.abandoned.as_mut().is_some_and(|a| a.ids.remove(&id)) {
            Delivery::Abandoned
        } else {
            Delivery::Unknown
        }
    }

    /// Whether call `id` still waits for its answer (none was read for it, it was not given up,
    /// the connection has not closed).
    pub(crate) fn is_waiting(&self, id: u64) -> bool {
        self.lock().calls.contains_key(&id)
    }

    /// The caller stops waiting; remember the id so a late answer is not mistaken for garbage.
    /// `false` when the call was no longer waiting: its answer (or the connection's end) was read
    /// already and is on its way to the caller's receiver, where it must be taken from instead.
    #[must_use]
    pub(crate) fn abandon(&self, id: u64) -> bool {
        let mut inner = self.lock();
        let len = inner.calls.len();
        if inner.calls.remove(&id).is_none() {
            return false;
        }
        self.freed(len);
        let abandoned = inner.abandoned.get_or_insert_with(Default::default);
        abandoned.ids.insert(id);
        abandoned.order.push_back(id);
        while abandoned.order.len() > ABANDONED_MEMORY {
            if let Some(old) = abandoned.order.pop_front() {
                abandoned.ids.remove(&old);
            }
        }
        true
    }

    /// Take a waiting call's sender as the reader does when it reads the call's answer, without
    /// sending yet: the window between the two, held open for a test.
    #[cfg(test)]
    pub(crate) fn take_for_delivery(&self, id: u64) -> Option<oneshot::Sender<Outcome>> {
        self.lock().calls.remove(&id)
    }

    /// Fail every waiting call and refuse new ones.
    pub(crate) fn close(&self, reason: &CloseReason) {
        let calls = {
            let mut inner = self.lock();
            if inner.closed.is_none() {
                inner.closed = Some(reason.clone());
            }
            std::mem::take(&mut inner.calls)
        };
        if let Some(slot_freed) = self.slot_freed.get() {
            slot_freed.notify_waiters();
        }
        for (_, tx) in calls {
            let _ = tx.send((Err(Error::ConnectionLost(reason.clone())), 0));
        }
    }
}

/// The table's races, every interleaving of its lock (the `loom_` models, `scripts/loom.sh`):
/// an answer against the caller giving up, the connection's end against an answer and a new
/// call on a full table. The answers travel in tokio's `oneshot` and the slot waits in tokio's
/// `Notify`, which loom does not explore (their own tests cover them); what is checked is that
/// the table hands each call exactly one outcome and never holds more calls than its limit.
#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use std::sync::Arc;

    use super::*;
    use crate::connection::CloseKind;

    fn answer() -> Result<Box<RawValue>, ErrorObject> {
        Ok(RawValue::from_string("1".to_owned()).unwrap())
    }

    #[test]
    fn loom_pending_an_answer_races_the_caller_giving_up() {
        loom::model(|| {
            let pending = Arc::new(Pending::new(4));
            let mut rx = pending.try_register(0).unwrap().unwrap();
            let reader = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.complete(0, answer(), 0))
            };
            let gave_up = pending.abandon(0);
            let delivery = reader.join().unwrap();
            let got = rx.try_recv();
            if gave_up {
                // The late answer is absorbed; the caller never sees it.
                assert_eq!(delivery, Delivery::Abandoned);
                assert!(got.is_err());
            } else {
                // The answer was read first: the caller must take it from its receiver.
                assert_eq!(delivery, Delivery::Delivered);
                assert_eq!(got.expect("the answer").0.expect("a result").get(), "1");
            }
            assert_eq!(pending.len(), 0);
        });
    }

    #[test]
    fn loom_pending_the_end_races_an_answer_and_a_new_call() {
        loom::model(|| {
            // Full with call 0: call 1 fits only once call 0 is answered.
            let pending = Arc::new(Pending::new(1));
            let mut rx0 = pending.try_register(0).unwrap().unwrap();
            let reader = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.complete(0, answer(), 0))
            };
            let closer = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.close(&CloseReason::new(CloseKind::RemoteClosed, "eof")))
            };
            let call1 = pending.try_register(1);
            assert!(pending.len() <= 1, "more calls than the limit");
            let delivery = reader.join().unwrap();
            closer.join().unwrap();
            // Call 0 has exactly one outcome: its answer, or the connection's end.
            match rx0.try_recv().expect("an outcome for call 0") {
                (Ok(result), _) => {
                    assert_eq!(result.get(), "1");
                    assert_eq!(delivery, Delivery::Delivered);
                }
                (Err(Error::ConnectionLost(_)), _) => assert_eq!(delivery, Delivery::Unknown),
                (Err(other), _) => panic!("call 0 ended with {other}"),
            }
            match call1 {
                // The table was full: call 0 was neither answered nor failed yet.
                None => {}
                Some(Err(Error::ConnectionLost(_))) => {}
                Some(Err(other)) => panic!("call 1 was refused with {other}"),
                // Registered before the end: the end fails it.
                Some(Ok(mut rx1)) => {
                    assert!(matches!(rx1.try_recv(), Ok((Err(Error::ConnectionLost(_)), _))));
                }
            }
            assert_eq!(pending.len(), 0);
        });
    }
}
