//! Where replies are matched to calls: our outbound request ids → the waiting callers.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{CloseReason, Error};
use crate::message::ErrorObject;
use crate::sync::lazy::{self, OnceBox};
use crate::sync::{Mutex, MutexGuard};
use crate::util::hash::IdBuild;

/// What a waiting call receives: the answer, and how many inbound messages had been handed to
/// the dispatcher when it was read (so the caller may wait until those are handled).
///
/// The error is boxed: the outcome is moved through the channel and up the caller's futures,
/// each move a copy, and the answer itself (a fat pointer) is the common case. As a 72-byte
/// value its copies were loaded in 16-byte halves of the 8-byte stores that had just written
/// them, which the CPU cannot forward (the hottest instructions of the caller's poll).
pub(crate) type Outcome = (Result<Box<RawValue>, Box<Error>>, u64);

/// How many abandoned ids are remembered so that their late answers are absorbed quietly.
#[cfg(not(jsonrpc_duplex_loom))]
const ABANDONED_MEMORY: usize = 4096;
/// Two under loom, so that a model goes past the bound in a few steps.
#[cfg(jsonrpc_duplex_loom)]
const ABANDONED_MEMORY: usize = 2;

#[derive(Default)]
struct Inner {
    calls: HashMap<u64, oneshot::Sender<Outcome>, IdBuild>,
    /// Calls whose caller gave up (dropped, timed out, cancelled under MCP rules): made when
    /// the first gives up, so a connection whose calls were all answered holds none of it.
    ///
    /// | state | event (all under the table's lock) | next |
    /// |---|---|---|
    /// | `None` | [`Pending::abandon`] of a waiting call | made, holding its id |
    /// | `None` | [`Pending::complete`] of an id not waiting | `None` (the answer is `Unknown`) |
    /// | made | `abandon` of a waiting call | its id added last; the oldest forgotten past [`ABANDONED_MEMORY`] |
    /// | made | `complete` of a remembered id | the id forgotten (the answer is `Abandoned`) |
    ///
    /// Never more than [`ABANDONED_MEMORY`] ids, in bytes about 16 each plus the set's slack
    /// (`loom_pending_the_abandoned_ids_memory_stays_bounded`). Once made it stays made: a
    /// connection whose callers give up keeps its memory for late answers.
    abandoned: Option<Box<Abandoned>>,
    /// Why the table closed, once it has. Boxed: made only at the end, it would cost every
    /// connection its size for the whole of its life.
    closed: Option<Box<CloseReason>>,
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
    /// Wakes a paused reader when a call starts (it must read on to find the answer). Made by
    /// the reader when it first pauses, which checks the table under its lock after
    /// registering; a call is entered under that lock before the wake-up looks for it.
    pub(crate) call_started: lazy::LazyNotify,
    /// At most this many calls await answers at once (`Limits::max_pending_calls`).
    max: usize,
    /// Signalled when a call ends while the map is full (a further call waits for that). Made
    /// by the first call that waits for a slot: it checks the map under the lock after making
    /// it, and a slot is freed under the lock before the wake-up looks for it, so a wake-up that
    /// finds none has no waiter to wake.
    ///
    /// | state | event | next |
    /// |---|---|---|
    /// | not made | a call finds the map full ([`Pending::register_waiting`]): makes it (or finds the one a racing call made) | made |
    /// | not made | a call ends ([`Pending::complete`], [`Pending::abandon`]) or the table closes: looks, finds none | not made (nobody waits: a waiter checks after making it) |
    /// | made | a waiter registers (`enable`), then checks the map under the lock | it has a slot, or waits |
    /// | made | a call ends while the map was full (the slot freed under the lock, then `notify_one`) | one waiter woken: it checks again |
    /// | made | the table closes (`notify_waiters`) | every waiter woken: it finds the table closed |
    ///
    /// The waiter's order (make, register, check under the lock) is what makes a look that
    /// finds nothing safe: checked by the `loom_pending_*slot*` models, which fail if the
    /// check after making it is left out.
    slot_freed: OnceBox<lazy::Notify>,
}

impl Pending {
    pub(crate) fn new(max_pending_calls: usize) -> Self {
        Pending {
            inner: Mutex::new(Inner::default()),
            call_started: lazy::LazyNotify::new(),
            max: max_pending_calls.max(1),
            slot_freed: OnceBox::new(),
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
            return Some(Err(Error::ConnectionLost(CloseReason::clone(reason))));
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
            return match tx.send((outcome.map_err(|e| Box::new(Error::Remote(e))), read_before)) {
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

    /// The abandoned ids remembered (`None`: never made), and their order of abandoning.
    #[cfg(all(test, jsonrpc_duplex_loom))]
    fn abandoned_memory(&self) -> Option<(Vec<u64>, Vec<u64>)> {
        let inner = self.lock();
        let a = inner.abandoned.as_ref()?;
        let mut ids: Vec<u64> = a.ids.iter().copied().collect();
        ids.sort();
        Some((ids, a.order.iter().copied().collect()))
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
                inner.closed = Some(Box::new(reason.clone()));
            }
            std::mem::take(&mut inner.calls)
        };
        if let Some(slot_freed) = self.slot_freed.get() {
            slot_freed.notify_waiters();
        }
        for (_, tx) in calls {
            let _ = tx.send((Err(Box::new(Error::ConnectionLost(reason.clone()))), 0));
        }
    }
}

/// The table's races, every interleaving of its lock (the `loom_` models, `scripts/loom.sh`):
/// an answer against the caller giving up, the connection's end against an answer and a new
/// call on a full table, a waiter for a slot making `slot_freed` as a slot is freed, two waiters
/// racing to make it, and the abandoned ids' memory under callers giving up. The answers travel
/// in tokio's `oneshot`, which loom does not explore (its own tests cover it); the slot's wake-up
/// is `crate::sync::lazy`'s loom version of `Notify`. What is checked is that the table hands
/// each call exactly one outcome, never holds more calls than its limit, never loses a slot's
/// wake-up, and remembers at most its bound of abandoned ids.
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
                (Err(e), _) if matches!(*e, Error::ConnectionLost(_)) => assert_eq!(delivery, Delivery::Unknown),
                (Err(other), _) => panic!("call 0 ended with {other}"),
            }
            match call1 {
                // The table was full: call 0 was neither answered nor failed yet.
                None => {}
                Some(Err(Error::ConnectionLost(_))) => {}
                Some(Err(other)) => panic!("call 1 was refused with {other}"),
                // Registered before the end: the end fails it.
                Some(Ok(mut rx1)) => {
                    let outcome = rx1.try_recv().expect("an outcome for call 1");
                    assert!(matches!(outcome.0.map_err(|e| *e), Err(Error::ConnectionLost(_))));
                }
            }
            assert_eq!(pending.len(), 0);
        });
    }

    /// A caller waits for a slot while the reader's answer frees the only one: the waiter makes
    /// `slot_freed` while the answer looks for it (before or after). It always gets the slot.
    #[test]
    fn loom_pending_a_slot_waiter_makes_the_wakeup_as_an_answer_frees_the_slot() {
        loom::model(|| {
            let pending = Arc::new(Pending::new(1));
            let mut rx0 = pending.try_register(0).unwrap().unwrap();
            let reader = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.complete(0, answer(), 0))
            };
            let rx1 = loom::future::block_on(pending.register_waiting(1)).expect("a slot");
            assert_eq!(reader.join().unwrap(), Delivery::Delivered);
            assert!(rx0.try_recv().is_ok(), "call 0 answered");
            assert!(pending.is_waiting(1));
            assert_eq!(pending.len(), 1);
            drop(rx1);
        });
    }

    /// Two callers wait for the one slot and race to make `slot_freed`; each, once registered,
    /// is answered, which frees the slot for the other. Both get it, one at a time.
    #[test]
    fn loom_pending_two_slot_waiters_race_to_make_the_wakeup() {
        loom::model(|| {
            let pending = Arc::new(Pending::new(1));
            let _rx0 = pending.try_register(0).unwrap().unwrap();
            let waiters: Vec<_> = [1, 2]
                .into_iter()
                .map(|id| {
                    let pending = pending.clone();
                    loom::thread::spawn(move || {
                        let rx = loom::future::block_on(pending.register_waiting(id)).expect("a slot");
                        assert!(pending.len() <= 1, "more calls than the limit");
                        assert_eq!(pending.complete(id, answer(), 0), Delivery::Delivered);
                        drop(rx);
                    })
                })
                .collect();
            assert_eq!(pending.complete(0, answer(), 0), Delivery::Delivered);
            for waiter in waiters {
                waiter.join().unwrap();
            }
            assert_eq!(pending.len(), 0);
        });
    }

    /// Callers give up from two threads while a late answer arrives: the memory of abandoned
    /// ids, made by the first to give up, never holds more than its bound (2 under loom), keeps
    /// the latest, and absorbs exactly the late answers of the ids it still holds.
    #[test]
    fn loom_pending_the_abandoned_ids_memory_stays_bounded() {
        loom::model(|| {
            let pending = Arc::new(Pending::new(8));
            let _rxs: Vec<_> = (0..4).map(|id| pending.try_register(id).unwrap().unwrap()).collect();
            assert!(pending.abandoned_memory().is_none(), "made only when a caller gives up");
            let bounded = |pending: &Pending| {
                let (ids, order) = pending.abandoned_memory().expect("made by the first to give up");
                assert!(order.len() <= ABANDONED_MEMORY && ids.len() <= order.len(), "{ids:?} {order:?}");
                assert!(ids.iter().all(|id| order.contains(id)), "{ids:?} {order:?}");
            };
            let a = {
                let pending = pending.clone();
                loom::thread::spawn(move || {
                    for id in [0, 1] {
                        assert!(pending.abandon(id));
                        bounded(&pending);
                    }
                })
            };
            let b = {
                let pending = pending.clone();
                loom::thread::spawn(move || {
                    assert!(pending.abandon(2));
                    bounded(&pending);
                    // Call 2's late answer: absorbed while remembered, unknown once forgotten.
                    let remembered = pending.abandoned_memory().unwrap().0.contains(&2);
                    let delivery = pending.complete(2, answer(), 0);
                    (remembered, delivery)
                })
            };
            assert!(pending.abandon(3));
            bounded(&pending);
            a.join().unwrap();
            let (remembered, delivery) = b.join().unwrap();
            // Between the look and the answer another id may push 2 out: never the reverse.
            assert_ne!(delivery, Delivery::Delivered, "an abandoned call's answer delivered");
            if !remembered {
                assert_eq!(delivery, Delivery::Unknown);
            }
            bounded(&pending);
            let (ids, order) = pending.abandoned_memory().unwrap();
            assert_eq!(order.len(), ABANDONED_MEMORY, "the latest ones: {order:?}");
            for id in ids {
                assert_eq!(pending.complete(id, answer(), 0), Delivery::Abandoned, "id {id}");
            }
            assert_eq!(pending.len(), 0);
        });
    }
}
