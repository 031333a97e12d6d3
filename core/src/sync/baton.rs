//! Who tells a hook how a request ended: the task that polls its handler (it holds the hook's
//! state) or whoever answers it (once, from any task, at any time). [`Baton`] is that hand-off;
//! a request's reply slot keeps one (`handler/responder.rs`), the dispatcher holds the state
//! (`connection/dispatch.rs`).
//!
//! The *holder* keeps the state itself while it polls the handler, and reads it around each poll
//! (a hook's scope). The *teller* answers. Most requests are answered during a poll. The teller
//! then only marks the answer (`TOLD_OK`), and the holder tells the hook after the poll. No lock
//! is taken, and the state never moves. If the handler ends unanswered (it handed its responder
//! to another task), the holder leaves the state in the baton. The teller, coming later, takes
//! it and tells the hook. One atomic, `state`, orders the hand-offs. Every step one side takes
//! while the other may act is a compare-and-swap. The holder's steps out of `TOLD_*`, after the
//! teller is done, are plain stores:
//!
//! | from → to | by | with it |
//! |---|---|---|
//! | `EMPTY` → `HELD` | holder, [`hold`](Baton::hold) | nothing: the holder keeps the state |
//! | `EMPTY` → `DONE` | teller, [`tell`](Baton::tell) | nothing: answered before anyone held (`hold` then fails) |
//! | `HELD` → `TOLD_OK` | teller, [`tell`](Baton::tell) | nothing: the answer was a result |
//! | `HELD` → `TOLD_ERR` | teller, [`tell`](Baton::tell), under the lock | the error, put in the cell |
//! | `TOLD_OK` → `DONE` | holder, [`told`](Baton::told) or [`leave`](Baton::leave) | nothing |
//! | `TOLD_ERR` → `DONE` | holder, [`told`](Baton::told) or [`leave`](Baton::leave), under the lock | the error, taken |
//! | `HELD` → `LEFT` | holder, [`leave`](Baton::leave), under the lock | the state, put in the cell |
//! | `LEFT` → `DONE` | teller, [`tell`](Baton::tell), under the lock | the state, taken |
//!
//! One cell, behind a lock, carries what crosses: the state the holder left, or the error the
//! teller gave, never both (a holder leaves only while it holds, and an error is written only
//! while it does). Every step that writes or takes the cell's content changes `state` while it
//! holds the lock. So a side that finds `LEFT` or `TOLD_ERR` and then takes the lock finds the
//! content there. A result (`TOLD_OK`) crosses without the lock, and so does holding: the common
//! call takes no lock at all. A `leave` that finds the answer already given keeps the state and
//! tells the hook itself. The cell is the owner's type ([`Crossing`]): a reply slot keeps its
//! answer's watch there too, which a slot whose hook's state is held never uses, so the baton
//! adds one byte to the slot. The `loom_baton_*` models check every interleaving of a holder and
//! a teller.

use super::{AtomicU8, Mutex, Ordering, lock};

const EMPTY: u8 = 0;
const HELD: u8 = 1;
const TOLD_OK: u8 = 2;
const TOLD_ERR: u8 = 3;
const LEFT: u8 = 4;
const DONE: u8 = 5;

/// See the [module docs](self).
pub(crate) struct Baton<C> {
    state: AtomicU8,
    cell: Mutex<C>,
}

/// The cell's side of a [`Baton`]: where the state a holder left (`T`) and the error a teller
/// gave (`E`) wait, each for the other side.
pub(crate) trait Crossing<T, E> {
    fn put_left(&mut self, value: T);
    fn take_left(&mut self) -> Option<T>;
    fn put_error(&mut self, error: E);
    fn take_error(&mut self) -> Option<E>;
    /// Drop whatever of the two is there.
    fn clear(&mut self);
}

/// What [`Baton::tell`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Told<T> {
    /// Nobody held a state.
    Nobody,
    /// The holder has it: it tells the hook after its poll.
    Holder,
    /// The holder left it: the teller tells the hook.
    Left(T),
}

impl<C> Baton<C> {
    pub(crate) fn new(cell: C) -> Self {
        Baton { state: AtomicU8::new(EMPTY), cell: Mutex::new(cell) }
    }

    /// The cell, for the owner's other content (the baton only reaches what [`Crossing`] gives it).
    pub(crate) fn cell(&self) -> &Mutex<C> {
        &self.cell
    }

    /// The cell, with nobody else here.
    pub(crate) fn cell_mut(&mut self) -> &mut C {
        self.cell.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Holder: take the state on (`false`: answered already; nothing to hold).
    pub(crate) fn hold(&self) -> bool {
        self.state.compare_exchange(EMPTY, HELD, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Holder, after a poll: the answer, if it was given (then the holder tells the hook).
    #[inline]
    pub(crate) fn told<T, E>(&self) -> Option<Result<(), E>>
    where
        C: Crossing<T, E>,
    {
        match self.state.load(Ordering::Acquire) {
            TOLD_OK => {
                self.state.store(DONE, Ordering::Relaxed);
                Some(Ok(()))
            }
            TOLD_ERR => self.take_error(&mut *lock(&self.cell)),
            _ => None,
        }
    }

    /// `TOLD_ERR` → `DONE` with the cell locked: the error.
    fn take_error<T, E>(&self, cell: &mut C) -> Option<Result<(), E>>
    where
        C: Crossing<T, E>,
    {
        let error = cell.take_error();
        self.state.store(DONE, Ordering::Relaxed);
        error.map(Err)
    }

    /// Holder, its handler ended unanswered: leave `value` for the teller. `Err`: answered
    /// meanwhile; the value back, with the answer, for the holder to tell.
    pub(crate) fn leave<T, E>(&self, value: T) -> Result<(), (T, Result<(), E>)>
    where
        C: Crossing<T, E>,
    {
        let mut cell = lock(&self.cell);
        match self.state.compare_exchange(HELD, LEFT, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                cell.put_left(value);
                Ok(())
            }
            Err(TOLD_OK) => {
                self.state.store(DONE, Ordering::Relaxed);
                Err((value, Ok(())))
            }
            Err(TOLD_ERR) => match self.take_error(&mut *cell) {
                Some(answer) => Err((value, answer)),
                None => Ok(()),
            },
            // Not held (cannot be: a holder leaves once, after holding): nobody to tell.
            Err(_) => Ok(()),
        }
    }

    /// Teller (once): the request is answered with `answer`.
    pub(crate) fn tell<T, E: Clone>(&self, answer: Result<(), &E>) -> Told<T>
    where
        C: Crossing<T, E>,
    {
        if answer.is_ok() {
            // A result crosses without the lock, unless the holder has left.
            let mut state = self.state.load(Ordering::Acquire);
            loop {
                let to = match state {
                    EMPTY => DONE,
                    HELD => TOLD_OK,
                    LEFT => break,
                    // Told already (cannot be: a request is answered once).
                    _ => return Told::Nobody,
                };
                match self.state.compare_exchange(state, to, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(EMPTY) => return Told::Nobody,
                    Ok(_) => return Told::Holder,
                    Err(now) => state = now,
                }
            }
        }
        self.tell_locked(answer)
    }

    /// [`Baton::tell`] with the cell locked: an error, or a holder that left (out of line:
    /// most answers are results given while the holder holds).
    #[cold]
    fn tell_locked<T, E: Clone>(&self, answer: Result<(), &E>) -> Told<T>
    where
        C: Crossing<T, E>,
    {
        let mut cell = lock(&self.cell);
        // Under the lock the holder cannot leave: only `hold` can change the state meanwhile.
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let to = match (state, answer) {
                (EMPTY, _) | (LEFT, _) => DONE,
                (HELD, Ok(())) => TOLD_OK,
                (HELD, Err(_)) => TOLD_ERR,
                _ => return Told::Nobody,
            };
            match self.state.compare_exchange(state, to, Ordering::AcqRel, Ordering::Acquire) {
                Ok(EMPTY) => return Told::Nobody,
                Ok(LEFT) => return cell.take_left().map_or(Told::Nobody, Told::Left),
                Ok(_) => {
                    if let Err(error) = answer {
                        cell.put_error(error.clone());
                    }
                    return Told::Holder;
                }
                Err(now) => state = now,
            }
        }
    }

    /// Ready for another request (`&mut`: nobody else is here).
    pub(crate) fn reset<T, E>(&mut self)
    where
        C: Crossing<T, E>,
    {
        let state = self.state.load(Ordering::Relaxed);
        if state != EMPTY && state != DONE {
            // A state never told (cannot be: every held state is told or left, every left one
            // taken by the answer): dropped.
            self.cell_mut().clear();
        }
        self.state.store(EMPTY, Ordering::Relaxed);
    }
}

/// A cell holding only the baton's crossing content (what the tests use).
#[cfg(test)]
#[derive(Debug)]
pub(crate) enum Only<T, E> {
    Empty,
    Left(T),
    Error(E),
}

#[cfg(test)]
impl<T, E> Crossing<T, E> for Only<T, E> {
    fn put_left(&mut self, value: T) {
        *self = Only::Left(value);
    }
    fn take_left(&mut self) -> Option<T> {
        match std::mem::replace(self, Only::Empty) {
            Only::Left(value) => Some(value),
            _ => None,
        }
    }
    fn put_error(&mut self, error: E) {
        *self = Only::Error(error);
    }
    fn take_error(&mut self) -> Option<E> {
        match std::mem::replace(self, Only::Empty) {
            Only::Error(error) => Some(error),
            _ => None,
        }
    }
    fn clear(&mut self) {
        *self = Only::Empty;
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use std::sync::Arc;

    use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use super::*;

    /// One request's baton with a holder and a teller on two threads: the holder holds, polls
    /// (the teller may answer then), maybe polls again, and lets go; it and the teller count
    /// how often they told the hook.
    fn run(answer: Result<(), u32>, polls: usize) {
        loom::model(move || {
            let baton = Arc::new(Baton::new(Only::<&'static str, u32>::Empty));
            let told = Arc::new(AtomicUsize::new(0));
            let teller = {
                let (baton, told) = (baton.clone(), told.clone());
                loom::thread::spawn(move || match baton.tell(answer.as_ref().map(|_| ())) {
                    Told::Left(value) => {
                        assert_eq!(value, "state");
                        told.fetch_add(1, SeqCst);
                    }
                    Told::Holder | Told::Nobody => {}
                })
            };
            let held = baton.hold();
            let mut told_by_holder = 0;
            if held {
                let mut state = Some("state");
                for _ in 0..polls {
                    if let Some(got) = baton.told() {
                        assert_eq!(got, answer, "the holder was given the teller's answer");
                        state.take().expect("told once");
                        told_by_holder += 1;
                        break;
                    }
                }
                if let Some(value) = state.take() {
                    match baton.leave(value) {
                        Ok(()) => {}
                        Err((value, got)) => {
                            assert_eq!((value, got), ("state", answer));
                            told_by_holder += 1;
                        }
                    }
                }
            }
            teller.join().unwrap();
            let told = told.load(SeqCst) + told_by_holder;
            assert_eq!(told, usize::from(held), "a held state is told exactly once; none is told when none was held");
        });
    }

    #[test]
    fn loom_baton_a_result_is_told_once_by_whoever_comes_second() {
        run(Ok(()), 1);
    }

    #[test]
    fn loom_baton_an_error_is_told_once_with_the_error() {
        run(Err(7), 2);
    }
}

#[cfg(all(test, not(jsonrpc_duplex_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_side_that_comes_second_tells() {
        // Answered during a poll: the holder is told after it.
        let baton = Baton::new(Only::<&str, u32>::Empty);
        assert!(baton.hold());
        assert_eq!(baton.told(), None);
        assert_eq!(baton.tell(Err(&3)), Told::Holder);
        assert_eq!(baton.told(), Some(Err(3)));
        assert_eq!(baton.told(), None, "told once");

        // Answered after the holder left: the teller takes the state.
        let mut baton = Baton::new(Only::<&str, u32>::Empty);
        assert!(baton.hold());
        assert_eq!(baton.leave("state"), Ok(()));
        assert_eq!(baton.tell(Ok(())), Told::Left("state"));

        // Reused: answered before anyone held.
        baton.reset();
        assert_eq!(baton.tell(Ok(())), Told::Nobody);
        assert!(!baton.hold());

        // Answered between the poll and the leave: the state comes back to the holder.
        let mut baton = Baton::new(Only::<&str, u32>::Empty);
        assert!(baton.hold());
        assert_eq!(baton.tell(Err(&9)), Told::Holder);
        assert_eq!(baton.leave("state"), Err(("state", Err(9))));
        baton.reset();
        assert!(baton.hold());
    }
}
