//! Where replies are matched to calls: our outbound request ids → the waiting callers.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use serde_json::value::RawValue;

use super::{CloseReason, Error};
use crate::message::ErrorObject;
use crate::sync::lazy::{self, OnceBox};
use crate::sync::{Mutex, MutexGuard};
use crate::util::hash::IdBuild;

/// What a waiting call receives: the answer, and how many inbound messages had been handed to
/// the dispatcher when it was read (so the caller may wait until those are handled).
///
/// The error is boxed: the outcome is moved up the caller's futures, each move a copy, and the
/// answer itself (a fat pointer) is the common case. As a 72-byte value its copies were loaded
/// in 16-byte halves of the 8-byte stores that had just written them, which the CPU cannot
/// forward (the hottest instructions of the caller's poll).
pub(crate) type Outcome = (Result<Box<RawValue>, Box<Error>>, u64);

/// How many abandoned ids are remembered so that their late answers are absorbed quietly.
#[cfg(not(jsonrpc_duplex_loom))]
const ABANDONED_MEMORY: usize = 4096;
/// Two under loom, so that a model goes past the bound in a few steps.
#[cfg(jsonrpc_duplex_loom)]
const ABANDONED_MEMORY: usize = 2;

/// A registered call's entry: the hand-off of its answer from the reader to the caller's task.
///
/// The answer waits in the table itself until the caller takes it, so a call needs no channel
/// of its own (tokio's `oneshot` was an allocation, and its code, on every call). Every step is
/// under the table's lock; a wake-up is given after the lock is let go.
///
/// | state | event | next |
/// |---|---|---|
/// | (none) | [`Pending::try_register`] | `Waiting(w)`, `w` the caller's waker if it gave one; the caller holds an [`Answer`] |
/// | `Waiting(_)` | the caller polls its [`Answer`] | `Waiting(Some(its waker))` (kept if it would wake the same task) |
/// | `Waiting(w)` | [`Pending::complete`] (the reader read the answer) | `Answered`; `w` woken |
/// | `Waiting(w)` | [`Pending::close`] (the connection ended) | `Answered` with `ConnectionLost`; `w` woken |
/// | `Waiting(_)` | [`Pending::abandon`] (the caller's guard gives up) | removed; its id remembered as abandoned |
/// | `Waiting(_)` | the caller's [`Answer`] is dropped | `Orphaned` (its guard gives it up next) |
/// | `Orphaned` | `abandon` | removed; its id remembered as abandoned |
/// | `Orphaned` | `complete`, `close` | removed (the answer dropped: nobody will take it) |
/// | `Answered` | the caller polls its [`Answer`] | removed; the outcome returned |
/// | `Answered` | the caller's [`Answer`] is dropped | removed; the outcome dropped |
/// | `Answered` | `complete` again (a duplicate answer), `close`, `abandon` | unchanged (`abandon` returns `false`: the caller takes the answer) |
///
/// So each call gets exactly one outcome, a waker stored before the answer is always woken,
/// and an entry leaves the table with its caller, whichever of its [`Answer`] and its guard
/// goes first and whenever the answer comes between them. Checked by the `loom_pending_*`
/// models.
enum Slot {
    Waiting(Option<Waker>),
    Orphaned,
    Answered(Outcome),
}

#[derive(Default)]
struct Inner {
    calls: HashMap<u64, Slot, IdBuild>,
    /// How many of `calls` are `Waiting`: the calls that await answers (an answered entry
    /// waits only for its caller to take it, and holds no slot of `max`).
    waiting: usize,
    /// What only a caller giving up or the connection's end needs: made by the first of them,
    /// so a connection whose calls were all answered holds none of it (and this struct stays
    /// within `Pending`'s 96 bytes).
    rare: Option<Box<Rare>>,
}

#[derive(Default)]
struct Rare {
    /// Calls whose caller gave up (dropped, timed out, cancelled under MCP rules).
    ///
    /// | state | event (all under the table's lock) | next |
    /// |---|---|---|
    /// | not made | [`Pending::abandon`] of a waiting call | made, holding its id |
    /// | not made | [`Pending::complete`] of an id not waiting | not made (the answer is `Unknown`) |
    /// | made | `abandon` of a waiting call | its id added last; the oldest forgotten past [`ABANDONED_MEMORY`] |
    /// | made | `complete` of a remembered id | the id forgotten (the answer is `Abandoned`) |
    ///
    /// Never more than [`ABANDONED_MEMORY`] ids, in bytes about 16 each plus the set's slack
    /// (`loom_pending_the_abandoned_ids_memory_stays_bounded`). Once made it stays made: a
    /// connection whose callers give up keeps its memory for late answers.
    abandoned: Abandoned,
    /// Why the table closed, once it has (boxed: what a caller giving up makes needs none).
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

/// A registered call's answer, to be awaited by its caller: the outcome, or `None` if its entry
/// is gone (never expected: only the caller's own [`Pending::abandon`] or this takes it).
/// Dropped before it is taken, an answer that arrived is dropped with it; a call still waiting
/// is left `Orphaned`, for the caller's guard to give up (see [`Slot`]).
pub(crate) struct Answer<'a> {
    pending: &'a Pending,
    id: u64,
    taken: bool,
    /// The waker the call was registered with ([`WakerId`]), until the first poll: polled
    /// first with that same waker, it has nothing to look at (an answer read since then woke
    /// it, and it is polled again), so that poll takes no lock.
    registered: Option<WakerId>,
}

/// Which waker a [`Waker`] is, as [`Waker::will_wake`] tells them apart (its data and its
/// vtable), kept as addresses: what [`Answer`] compares, not a clone of the waker.
#[derive(Clone, Copy, PartialEq, Eq)]
struct WakerId(usize, usize);

impl WakerId {
    fn of(waker: &Waker) -> Self {
        WakerId(waker.data() as usize, std::ptr::from_ref(waker.vtable()) as usize)
    }
}

impl Future for Answer<'_> {
    type Output = Option<Outcome>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Outcome>> {
        let this = self.get_mut();
        if this.registered.take().is_some_and(|id| id == WakerId::of(cx.waker())) {
            return Poll::Pending;
        }
        let mut inner = this.pending.lock();
        // Looked up, then removed if answered: not through `entry`, which makes room for an
        // insert first (allocating a table for an empty map, growing a full one).
        match inner.calls.get_mut(&this.id) {
            Some(Slot::Waiting(waker)) => {
                match waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            // `Orphaned` is only ever left by this dropped.
            Some(Slot::Answered(_) | Slot::Orphaned) | None => {
                this.taken = true;
                Poll::Ready(match inner.calls.remove(&this.id) {
                    Some(Slot::Answered(outcome)) => Some(outcome),
                    Some(Slot::Waiting(_) | Slot::Orphaned) | None => None,
                })
            }
        }
    }
}

impl Drop for Answer<'_> {
    fn drop(&mut self) {
        if !self.taken {
            self.pending.answer_dropped(self.id);
        }
    }
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
        // A panic while holding this lock cannot leave the table inconsistent (each critical
        // section changes an entry and the `waiting` count with nothing that can panic between
        // them; a waker's clone comes before any change), so a poisoned lock is still usable.
        crate::sync::lock(&self.inner)
    }

    /// Register our call `id` unless [`Limits::max_pending_calls`](super::Limits) calls await
    /// answers already (`None`: see [`Pending::register_waiting`]). The call holds a slot until
    /// it is answered, failed or given up. With `waker`, the caller's, stored as its first poll
    /// of the [`Answer`] would store it: a first poll with the same waker then takes no lock
    /// (the call's two trips through the table's lock become one and the answer's).
    pub(crate) fn try_register(&self, id: u64, waker: Option<&Waker>) -> Option<Result<Answer<'_>, Error>> {
        let mut inner = self.lock();
        if let Some(reason) = inner.rare.as_ref().and_then(|rare| rare.closed.as_ref()) {
            return Some(Err(Error::ConnectionLost(CloseReason::clone(reason))));
        }
        if inner.waiting >= self.max {
            return None;
        }
        inner.calls.insert(id, Slot::Waiting(waker.cloned()));
        inner.waiting += 1;
        drop(inner);
        self.call_started.notify_one();
        Some(Ok(Answer { pending: self, id, taken: false, registered: waker.map(WakerId::of) }))
    }

    /// [`Pending::try_register`] once the map is full: wait for a slot (in a future of its own,
    /// boxed by the caller, so that a call's future stays small).
    pub(crate) async fn register_waiting(&self, id: u64) -> Result<Answer<'_>, Error> {
        let slot_freed = self.slot_freed.get_or_init(Default::default);
        loop {
            let freed = slot_freed.notified();
            tokio::pin!(freed);
            // Registered as a waiter before the check: a slot freed from here on wakes it.
            freed.as_mut().enable();
            if let Some(registered) = self.try_register(id, None) {
                return registered;
            }
            freed.await;
        }
    }

    /// A call stopped waiting (`waiting_before` were waiting before): wake one that waits for a
    /// slot.
    fn freed(&self, waiting_before: usize) {
        if waiting_before >= self.max
            && let Some(slot_freed) = self.slot_freed.get()
        {
            slot_freed.notify_one();
        }
    }

    /// How many calls await answers.
    pub(crate) fn len(&self) -> usize {
        self.lock().waiting
    }

    pub(crate) fn complete(&self, id: u64, outcome: Result<Box<RawValue>, ErrorObject>, read_before: u64) -> Delivery {
        let mut inner = self.lock();
        let waiting_before = inner.waiting;
        if let Some(slot) = inner.calls.get_mut(&id) {
            let waker = match slot {
                Slot::Waiting(waker) => waker.take(),
                // Its caller is gone, its guard about to give it up: the same as abandoned.
                Slot::Orphaned => {
                    inner.calls.remove(&id);
                    inner.waiting -= 1;
                    drop(inner);
                    self.freed(waiting_before);
                    return Delivery::Abandoned;
                }
                // Answered already, the answer not taken yet: a duplicate.
                Slot::Answered(_) => return Delivery::Unknown,
            };
            *slot = Slot::Answered((outcome.map_err(|e| Box::new(Error::Remote(e))), read_before));
            inner.waiting -= 1;
            drop(inner);
            self.freed(waiting_before);
            if let Some(waker) = waker {
                waker.wake();
            }
            return Delivery::Delivered;
        }
        if inner.rare.as_mut().is_some_and(|rare| rare.abandoned.ids.remove(&id)) {
            Delivery::Abandoned
        } else {
            Delivery::Unknown
        }
    }

    /// Whether call `id` still waits for its answer (none was read for it, it was not given up,
    /// the connection has not closed).
    pub(crate) fn is_waiting(&self, id: u64) -> bool {
        matches!(self.lock().calls.get(&id), Some(Slot::Waiting(_) | Slot::Orphaned))
    }

    /// The caller stops waiting; remember the id so a late answer is not mistaken for garbage.
    /// `false` when the call was no longer waiting: its answer (or the connection's end) was read
    /// already and waits in the call's [`Answer`], where it must be taken from instead.
    #[must_use]
    pub(crate) fn abandon(&self, id: u64) -> bool {
        let mut inner = self.lock();
        let waiting_before = inner.waiting;
        if !matches!(inner.calls.get(&id), Some(Slot::Waiting(_) | Slot::Orphaned)) {
            return false;
        }
        drop(inner.calls.remove(&id));
        inner.waiting -= 1;
        self.freed(waiting_before);
        if inner.calls.is_empty() {
            // A call given up is rare, and a connection's last call timing out is how it goes
            // quiet when its peer stops answering: give the table's memory back (a connection
            // whose calls are answered keeps it for the next call, with no allocation).
            inner.calls.shrink_to(0);
        }
        let abandoned = &mut inner.rare.get_or_insert_with(Default::default).abandoned;
        abandoned.ids.insert(id);
        abandoned.order.push_back(id);
        while abandoned.order.len() > ABANDONED_MEMORY {
            if let Some(old) = abandoned.order.pop_front() {
                abandoned.ids.remove(&old);
            }
        }
        true
    }

    /// An [`Answer`] dropped before it was taken: drop the answer that arrived for it, if one
    /// did; a call still waiting is left `Orphaned`, for the caller's guard to give up.
    fn answer_dropped(&self, id: u64) {
        let mut inner = self.lock();
        match inner.calls.get_mut(&id) {
            Some(slot @ Slot::Waiting(_)) => *slot = Slot::Orphaned,
            Some(Slot::Answered(_)) => {
                let answered = inner.calls.remove(&id);
                drop(inner);
                drop(answered);
            }
            Some(Slot::Orphaned) | None => {}
        }
    }

    /// The abandoned ids remembered (`None`: never made, nobody gave up and the table is open),
    /// and their order of abandoning.
    #[cfg(all(test, jsonrpc_duplex_loom))]
    fn abandoned_memory(&self) -> Option<(Vec<u64>, Vec<u64>)> {
        let inner = self.lock();
        let a = &inner.rare.as_ref()?.abandoned;
        let mut ids: Vec<u64> = a.ids.iter().copied().collect();
        ids.sort();
        Some((ids, a.order.iter().copied().collect()))
    }

    /// How many entries the table holds, waiting or answered and not taken yet.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> usize {
        self.lock().calls.len()
    }

    /// Fail every waiting call and refuse new ones. The failure waits in each call's entry, as
    /// an answer does, until its caller takes it.
    pub(crate) fn close(&self, reason: &CloseReason) {
        let mut wakers = Vec::new();
        {
            let mut inner = self.lock();
            let rare = inner.rare.get_or_insert_with(Default::default);
            if rare.closed.is_none() {
                rare.closed = Some(Box::new(reason.clone()));
            }
            // Nobody takes an orphan's failure.
            inner.calls.retain(|_, slot| !matches!(slot, Slot::Orphaned));
            for slot in inner.calls.values_mut() {
                if let Slot::Waiting(waker) = slot {
                    wakers.extend(waker.take());
                    *slot = Slot::Answered((Err(Box::new(Error::ConnectionLost(reason.clone()))), 0));
                }
            }
            inner.waiting = 0;
        }
        if let Some(slot_freed) = self.slot_freed.get() {
            slot_freed.notify_waiters();
        }
        for waker in wakers {
            waker.wake();
        }
    }
}

/// The table's races, every interleaving of its lock (the `loom_` models, `scripts/loom.sh`):
/// an answer against the caller giving up, the caller waiting as its answer or the
/// connection's end arrives, an answer between the caller's two drops (its [`Answer`] and its
/// guard, in either order), the connection's end against an answer and a new call on a full
/// table, a waiter for a slot making `slot_freed` as a slot is freed, two waiters racing to make
/// it, and the abandoned ids' memory under callers giving up. The caller's wake-up is std's
/// `Waker` as loom's `block_on` gives it; the slot's wake-up is `crate::sync::lazy`'s loom version
/// of `Notify`. What is checked is that the table hands each call exactly one outcome, never
/// loses a caller's or a slot's wake-up, never keeps an entry its caller left, never holds more
/// calls than its limit, and remembers at most its bound of abandoned ids.
#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use std::sync::Arc;

    use super::*;
    use crate::connection::CloseKind;

    fn answer() -> Result<Box<RawValue>, ErrorObject> {
        Ok(RawValue::from_string("1".to_owned()).unwrap())
    }

    /// Poll a call's answer once, as its caller's task does when woken (`Pending`: none yet).
    fn poll_once(answer: &mut Answer<'_>) -> Poll<Option<Outcome>> {
        Pin::new(answer).poll(&mut Context::from_waker(Waker::noop()))
    }

    fn assert_answered(outcome: Option<Outcome>) {
        let (result, _) = outcome.expect("an outcome");
        assert_eq!(result.expect("a result").get(), "1");
    }

    fn assert_lost(outcome: Option<Outcome>) {
        match outcome.expect("an outcome").0.map_err(|e| *e) {
            Err(Error::ConnectionLost(_)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn loom_pending_an_answer_races_the_caller_giving_up() {
        loom::model(|| {
            let pending = Arc::new(Pending::new(4));
            let mut rx = pending.try_register(0, None).unwrap().unwrap();
            let reader = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.complete(0, answer(), 0))
            };
            let gave_up = pending.abandon(0);
            let delivery = reader.join().unwrap();
            let got = poll_once(&mut rx);
            if gave_up {
                // The late answer is absorbed; the caller never sees it.
                assert_eq!(delivery, Delivery::Abandoned);
                assert!(matches!(got, Poll::Ready(None)));
            } else {
                // The answer was read first: the caller must take it from its receiver.
                assert_eq!(delivery, Delivery::Delivered);
                let Poll::Ready(outcome) = got else { panic!("the answer is not there") };
                assert_answered(outcome);
            }
            assert_eq!(pending.len(), 0);
            assert_eq!(pending.entries(), 0);
        });
    }

    /// The caller's task waits (registering its waker) while the reader reads its answer, or
    /// while the connection ends: it is always woken, with that outcome. `with_waker`: the call
    /// is registered with the caller's waker and its answer polled first in that same poll
    /// (which then takes no lock).
    fn the_caller_waits(with_waker: bool) {
        for end in [false, true] {
            loom::model(move || {
                let pending = Arc::new(Pending::new(4));
                let other = {
                    let pending = pending.clone();
                    loom::thread::spawn(move || {
                        // The reader reads an answer only once its call was sent.
                        while pending.len() == 0 {
                            loom::thread::yield_now();
                        }
                        if end {
                            pending.close(&CloseReason::new(CloseKind::RemoteClosed, "eof"));
                        } else {
                            assert_eq!(pending.complete(0, answer(), 0), Delivery::Delivered);
                        }
                    })
                };
                let outcome = loom::future::block_on(async {
                    let rx = std::future::poll_fn(|cx| {
                        let waker = with_waker.then(|| cx.waker());
                        Poll::Ready(pending.try_register(0, waker).unwrap().unwrap())
                    })
                    .await;
                    rx.await
                });
                if end {
                    assert_lost(outcome);
                } else {
                    assert_answered(outcome);
                }
                other.join().unwrap();
                assert_eq!(pending.entries(), 0);
            });
        }
    }

    #[test]
    fn loom_pending_the_caller_waits_as_its_answer_or_the_end_arrives() {
        the_caller_waits(false);
    }

    /// Fails if the call's waker is not stored as it is registered.
    #[test]
    fn loom_pending_a_call_registered_with_its_waker_is_woken_by_its_answer_or_the_end() {
        the_caller_waits(true);
    }

    /// A caller dropped while waiting drops its answer's receiver and its guard (which gives the
    /// call up), in either order, while the reader reads the answer: the entry always leaves the
    /// table, and the guard gives up (tells the peer) only if the answer was not read first.
    #[test]
    fn loom_pending_an_answer_comes_between_the_callers_two_drops() {
        for answer_first in [true, false] {
            loom::model(move || {
                let pending = Arc::new(Pending::new(4));
                let rx = pending.try_register(0, None).unwrap().unwrap();
                let reader = {
                    let pending = pending.clone();
                    loom::thread::spawn(move || pending.complete(0, answer(), 0))
                };
                let gave_up = if answer_first {
                    drop(rx);
                    pending.abandon(0)
                } else {
                    let gave_up = pending.abandon(0);
                    drop(rx);
                    gave_up
                };
                let delivery = reader.join().unwrap();
                if delivery == Delivery::Delivered {
                    assert!(!gave_up, "gave up an answered call");
                } else {
                    assert_eq!(delivery, Delivery::Abandoned);
                    // Given up first, the guard finds the call waiting (its receiver dropped
                    // first, the answer may come in between and end the call).
                    assert!(gave_up || answer_first, "an unanswered call not given up");
                }
                assert_eq!(pending.len(), 0);
                assert_eq!(pending.entries(), 0, "an entry its caller left stayed");
            });
        }
    }

    #[test]
    fn loom_pending_the_end_races_an_answer_and_a_new_call() {
        loom::model(|| {
            // Full with call 0: call 1 fits only once call 0 is answered.
            let pending = Arc::new(Pending::new(1));
            let mut rx0 = pending.try_register(0, None).unwrap().unwrap();
            let reader = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.complete(0, answer(), 0))
            };
            let closer = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.close(&CloseReason::new(CloseKind::RemoteClosed, "eof")))
            };
            let call1 = pending.try_register(1, None);
            assert!(pending.len() <= 1, "more calls than the limit");
            let delivery = reader.join().unwrap();
            closer.join().unwrap();
            // Call 0 has exactly one outcome: its answer, or the connection's end.
            let Poll::Ready(outcome) = poll_once(&mut rx0) else { panic!("no outcome for call 0") };
            match outcome.expect("an outcome for call 0") {
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
                    let Poll::Ready(outcome) = poll_once(&mut rx1) else { panic!("no outcome for call 1") };
                    assert_lost(outcome);
                }
            }
            assert_eq!(pending.len(), 0);
            assert_eq!(pending.entries(), 0);
        });
    }

    /// A caller waits for a slot while the reader's answer frees the only one: the waiter makes
    /// `slot_freed` while the answer looks for it (before or after). It always gets the slot.
    #[test]
    fn loom_pending_a_slot_waiter_makes_the_wakeup_as_an_answer_frees_the_slot() {
        loom::model(|| {
            let pending = Arc::new(Pending::new(1));
            let mut rx0 = pending.try_register(0, None).unwrap().unwrap();
            let reader = {
                let pending = pending.clone();
                loom::thread::spawn(move || pending.complete(0, answer(), 0))
            };
            let rx1 = loom::future::block_on(pending.register_waiting(1)).expect("a slot");
            assert_eq!(reader.join().unwrap(), Delivery::Delivered);
            assert!(matches!(poll_once(&mut rx0), Poll::Ready(Some(_))), "call 0 answered");
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
            let _rx0 = pending.try_register(0, None).unwrap().unwrap();
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
            let _rxs: Vec<_> = (0..4).map(|id| pending.try_register(id, None).unwrap().unwrap()).collect();
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
