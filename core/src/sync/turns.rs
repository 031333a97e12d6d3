//! Whose turn it is to work a queue: the one idiom behind both hand-offs between tasks that the
//! connection's speed rests on, the ordered inbound lane (`connection/lane.rs`) and
//! the outbound queue (`connection/outbound/turns.rs`).
//!
//! Nobody works a queue by default. Whoever puts work on an idle queue may work it on the spot,
//! from its own poll, and goes on with what others queue meanwhile; what it cannot finish without
//! waiting goes to the queue's own task together with the turn. A lone message thus costs no hop
//! to another task, and work never runs twice at once nor out of order.
//!
//! # States
//!
//! | state | who works the queue |
//! |---|---|
//! | `Idle` | nobody: whoever queues next decides |
//! | `Here` | a caller that found the queue idle, from its own poll |
//! | `Held` | the reader, later: work queued while the reader goes through what it has read is kept for it to do in one go before it waits (outbound only) |
//! | `Task` | the queue's own task |
//!
//! # Transitions
//!
//! | from → to | method | under the queue lock | taken by |
//! |---|---|---|---|
//! | `Idle` → `Here` | [`Turns::try_here`] | no (a load and a store) | the single producer of a queue that nobody else moves out of `Idle` (the lane's reader) |
//! | `Idle` → `Here` | [`Locked::take_here`] | yes | a producer that queued under the lock (a sender of answers) |
//! | `Idle` → `Held` | [`Locked::take_held`] | yes | a producer, while the reader holds |
//! | `Held` → `Here` | [`Locked::held_to_here`] | yes | the reader, done holding |
//! | `Idle`, `Here`, `Held` → `Task` | [`Locked::pass_to_task`] | yes | a producer of work that must wait; an owner that cannot finish |
//! | `Here`, `Task` → `Idle` | [`Locked::let_go`] | yes | the owner, having seen the queue empty |
//! | `Here` → `Idle` | [`Turns::leave_here`] | no | the single producer, having worked all it queued (nobody else can queue) |
//!
//! # Rules that make it correct
//!
//! 1. **Into or out of `Task` only under the lock.** A producer that queues under the lock and
//!    sees `Task` there knows the task will take its work: the task gives the turn back only
//!    under the same lock, after seeing the queue empty.
//! 2. **The turn is given up only with the queue seen empty** (under the lock, or by the single
//!    producer, which knows it queued nothing while it worked).
//! 3. **One owner at a time.** Only the owner (`Here`, or `Task`) works; `Held` work waits for the
//!    reader. Every move out of `Idle` is exclusive (under the lock, or by the one party that
//!    ever makes it).
//! 4. **The task is woken after every move to `Task`**, once the lock is let go
//!    ([`Turns::wake_task`]); it registers its waker before it looks ([`Turns::register_task`]).
//!
//! The `loom_` tests of `lane.rs` and `outbound/turns.rs` check these rules as the two queues use
//! them, for every interleaving of small runs.

use std::ops::{Deref, DerefMut};
use std::task::Context;

use super::{AtomicU8, AtomicWaker, Mutex, MutexGuard, Ordering, lock};

/// Who works a queue (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Owner {
    Idle = 0,
    Here = 1,
    Held = 2,
    Task = 3,
}

impl Owner {
    fn from_u8(n: u8) -> Owner {
        match n {
            0 => Owner::Idle,
            1 => Owner::Here,
            2 => Owner::Held,
            _ => Owner::Task,
        }
    }
}

/// A queue and whose turn it is to work it.
pub(crate) struct Turns<Q> {
    queue: Mutex<Q>,
    owner: AtomicU8,
    task: AtomicWaker,
}

/// The queue, locked: the transitions that need the lock are its methods.
pub(crate) struct Locked<'a, Q> {
    queue: MutexGuard<'a, Q>,
    owner: &'a AtomicU8,
}

impl<Q> Turns<Q> {
    pub(crate) fn new(queue: Q) -> Self {
        Turns { queue: Mutex::new(queue), owner: AtomicU8::new(Owner::Idle as u8), task: AtomicWaker::new() }
    }

    pub(crate) fn lock(&self) -> Locked<'_, Q> {
        Locked { queue: lock(&self.queue), owner: &self.owner }
    }

    /// Who works the queue, as of now (a look without the lock: it may change at once).
    pub(crate) fn owner(&self) -> Owner {
        Owner::from_u8(self.owner.load(Ordering::Acquire))
    }

    /// `Idle` → `Here` without the lock; `false` if somebody else works the queue. Only for the
    /// single producer of a queue (nobody else may queue while it works, see [`Turns::leave_here`])
    /// that is also the only one ever to move it out of `Idle` (the lane's reader: the task only
    /// gives the turn back). Then nobody can move the queue between the look and the store, and
    /// a plain load and store take the turn (the load acquires what the last owner did, as a
    /// compare-and-swap would) for an atomic instruction less.
    pub(crate) fn try_here(&self) -> bool {
        if self.owner.load(Ordering::Acquire) != Owner::Idle as u8 {
            return false;
        }
        self.owner.store(Owner::Here as u8, Ordering::Relaxed);
        true
    }

    /// `Here` → `Idle` without the lock: the single producer worked everything it queued.
    pub(crate) fn leave_here(&self) {
        debug_assert_eq!(Owner::from_u8(self.owner.load(Ordering::Relaxed)), Owner::Here);
        self.owner.store(Owner::Idle as u8, Ordering::Release);
    }

    /// Wake the task (after a move to `Task`, with the lock let go).
    pub(crate) fn wake_task(&self) {
        self.task.wake();
    }

    /// The task registers before it looks at the queue, so a move to `Task` from here on wakes it.
    pub(crate) fn register_task(&self, cx: &Context<'_>) {
        self.task.register(cx.waker());
    }
}

impl<Q> Locked<'_, Q> {
    pub(crate) fn owner(&self) -> Owner {
        Owner::from_u8(self.owner.load(Ordering::Acquire))
    }

    fn set(&mut self, to: Owner) {
        self.owner.store(to as u8, Ordering::Release);
    }

    /// `Idle` → `Here`; `false` (no change) if somebody works the queue already.
    pub(crate) fn take_here(&mut self) -> bool {
        let idle = self.owner() == Owner::Idle;
        if idle {
            self.set(Owner::Here);
        }
        idle
    }

    /// `Idle` → `Held`; `false` (no change) if somebody works the queue already.
    pub(crate) fn take_held(&mut self) -> bool {
        let idle = self.owner() == Owner::Idle;
        if idle {
            self.set(Owner::Held);
        }
        idle
    }

    /// `Held` → `Here`: the reader works what it held; `false` (no change) if nothing was held.
    pub(crate) fn held_to_here(&mut self) -> bool {
        let held = self.owner() == Owner::Held;
        if held {
            self.set(Owner::Here);
        }
        held
    }

    /// Any state → `Task`. Returns whether it moved (then wake the task once the lock is let go).
    pub(crate) fn pass_to_task(&mut self) -> bool {
        let moved = self.owner() != Owner::Task;
        if moved {
            self.set(Owner::Task);
        }
        moved
    }

    /// `Here` or `Task` → `Idle`: the owner saw the queue empty. Returns who owned it.
    pub(crate) fn let_go(&mut self) -> Owner {
        let was = self.owner();
        debug_assert!(matches!(was, Owner::Here | Owner::Task), "let_go from {was:?}");
        self.set(Owner::Idle);
        was
    }
}

impl<Q> Deref for Locked<'_, Q> {
    type Target = Q;
    fn deref(&self) -> &Q {
        &self.queue
    }
}

impl<Q> DerefMut for Locked<'_, Q> {
    fn deref_mut(&mut self) -> &mut Q {
        &mut self.queue
    }
}
