//! The ordered inbound lane's hand-off between the reader and the dispatcher task, written as a
//! state machine over [`Turns`] (see [`crate::sync::turns`] for the idiom and its rules).
//!
//! The reader is the lane's only producer. While the lane is free it dispatches what it reads
//! itself, on the spot; what cannot finish without waiting (a notification handler still
//! running, a request that must wait for a slot) goes to the dispatcher task with the lane, and
//! what the reader reads meanwhile queues behind it, in order.
//!
//! | state | the lane |
//! |---|---|
//! | `Idle` | free: the reader takes the next message itself |
//! | `Here` | the reader dispatches the message it just read |
//! | `Task` | the dispatcher task works it: first `current` (a handler the reader started), then `items` in order |
//! | closed (a flag, final) | the task has stopped: nothing is dispatched any more |
//!
//! | transition | method | lock |
//! |---|---|---|
//! | `Idle` → `Here` | [`LaneTurns::offer`] returns [`Offered::Here`], or [`LaneTurns::try_here`] `true` | no (a load and a store: only the reader moves the lane out of `Idle`) |
//! | `Here` → `Idle` | [`LaneTurns::done_here`] | no (only the reader queues, and it was busy) |
//! | `Here` → `Task` | [`LaneTurns::hand_off`], its work first in line | yes |
//! | `Task` stays, item queued | [`LaneTurns::offer`] returns [`Offered::Queued`] | yes (and if the lock shows `Idle`, the task just let go: offer again) |
//! | `Task` → `Idle` | [`LaneTurns::next`] finds nothing queued | yes |
//! | any → closed | [`LaneTurns::close`] hands back what never started | yes |
//!
//! What this guarantees (checked by `loom_lane_*` below): every offered item is worked exactly
//! once or handed back by `close`, in the order offered, and never two at a time.

use std::collections::VecDeque;
use std::task::{Context, Poll};

use crate::sync::turns::{Owner, Turns};
use crate::sync::{AtomicBool, Ordering};

struct LaneQueue<T, J> {
    items: VecDeque<T>,
    /// Work the reader started and could not finish: the task's first job.
    current: Option<J>,
    /// The reader has stopped: nothing more will be offered.
    input_ended: bool,
}

/// The lane's queue and turns; `T` is a message, `J` a started job (a running handler).
pub(crate) struct LaneTurns<T, J> {
    turns: Turns<LaneQueue<T, J>>,
    /// The task has stopped (set under the lock).
    closed: AtomicBool,
}

/// What became of an offered item.
pub(crate) enum Offered<T> {
    /// The lane was free: the caller owns it and works `T` now, then calls
    /// [`LaneTurns::done_here`] or [`LaneTurns::hand_off`].
    Here(T),
    /// Queued behind the task's work.
    Queued,
    /// The lane is closed: nobody will take it.
    Closed(T),
}

/// What the reader hands to the task with the lane.
pub(crate) enum Handoff<T, J> {
    /// A job it started that is still running: the task finishes it first.
    Running(J),
    /// A message it could not start: the task takes it first.
    Blocked(T),
}

impl<T, J> LaneTurns<T, J> {
    pub(crate) fn new() -> Self {
        LaneTurns {
            turns: Turns::new(LaneQueue { items: VecDeque::new(), current: None, input_ended: false }),
            closed: AtomicBool::new(false),
        }
    }

    /// The reader takes the free lane without offering anything (`Idle` → `Here`, what
    /// [`LaneTurns::offer`] tries first): `false` when it is closed or the task works it (then
    /// offer the item).
    #[inline(always)]
    pub(crate) fn try_here(&self) -> bool {
        !self.closed.load(Ordering::Acquire) && self.turns.try_here()
    }

    /// The reader offers `item`, made a `T` by `queue` only if it is queued (a message that
    /// borrows the reader's buffer while the reader works it on the spot). `on_queue` runs under
    /// the lock for an item queued behind the task (so that the task cannot take it before it is
    /// accounted for).
    #[inline(always)]
    pub(crate) fn offer<U>(&self, item: U, queue: impl FnOnce(U) -> T, on_queue: impl FnOnce(&T)) -> Offered<U> {
        loop {
            // `try_here`'s two steps, the flag read once.
            if self.closed.load(Ordering::Acquire) {
                return Offered::Closed(item);
            }
            if self.turns.try_here() {
                return Offered::Here(item);
            }
            let mut q = self.turns.lock();
            if self.closed.load(Ordering::Acquire) {
                // Checked under the lock: `close` takes everything queued before it.
                return Offered::Closed(item);
            }
            if q.owner() == Owner::Idle {
                // The task let go between the look and the lock.
                continue;
            }
            let item = queue(item);
            on_queue(&item);
            q.items.push_back(item);
            return Offered::Queued;
        }
    }

    /// The reader finished its item on the spot: `Here` → `Idle`.
    pub(crate) fn done_here(&self) {
        self.turns.leave_here();
    }

    /// The reader could not finish: `Here` → `Task`, with `handoff` first in line. `on_requeue`
    /// runs under the lock for a blocked item. `Err` gives the work back if the lane closed
    /// meanwhile (and leaves the lane `Idle`).
    pub(crate) fn hand_off(&self, handoff: Handoff<T, J>, on_requeue: impl FnOnce(&T)) -> Result<(), Handoff<T, J>> {
        let mut q = self.turns.lock();
        if self.closed.load(Ordering::Acquire) {
            q.let_go();
            return Err(handoff);
        }
        match handoff {
            Handoff::Running(job) => q.current = Some(job),
            Handoff::Blocked(item) => {
                on_requeue(&item);
                q.items.push_front(item);
            }
        }
        q.pass_to_task();
        drop(q);
        self.turns.wake_task();
        Ok(())
    }

    /// Somebody works the lane (a running job, or messages queued behind it), as of now.
    pub(crate) fn is_busy(&self) -> bool {
        self.turns.owner() != Owner::Idle
    }

    /// The reader has stopped offering.
    pub(crate) fn input_ended(&self) {
        self.turns.lock().input_ended = true;
        self.turns.wake_task();
    }

    /// The task's turn: `Ready(true)` once it owns the lane, `Ready(false)` once the reader has
    /// stopped and the lane is free (everything offered is done).
    pub(crate) fn poll_turn(&self, cx: &mut Context<'_>) -> Poll<bool> {
        self.turns.register_task(cx);
        let q = self.turns.lock();
        match q.owner() {
            Owner::Task => Poll::Ready(true),
            Owner::Idle if q.input_ended => Poll::Ready(false),
            _ => Poll::Pending,
        }
    }

    /// The job the reader handed over with the lane, if any (the task's first work).
    pub(crate) fn take_current(&self) -> Option<J> {
        self.turns.lock().current.take()
    }

    /// The task's next item; `None` gives the lane back (`Task` → `Idle`).
    pub(crate) fn next(&self) -> Option<T> {
        let mut q = self.turns.lock();
        let item = q.items.pop_front();
        if item.is_none() {
            q.let_go();
        }
        item
    }

    /// The task stops: nothing is dispatched any more. Returns what never started (the running
    /// job, if any, is dropped here, outside the lock).
    pub(crate) fn close(&self) -> VecDeque<T> {
        let (current, items) = {
            let mut q = self.turns.lock();
            self.closed.store(true, Ordering::Release);
            (q.current.take(), std::mem::take(&mut q.items))
        };
        drop(current);
        items
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use loom::sync::Arc;

    use super::*;

    /// The reader offers `n` items; it finishes some on the spot and hands others (as a running
    /// job or a blocked item) to the task, which runs concurrently. Every item is worked once,
    /// in order, never two at a time.
    fn model(n: u32, hand_off: fn(u32) -> Option<bool>) {
        loom::model(move || {
            let lane = Arc::new(LaneTurns::<u32, u32>::new());
            let log = Arc::new(loom::sync::Mutex::new(Vec::new()));
            let busy = Arc::new(AtomicBool::new(false));
            let work = {
                let (log, busy) = (log.clone(), busy.clone());
                move |item: u32| {
                    assert!(!busy.swap(true, Ordering::SeqCst), "two workers at once");
                    log.lock().unwrap().push(item);
                    busy.store(false, Ordering::SeqCst);
                }
            };
            let task = {
                let (lane, work) = (lane.clone(), work.clone());
                loom::thread::spawn(move || {
                    loom::future::block_on(TaskLoop { lane, work: Box::new(work) });
                })
            };
            for item in 0..n {
                match lane.offer(item, |item| item, |_| {}) {
                    Offered::Here(item) => match hand_off(item) {
                        None => {
                            work(item);
                            lane.done_here();
                        }
                        Some(true) => {
                            // Started here, finished by the task (a running notification job).
                            assert!(lane.hand_off(Handoff::Running(item), |_| {}).is_ok());
                        }
                        Some(false) => assert!(lane.hand_off(Handoff::Blocked(item), |_| {}).is_ok()),
                    },
                    Offered::Queued => {}
                    Offered::Closed(_) => unreachable!("nobody closes in this model"),
                }
            }
            lane.input_ended();
            task.join().unwrap();
            let log = log.lock().unwrap();
            assert_eq!(*log, (0..n).collect::<Vec<_>>());
        });
    }

    /// The dispatcher task's loop, as `Lane::run` has it.
    struct TaskLoop {
        lane: Arc<LaneTurns<u32, u32>>,
        work: Box<dyn Fn(u32)>,
    }

    impl Future for TaskLoop {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            loop {
                match self.lane.poll_turn(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(false) => return Poll::Ready(()),
                    Poll::Ready(true) => {}
                }
                if let Some(job) = self.lane.take_current() {
                    (self.work)(job);
                }
                while let Some(item) = self.lane.next() {
                    (self.work)(item);
                }
            }
        }
    }

    #[test]
    fn loom_lane_all_on_the_spot() {
        model(3, |_| None);
    }

    #[test]
    fn loom_lane_running_job_then_queue() {
        model(3, |i| (i == 0).then_some(true));
    }

    #[test]
    fn loom_lane_blocked_item_then_queue() {
        model(3, |i| (i == 0).then_some(false));
    }

    #[test]
    fn loom_lane_mixed() {
        model(3, |i| match i {
            1 => Some(true),
            2 => Some(false),
            _ => None,
        });
    }
}
