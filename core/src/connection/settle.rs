//! Letting a caller wait until the notifications the peer sent before its answer are handled.
//!
//! Answers go straight from the reader to the waiting call, ahead of the ordered dispatch lane,
//! so that a handler awaiting a call to the peer can never deadlock the lane. The price: when a
//! call resolves, notifications read just before its answer (an ACP agent's last
//! `session/update`s before `session/prompt` returns) may not have been handled yet.
//! [`CallOptions::after_notifications`](super::CallOptions::after_notifications) closes that gap
//! for the calls that want it: the reader stamps each answer with how many messages it had
//! handed to the lane, and the call resolves once the lane has finished that many.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::sync::lazy::OnceBox;

#[derive(Default)]
pub(crate) struct Settle {
    /// Messages the reader has handed to the dispatcher.
    enqueued: AtomicU64,
    /// Messages the dispatcher has finished with (a notification's handler completed, a
    /// request's handler started), in order.
    handled: AtomicU64,
    waiters: AtomicUsize,
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

    pub(crate) fn set_handled(&self, n: u64) {
        self.handled.store(n, Ordering::SeqCst);
        // Waking costs a lock: only when somebody waits (the SeqCst pair with `wait` makes sure
        // a waiter either sees the new count or is counted here).
        if self.waiters.load(Ordering::SeqCst) > 0
            && let Some(advanced) = self.advanced.get()
        {
            advanced.notify_waiters();
        }
    }

    /// Wait until `target` messages have been handled, or `stop` fires.
    pub(crate) async fn wait(&self, target: u64, stop: &CancellationToken) {
        if self.handled.load(Ordering::Acquire) >= target {
            return;
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let advanced = self.advanced.get_or_init(|| Box::new(Notify::new()));
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiters);
        loop {
            // Created before the check: it receives every `notify_waiters` from here on.
            let advanced = advanced.notified();
            if self.handled.load(Ordering::SeqCst) >= target {
                return;
            }
            tokio::select! {
                _ = advanced => {}
                _ = stop.cancelled() => return,
            }
        }
    }
}
