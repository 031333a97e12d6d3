//! Who writes the outbound queue: its hand-off between senders, the reader and the writer task,
//! written as a state machine over [`Turns`] (see [`crate::sync::turns`] for the idiom).
//!
//! Whoever queues an answer or a request while nobody writes becomes the writer on the spot
//! (`Here`): it writes from its own task with one poll of the stream and goes on with what
//! others queue meanwhile; what cannot be written at once goes to the writer task (`Task`) with
//! the turn. Notifications go to the writer task, so a burst leaves in few writes. While the
//! reader goes through what it has read, answers its handlers give are held (`Held`) and written
//! in one go when the reader releases them, before it waits.
//!
//! | state | who writes |
//! |---|---|
//! | `Idle` | nobody: the next to queue decides |
//! | `Here` | a sender (or the reader, releasing), from its own poll |
//! | `Held` | the reader, when it releases (it does before every wait) |
//! | `Task` | the writer task |
//!
//! Besides the owner, two flags under the same lock: `ending`, the connection ends (the writer
//! task takes everything from now on, and stops once the queue is empty and `Idle`); `dead`, the
//! writer is gone (nothing can be queued). And one word outside it, the reader's hold: `HOLDING`
//! while the reader goes through what it read (what would be written `Here` becomes `Held`),
//! with `HELD` added by the sender that made it `Held`. The reader sets `HOLDING` with a plain
//! store and clears the word with one swap, taking the lock only when the swap finds `HELD`: a
//! message whose handling queued nothing inline (a response read by a caller's connection) costs
//! one atomic instruction (about 6 ns on the benches' hosts) instead of two lock round trips
//! (about 12 ns each).
//!
//! | hold word | event | next |
//! |---|---|---|
//! | `0` | the reader starts on what it read ([`OutTurns::hold`], a store: only the reader sets it from `0`) | `HOLDING` |
//! | `HOLDING` | a sender queues inline on an `Idle` queue: under the lock, compare-and-swap to `HOLDING \| HELD`, then `Idle` → `Held` | `HOLDING \| HELD` |
//! | `HOLDING` | [`OutTurns::release`]: swap to `0`, finds no `HELD`: nothing to write | `0` |
//! | `HOLDING \| HELD` | [`OutTurns::release`]: swap to `0`, finds `HELD`: locks, `Held` → `Here`, writes | `0` |
//! | `0` | a sender queues inline on an `Idle` queue: the compare-and-swap fails (or it sees `0`): `Idle` → `Here` | `0` |
//!
//! The swap and the compare-and-swap are both atomic on the word, and the compare-and-swap
//! happens under the queue lock with the move to `Held`: a release whose swap saw `HELD` locks
//! after that sender's critical section (a section before it would have come before the swap,
//! and its compare-and-swap after it, which fails on `0`), so it finds the queue `Held`; a
//! release whose swap saw no `HELD` leaves nothing `Held` behind, since every later
//! compare-and-swap fails until the reader holds again (and then it is that hold's to release).
//!
//! | transition | method | when |
//! |---|---|---|
//! | `Idle` → `Here` | [`OutTurns::after_push`] → [`Writer::Here`] | queued inline, nobody holds, not ending |
//! | `Idle` → `Held` | [`OutTurns::after_push`] → [`Writer::Owner`] | queued inline while the reader holds (its word `HOLDING` → `HOLDING \| HELD`) |
//! | `Idle` → `Task` | [`OutTurns::after_push`] → [`Writer::Task`] | queued for the task (a notification), or ending |
//! | `Held` → `Here` | [`OutTurns::release`] → `Some` | the reader is about to wait (its swap found `HELD`) |
//! | `Held` → `Task` | [`OutTurns::release_to_task`] | the reader goes away |
//! | `Here` → `Task` | [`OutTurns::hand_to_task`] | the stream took less than everything (or failed) |
//! | `Here`, `Task` → `Idle` | [`OutTurns::take_or_release`] → `(false, _)` | the writer found the queue empty (a `Here` writer then wakes the task if ending, so it can stop) |
//! | `Task` ends | [`OutTurns::poll_turn`] → `Ready(false)` | ending, `Idle`, and the queue empty |
//!
//! Every transition happens under the queue lock. What this guarantees (checked by the
//! `loom_outbound_*` tests below): everything queued is written exactly once, in the order it was
//! queued, by one writer at a time, and the writer task stops only when all of it is written.

use std::ops::{Deref, DerefMut};
use std::task::{Context, Poll};

use crate::sync::turns::{Locked, Owner, Turns};
use crate::sync::{AtomicU8, Ordering};

/// The reader holds (see the module docs): what would be written on the spot is held.
const HOLDING: u8 = 1;
/// A sender's work became `Held` during this hold: the release writes it.
const HELD: u8 = 2;

/// What the queue holds (chunks, budgets): the connection's own.
pub(crate) trait Content {
    /// Nothing is waiting to be written.
    fn is_empty(&self) -> bool;
}

/// The queue's content and flags, under the lock.
pub(crate) struct OutQueue<C> {
    pub(crate) content: C,
    /// The connection is ending: the writer task takes everything from here on.
    pub(crate) ending: bool,
    /// The writer is gone: nothing can be queued any more.
    pub(crate) dead: bool,
}

impl<C> Deref for OutQueue<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.content
    }
}

impl<C> DerefMut for OutQueue<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.content
    }
}

/// The outbound queue and whose turn it is to write it.
pub(crate) struct OutTurns<C> {
    turns: Turns<OutQueue<C>>,
    /// The reader's hold: `0`, `HOLDING`, or `HOLDING | HELD` (see the module docs).
    hold: AtomicU8,
    /// Starts the writer task: at the first turn handed to it, or when the connection ends (an
    /// idle connection whose callers wrote everything on the spot has no writer task).
    starter: Starter,
}

/// Spawns the writer task, once.
pub(crate) type Start = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Starter {
    started: std::sync::atomic::AtomicBool,
    start: std::sync::Mutex<Option<Start>>,
}

impl Starter {
    fn start(&self) {
        use std::sync::atomic::Ordering::{Acquire, Release};
        if self.started.load(Acquire) {
            return;
        }
        let start = self.start.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.started.store(true, Release);
        if let Some(start) = start {
            start();
        }
    }
}

/// Who writes what was just queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writer {
    /// The caller, now (`Idle` → `Here`).
    Here,
    /// The writer task, woken once the lock is let go (`Idle` → `Task`).
    Task,
    /// Whoever owns the queue already, or the reader when it releases (`Held`).
    Owner,
}

impl<C: Content> OutTurns<C> {
    pub(crate) fn new(content: C) -> Self {
        OutTurns {
            turns: Turns::new(OutQueue { content, ending: false, dead: false }),
            hold: AtomicU8::new(0),
            starter: Starter::default(),
        }
    }

    /// How to start the writer task (before anything is queued); without it, a task that polls
    /// [`OutTurns::poll_turn`] must be running already.
    pub(crate) fn set_starter(&self, start: Start) {
        *self.starter.start.lock().unwrap_or_else(|p| p.into_inner()) = Some(start);
    }

    /// Start the writer task unless it runs already (it then waits for its turn).
    pub(crate) fn start_task(&self) {
        self.starter.start();
    }

    pub(crate) fn lock(&self) -> Locked<'_, OutQueue<C>> {
        self.turns.lock()
    }

    /// Something was just queued under `q`: who writes it. `inline`: the sender may write it
    /// itself (answers, requests); otherwise it is the task's (notifications). For
    /// [`Writer::Task`], call [`OutTurns::wake_task`] once the lock is let go.
    pub(crate) fn after_push(&self, q: &mut Locked<'_, OutQueue<C>>, inline: bool) -> Writer {
        if q.owner() != Owner::Idle {
            return Writer::Owner;
        }
        if inline && !q.ending {
            // Held for the reader if it holds now (and then its release, which swaps the word,
            // finds `HELD`); a failed exchange means it released already: written here.
            let holding = self.hold.load(Ordering::Acquire) == HOLDING
                && self.hold.compare_exchange(HOLDING, HOLDING | HELD, Ordering::AcqRel, Ordering::Acquire).is_ok();
            if holding {
                q.take_held();
                Writer::Owner
            } else {
                q.take_here();
                Writer::Here
            }
        } else {
            q.pass_to_task();
            Writer::Task
        }
    }

    pub(crate) fn wake_task(&self) {
        self.starter.start();
        self.turns.wake_task();
    }

    /// The reader starts on what it has read: hold what would be written on the spot. Only the
    /// reader sets the word from `0` (a sender only adds `HELD` to `HOLDING`), so a store does.
    pub(crate) fn hold(&self) {
        debug_assert_eq!(self.hold.load(Ordering::Relaxed), 0, "held twice");
        self.hold.store(HOLDING, Ordering::Release);
    }

    /// The reader is about to wait: if something was held, `Held` → `Here` and `Some` with what
    /// `take` returned, run under the same lock (the new owner may take its first batch there);
    /// `None` if nothing was held (no lock taken).
    pub(crate) fn release<R>(&self, take: impl FnOnce(&mut C) -> R) -> Option<R> {
        if self.hold.swap(0, Ordering::AcqRel) & HELD == 0 {
            return None;
        }
        let mut q = self.turns.lock();
        q.held_to_here().then(|| take(&mut q.content))
    }

    /// The reader stops holding without writing (it is going away): what it held goes to the
    /// writer task (`Held` → `Task`).
    pub(crate) fn release_to_task(&self) {
        if self.hold.swap(0, Ordering::AcqRel) & HELD == 0 {
            return;
        }
        let mut q = self.turns.lock();
        if q.owner() == Owner::Held {
            q.pass_to_task();
            drop(q);
            self.wake_task();
        }
    }

    /// The writer on the spot could not write everything: `Here` → `Task`.
    pub(crate) fn hand_to_task(&self) {
        let mut q = self.turns.lock();
        debug_assert_eq!(q.owner(), Owner::Here);
        q.pass_to_task();
        drop(q);
        self.wake_task();
    }

    /// The writer's next batch: `take` moves the content out (it is not empty), and this
    /// returns `true` with what `take` returned; or, with nothing queued, the writer gives up its
    /// turn (→ `Idle`) and this returns `false` with what `idle` returned. Both run under the lock.
    pub(crate) fn take_or_release<R>(
        &self,
        take: impl FnOnce(&mut C) -> R,
        idle: impl FnOnce(&mut C) -> R,
    ) -> (bool, R) {
        let mut q = self.turns.lock();
        if q.content.is_empty() {
            let out = idle(&mut q.content);
            let was = q.let_go();
            let wake = was == Owner::Here && q.ending;
            drop(q);
            if wake {
                // The task waits for the queue to be idle before it stops.
                self.wake_task();
            }
            return (false, out);
        }
        (true, take(&mut q.content))
    }

    /// The writer task's turn: `Ready(true)` once it owns the queue; with `ending`, `Ready(false)`
    /// once the queue is empty and nobody writes.
    pub(crate) fn poll_turn(&self, cx: &mut Context<'_>, ending: bool) -> Poll<bool> {
        self.turns.register_task(cx);
        let mut q = self.turns.lock();
        if ending {
            q.ending = true;
        }
        match q.owner() {
            Owner::Task => Poll::Ready(true),
            Owner::Idle if q.ending && q.content.is_empty() => Poll::Ready(false),
            _ => Poll::Pending,
        }
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use std::collections::VecDeque;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use loom::sync::Arc;

    use super::*;
    use crate::sync::{AtomicBool, Ordering};

    impl Content for VecDeque<(u8, u8)> {
        fn is_empty(&self) -> bool {
            VecDeque::is_empty(self)
        }
    }

    /// Written messages, `(sender, n)`, and a flag that catches two writers at once.
    #[derive(Default)]
    struct Wire {
        log: loom::sync::Mutex<Vec<(u8, u8)>>,
        busy: AtomicBool,
    }

    /// The owner's write: take batches until the queue is empty (then the turn is given up), or,
    /// when `stall`, write one batch and leave the rest to the task, as a stream that took only
    /// part of it does.
    fn pump(out: &OutTurns<VecDeque<(u8, u8)>>, wire: &Wire, stall: bool) -> bool {
        let mut batch = VecDeque::new();
        loop {
            if !out.take_or_release(|q| std::mem::swap(q, &mut batch), |_| ()).0 {
                return true;
            }
            assert!(!wire.busy.swap(true, Ordering::SeqCst), "two writers at once");
            wire.log.lock().unwrap().extend(batch.drain(..));
            wire.busy.store(false, Ordering::SeqCst);
            if stall {
                return false;
            }
        }
    }

    /// A sender queues `(who, n)`; inline, it may become the writer.
    fn send(out: &OutTurns<VecDeque<(u8, u8)>>, wire: &Wire, who: u8, n: u8, inline: bool, stall: bool) {
        let writer = {
            let mut q = out.lock();
            q.push_back((who, n));
            out.after_push(&mut q, inline)
        };
        match writer {
            Writer::Here => {
                if !pump(out, wire, stall) {
                    out.hand_to_task();
                }
            }
            Writer::Task => out.wake_task(),
            Writer::Owner => {}
        }
    }

    struct WriterTask {
        out: Arc<OutTurns<VecDeque<(u8, u8)>>>,
        wire: Arc<Wire>,
    }

    impl Future for WriterTask {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            loop {
                // The connection's end is set on the queue by another thread here (by the writer
                // task itself in `Drain`): `poll_turn` reads it under the lock, after registering.
                match self.out.poll_turn(cx, false) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(false) => return Poll::Ready(()),
                    Poll::Ready(true) => {
                        pump(&self.out, &self.wire, false);
                    }
                }
            }
        }
    }

    /// Two senders (`inline` and `stall` per sender) and, with `reader`, a reader that holds
    /// while it queues an answer and then releases; the connection then ends. Everything is
    /// written once, each sender's messages in order, and the writer task stops.
    fn model(senders: [(bool, bool); 2], reader: bool) {
        loom::model(move || {
            let out = Arc::new(OutTurns::new(VecDeque::new()));
            let wire = Arc::new(Wire::default());
            let task = {
                let task = WriterTask { out: out.clone(), wire: wire.clone() };
                loom::thread::spawn(move || loom::future::block_on(task))
            };
            let threads: Vec<_> = senders
                .into_iter()
                .enumerate()
                .map(|(who, (inline, stall))| {
                    let (out, wire) = (out.clone(), wire.clone());
                    loom::thread::spawn(move || {
                        for n in 0..2 {
                            send(&out, &wire, who as u8, n, inline, stall);
                        }
                    })
                })
                .collect();
            if reader {
                // Two holds in a row: a sender that looked at the word during the first may
                // exchange it during the second (and is then that hold's to write).
                for n in 0..2 {
                    out.hold();
                    if n == 0 {
                        send(&out, &wire, 9, 0, true, false);
                    }
                    if out.release(|_| ()).is_some() && !pump(&out, &wire, false) {
                        out.hand_to_task();
                    }
                }
            }
            for t in threads {
                t.join().unwrap();
            }
            out.lock().ending = true;
            out.wake_task();
            task.join().unwrap();
            let log = wire.log.lock().unwrap();
            let expected = 4 + usize::from(reader);
            assert_eq!(log.len(), expected, "every message written once: {log:?}");
            for who in 0..2u8 {
                let mine: Vec<u8> = log.iter().filter(|(w, _)| *w == who).map(|(_, n)| *n).collect();
                assert_eq!(mine, [0, 1], "in order: {log:?}");
            }
        });
    }

    #[test]
    fn loom_outbound_inline_senders() {
        model([(true, false), (true, false)], false);
    }

    #[test]
    fn loom_outbound_inline_and_task() {
        model([(true, true), (false, false)], false);
    }

    #[test]
    fn loom_outbound_reader_holds() {
        model([(true, false), (false, false)], true);
    }
}
