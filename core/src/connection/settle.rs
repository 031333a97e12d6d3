//! Letting a caller wait until the notifications the peer sent before its answer are handled.
//!
//! Answers go straight from the reader to the waiting call, ahead of the ordered dispatch lane,
//! so that a handler awaiting a call to the peer can never deadlock the lane. The price: when a
//! call resolves, notifications read just before its answer (an ACP agent's last
//! `session/update`s before `session/prompt` returns) may not have been handled yet.
//! [`CallOptions::after_notifications`](super::CallOptions::after_notifications) closes that gap
//! for the calls that want it: the reader stamps each answer with how many messages it had
//! handed to the lane, and the call resolves once the lane has finished that many.
//!
//! Whoever works the lane counts what it finished in `handled`; a waiter counts itself in
//! `waiters`, then looks at `handled`.
//!
//! | who | steps |
//! |---|---|
//! | the dispatcher task | stores `handled`, then adds 0 to `waiters`: wakes them if it found any ([`Settle::set_handled`]) |
//! | the reader, working the lane on the spot | stores `handled`, nothing more ([`Settle::note_handled`]) |
//! | a waiter | adds 1 to `waiters`, then loads `handled`: done, or waits to be woken |
//!
//! The task and a waiter must not both miss each other (the task sees no waiter, the waiter the
//! old count). Their adds are two read-modify-writes of one word, so one reads the other's: the
//! task finds the waiter, or the waiter's add reads the task's (release, then acquire) and its
//! load then sees the count stored before it. `loom_settle_*` below fails if the task's look is
//! a load. The reader needs no such step, one read-modify-write a message fewer on a
//! server: a waiter's target is the count the reader stamped on its answer, and the reader
//! counts each message it finishes on the spot before it reads the next frame, so before any
//! answer stamped with it. The waiter gets the answer through the pending-call table's hand-off
//! (release, then acquire), which makes that count visible to it; a message the reader did not
//! finish on the spot is the task's to count.

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::sync::lazy::OnceBox;
use crate::sync::{AtomicU64, Ordering};

#[derive(Default)]
pub(crate) struct Settle {
    /// Messages the reader has handed to the dispatcher.
    enqueued: AtomicU64,
    /// Messages the dispatcher has finished with (a notification's handler completed, a
    /// request's handler started), in order.
    handled: AtomicU64,
    waiters: AtomicU64,
    /// Made by the first waiter, before it counts itself in `waiters` (so a wake-up that sees
    /// a waiter counted finds it made); most connections never have one.
    advanced: OnceBox<Notify>,
}

impl Settle {
    pub(crate) fn enqueued(&self) -> u64 {
        self.enqueued.load(Ordering::Acquire)
    }

    /// Count one message handed to the lane (the reader's alone to call: no read-modify-write).
    pub(crate) fn on_enqueue(&self) {
        let n = self.enqueued.load(Ordering::Relaxed);
        self.enqueued.store(n + 1, Ordering::Release);
    }

    /// Count the messages up to `n` handled, from the dispatcher task: a waiter sees it now, or
    /// is woken.
    pub(crate) fn set_handled(&self, n: u64) {
        if self.store_and_look(n) {
            // Waking costs a lock: only when somebody waits.
            if let Some(advanced) = self.advanced.get() {
                advanced.notify_waiters();
            }
        }
    }

    /// Store the count, then look for waiters (see the module's table). The look is a
    /// read-modify-write that changes nothing, not a load: it and a waiter's count are then two
    /// read-modify-writes of one word, one of which reads the other's.
    fn store_and_look(&self, n: u64) -> bool {
        self.handled.store(n, Ordering::Release);
        self.waiters.fetch_add(0, Ordering::AcqRel) > 0
    }

    /// Count the messages up to `n` handled, from the reader's own steps (it works the lane on
    /// the spot, and counts before it reads on): a plain store (see the module's table).
    pub(crate) fn note_handled(&self, n: u64) {
        self.handled.store(n, Ordering::Release);
    }

    /// Count a waiter in, then look: whether `target` messages are handled already.
    fn enter(&self, target: u64) -> bool {
        self.waiters.fetch_add(1, Ordering::AcqRel);
        self.handled.load(Ordering::Acquire) >= target
    }

    /// Wait until `target` messages have been handled, or `stop` fires.
    pub(crate) async fn wait(&self, target: u64, stop: &CancellationToken) {
        if self.handled.load(Ordering::Acquire) >= target {
            return;
        }
        struct Waiting<'a>(&'a AtomicU64);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let advanced = self.advanced.get_or_init(|| Box::new(Notify::new()));
        // Created before the check: it receives every `notify_waiters` from here on.
        let notified = advanced.notified();
        tokio::pin!(notified);
        let done = self.enter(target);
        let _waiting = Waiting(&self.waiters);
        if done {
            return;
        }
        loop {
            tokio::select! {
                _ = notified.as_mut() => {}
                _ = stop.cancelled() => return,
            }
            notified.set(advanced.notified());
            if self.handled.load(Ordering::Acquire) >= target {
                return;
            }
        }
    }
}

#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use super::*;

    /// The dispatcher task counts a message handled; a waiter for that message counts itself in
    /// and looks. Either the waiter sees the count or the task finds the waiter (and wakes it):
    /// never both miss. Fails if the task's look at the waiters is a load.
    #[test]
    fn loom_settle_the_task_or_the_waiter_sees_the_other() {
        loom::model(|| {
            let settle = loom::sync::Arc::new(Settle::default());
            let task = {
                let settle = settle.clone();
                loom::thread::spawn(move || settle.store_and_look(1))
            };
            let saw = settle.enter(1);
            let told = task.join().unwrap();
            assert!(saw || told, "the waiter missed the count and the task missed the waiter");
        });
    }
}
