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
//! it and tells the hook. One atomic, `state`, orders the hand-offs, and every step that changes
//! it is a read-modify-write:
//!
//! | from → to | by | with it |
//! |---|---|---|
//! | `EMPTY` → `HELD` | holder, [`hold`](Baton::hold) | nothing: the holder keeps the state |
//! | `EMPTY` → `DONE` | teller, [`tell`](Baton::tell) | nothing: answered before anyone held (`hold` then fails) |
//! | `HELD` → `TOLD_OK` | teller, [`tell`](Baton::tell) | nothing: the answer was a result |
//! | `HELD` → `TOLD_ERR` | teller, [`tell`](Baton::tell) | the error, put in `error` before |
//! | `TOLD_OK`, `TOLD_ERR` → `DONE` | holder, [`told`](Baton::told) | the error taken |
//! | `HELD` → `LEFT` | holder, [`leave`](Baton::leave) | the state, put in `left` before |
//! | `LEFT` → `DONE` | teller, [`tell`](Baton::tell) | the state taken |
//!
//! Each cell belongs to one side at a time. `error` is the teller's until it writes `TOLD_ERR`,
//! then the holder's. `left` is the holder's until it writes `LEFT`, then the teller's. A
//! `leave` that finds the answer already given takes the state back and tells the hook itself.
//! The cells are mutexes, but only the rare paths lock them. The `loom_baton_*` models check
//! every interleaving of a holder and a teller.

use super::{AtomicU8, Mutex, Ordering, lock};

const EMPTY: u8 = 0;
const HELD: u8 = 1;
const TOLD_OK: u8 = 2;
const TOLD_ERR: u8 = 3;
const LEFT: u8 = 4;
const DONE: u8 = 5;

/// See the [module docs](self).
pub(crate) struct Baton<T, E> {
    state: AtomicU8,
    /// The state the holder left ([`Baton::leave`]).
    left: Mutex<Option<T>>,
    /// The error the request was answered with, while the holder has not taken it.
    error: Mutex<Option<E>>,
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

impl<T, E: Clone> Baton<T, E> {
    pub(crate) fn new() -> Self {
        Baton { state: AtomicU8::new(EMPTY), left: Mutex::new(None), error: Mutex::new(None) }
    }

    /// Holder: take the state on (`false`: answered already; nothing to hold).
    pub(crate) fn hold(&self) -> bool {
        self.state.compare_exchange(EMPTY, HELD, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Holder, after a poll: the answer, if it was given (then the holder tells the hook).
    #[inline]
    pub(crate) fn told(&self) -> Option<Result<(), E>> {
        match self.state.load(Ordering::Acquire) {
            TOLD_OK => {
                self.state.store(DONE, Ordering::Relaxed);
                Some(Ok(()))
            }
            TOLD_ERR => {
                let error = lock(&self.error).take();
                self.state.store(DONE, Ordering::Relaxed);
                error.map(Err)
            }
            _ => None,
        }
    }

    /// Holder, its handler ended unanswered: leave `value` for the teller. `Err`: answered
    /// meanwhile; the value back, with the answer, for the holder to tell.
    pub(crate) fn leave(&self, value: T) -> Result<(), (T, Result<(), E>)> {
        *lock(&self.left) = Some(value);
        match self.state.compare_exchange(HELD, LEFT, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(()),
            Err(_) => {
                let value = lock(&self.left).take().expect("left just now");
                // Told (a holder leaves once, after holding): the answer is there.
                let answer = self.told().unwrap_or(Ok(()));
                Err((value, answer))
            }
        }
    }

    /// Teller (once): the request is answered with `answer`.
    pub(crate) fn tell(&self, answer: Result<(), &E>) -> Told<T> {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let to = match (state, answer) {
                (EMPTY, _) => DONE,
                (HELD, Ok(())) => TOLD_OK,
                (HELD, Err(error)) => {
                    self.keep_error(error);
                    TOLD_ERR
                }
                (LEFT, _) => DONE,
                // Told already (cannot be: a request is answered once).
                _ => return Told::Nobody,
            };
            match self.state.compare_exchange(state, to, Ordering::AcqRel, Ordering::Acquire) {
                Ok(EMPTY) => return Told::Nobody,
                Ok(HELD) => return Told::Holder,
                Ok(_) => return lock(&self.left).take().map_or(Told::Nobody, Told::Left),
                Err(now) => {
                    if to == TOLD_ERR {
                        lock(&self.error).take();
                    }
                    state = now;
                }
            }
        }
    }

    /// The error answer, for the holder (out of line: most answers are results).
    #[cold]
    fn keep_error(&self, error: &E) {
        *lock(&self.error) = Some(error.clone());
    }

    /// Ready for another request (`&mut`: nobody else is here).
    pub(crate) fn reset(&mut self) {
        let state = self.state.load(Ordering::Relaxed);
        if state != EMPTY && state != DONE {
            // A state never told (cannot be: every held state is told or left, every left one
            // taken by the answer): dropped.
            lock(&self.left).take();
            lock(&self.error).take();
        }
        self.state.store(EMPTY, Ordering::Relaxed);
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
            let baton = Arc::new(Baton::<&'static str, u32>::new());
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
        let baton = Baton::<&str, u32>::new();
        assert!(baton.hold());
        assert_eq!(baton.told(), None);
        assert_eq!(baton.tell(Err(&3)), Told::Holder);
        assert_eq!(baton.told(), Some(Err(3)));
        assert_eq!(baton.told(), None, "told once");

        // Answered after the holder left: the teller takes the state.
        let mut baton = Baton::<&str, u32>::new();
        assert!(baton.hold());
        assert_eq!(baton.leave("state"), Ok(()));
        assert_eq!(baton.tell(Ok(())), Told::Left("state"));

        // Reused: answered before anyone held.
        baton.reset();
        assert_eq!(baton.tell(Ok(())), Told::Nobody);
        assert!(!baton.hold());

        // Answered between the poll and the leave: the state comes back to the holder.
        let mut baton = Baton::<&str, u32>::new();
        assert!(baton.hold());
        assert_eq!(baton.tell(Err(&9)), Told::Holder);
        assert_eq!(baton.leave("state"), Err(("state", Err(9))));
        baton.reset();
        assert!(baton.hold());
    }
}
