//! The connection's lifecycle: one state machine, where there were five flags (`closing`,
//! `handlers_cancelled`, `shutdown`, `handlers`, `finished`).
//!
//! | state | how it is reached | the reader | the handlers | the writer |
//! |---|---|---|---|---|
//! | `Open` | the start | reads | run | writes |
//! | `Draining` | [`Lifecycle::peer_ended`]: the peer's clean EOF | stopped | run: what was read is still dispatched and answered | writes |
//! | `Closing` | [`Lifecycle::close`] (any other end), or [`Lifecycle::grace_over`] (the EOF grace is over) | stopped | cancelled | flushes what is queued, within the flush timeout |
//! | `Finished` | [`Lifecycle::finish`]: the writer is done, the write side shut (or given up on) | stopped | cancelled | done |
//!
//! Transitions only go forward (`Open → Draining → Closing → Finished`, any step may be
//! skipped), one method each; a transition to a state already passed does nothing. Each fires
//! the tokens of the states it enters, in order: leaving `Open` fires [`Lifecycle::stopped`]
//! and wakes the reader; reaching `Closing` fires [`Lifecycle::handlers`] (the parent of every
//! inbound request's token) first; reaching `Finished` fires [`Lifecycle::finished`]. The state
//! is stored before any token fires, so whoever a token wakes sees the state it announces. The
//! reader's and the responders' checks are one atomic load.
//!
//! What an idle connection holds of it is small (every connection holds one for its life): the
//! two signals are the state itself and one shared wake-up ([`Signal`]: a waiter checks the
//! state it waits for), and the handlers' token is made when first asked for (a request that
//! wants its cancellation token, the dispatcher task), or at the close, to be cancelled.
//!
//! Who ends the connection, and with which reason, is [`Shared::close`](super::shared::Shared)'s
//! (the first reason wins); this machine only says what runs.

use std::sync::OnceLock;
use std::task::Waker;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::sync::{AtomicU8, AtomicWaker, Ordering};

const OPEN: u8 = 0;
const DRAINING: u8 = 1;
const CLOSING: u8 = 2;
const FINISHED: u8 = 3;

pub(crate) struct Lifecycle {
    state: AtomicU8,
    /// Parent of every inbound request's token; also stops the dispatcher. Fires on `Closing`.
    /// Made when first asked for (see [`Lifecycle::handlers`]): a connection whose handlers never
    /// asked for a token holds none until its close.
    handlers: OnceLock<CancellationToken>,
    /// Woken on every state entered (for [`Signal`]s), and by [`Lifecycle::wake_waiters`] (the
    /// close reason, see [`Shared::closed`](super::shared::Shared)): every waiter checks what it
    /// waits for after registering, so one wake-up serves them all.
    changed: Notify,
    /// The reader, woken on leaving `Open`.
    reader: AtomicWaker,
}

impl Lifecycle {
    pub(crate) fn new() -> Self {
        Lifecycle {
            state: AtomicU8::new(OPEN),
            handlers: OnceLock::new(),
            changed: Notify::new(),
            reader: AtomicWaker::new(),
        }
    }

    /// Move to `to` unless it was reached already; the state before.
    fn advance(&self, to: u8) -> u8 {
        self.state.fetch_max(to, Ordering::SeqCst)
    }

    /// Fire what entering the states after `from` up to `to` fires, in order.
    fn entered(&self, from: u8, to: u8) {
        if from < CLOSING && to >= CLOSING {
            // Made here if nobody asked for it yet (a maker racing this close either sees the
            // state and cancels its token itself, or this waits for it and cancels it).
            self.handlers().cancel();
        }
        if from < DRAINING && to >= DRAINING {
            self.reader.wake();
        }
        if from < to {
            // The state is stored (`advance`): whoever this wakes sees every state it entered.
            self.changed.notify_waiters();
        }
    }

    /// `Open → Draining`: the peer closed its sending side cleanly; stop reading, let the
    /// handlers of what was read run on.
    pub(crate) fn peer_ended(&self) {
        let from = self.advance(DRAINING);
        self.entered(from, DRAINING);
    }

    /// `Open | Draining → Closing`: the connection ended; stop reading and cancel the handlers.
    pub(crate) fn close(&self) {
        let from = self.advance(CLOSING);
        self.entered(from, CLOSING);
    }

    /// `Draining → Closing`: the grace after the peer's EOF is over; cancel the handlers still
    /// running.
    pub(crate) fn grace_over(&self) {
        self.close();
    }

    /// `→ Finished`: the writer is done; nothing more can be sent, so nothing runs any more.
    pub(crate) fn finish(&self) {
        let from = self.advance(FINISHED);
        self.entered(from, FINISHED);
    }

    /// Not `Open` any more: the reader stops.
    pub(crate) fn is_stopped(&self) -> bool {
        self.state.load(Ordering::SeqCst) >= DRAINING
    }

    /// `Closing` or later: the handlers are cancelled.
    pub(crate) fn handlers_cancelled(&self) -> bool {
        self.state.load(Ordering::SeqCst) >= CLOSING
    }

    /// Fires on `Closing`: the parent of every inbound request's token. Made on first use,
    /// cancelled at once if the connection is closing already.
    pub(crate) fn handlers(&self) -> &CancellationToken {
        self.handlers.get_or_init(|| {
            let token = CancellationToken::new();
            // After the close's state store, a close that found no token waits for this one.
            if self.handlers_cancelled() {
                token.cancel();
            }
            token
        })
    }

    /// Fires on leaving `Open`.
    pub(crate) fn stopped(&self) -> Signal<'_> {
        Signal { lifecycle: self, state: DRAINING }
    }

    /// Fires on `Finished` ([`Connection::close`](super::Connection::close) and a child
    /// process's reaper wait for it).
    pub(crate) fn finished(&self) -> Signal<'_> {
        Signal { lifecycle: self, state: FINISHED }
    }

    /// Wake every waiter of a [`Signal`] (and of the close reason), to check again what it waits
    /// for.
    pub(crate) fn wake_waiters(&self) {
        self.changed.notify_waiters();
    }

    /// What [`Lifecycle::wake_waiters`] and every state entered wake: create (or `enable`) it
    /// before checking what it waits for.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// The reader's task, to wake when the connection stops (register before checking
    /// [`Lifecycle::is_stopped`]).
    pub(crate) fn register_reader(&self, waker: &Waker) {
        self.reader.register(waker);
    }
}

/// A state the lifecycle has entered, for whoever waits for it: what a [`CancellationToken`]
/// does here, without its allocation, and without a wake-up of its own (the state is the
/// lifecycle's, the wake-up the one every state entered fires).
#[derive(Clone, Copy)]
pub(crate) struct Signal<'a> {
    lifecycle: &'a Lifecycle,
    state: u8,
}

impl<'a> Signal<'a> {
    /// Whether the state was entered.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.lifecycle.state.load(Ordering::SeqCst) >= self.state
    }

    /// Resolves once the state is entered.
    pub(crate) async fn cancelled(self) {
        loop {
            // Created before the check: a state entered from here on wakes it (the state is
            // stored before the wake-up, both `SeqCst`).
            let changed = self.lifecycle.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            changed.await;
        }
    }
}

#[cfg(all(test, not(jsonrpc_duplex_loom)))]
mod tests {
    use super::*;

    fn fired(l: &Lifecycle) -> (bool, bool, bool) {
        (l.stopped().is_cancelled(), l.handlers().is_cancelled(), l.finished().is_cancelled())
    }

    #[test]
    fn the_peers_eof_stops_reading_and_lets_the_handlers_run_until_the_grace_is_over() {
        let l = Lifecycle::new();
        assert!(!l.is_stopped() && !l.handlers_cancelled());
        l.peer_ended();
        assert!(l.is_stopped() && !l.handlers_cancelled());
        assert_eq!(fired(&l), (true, false, false));
        l.grace_over();
        assert_eq!(fired(&l), (true, true, false));
        l.finish();
        assert_eq!(fired(&l), (true, true, true));
    }

    #[test]
    fn a_handlers_token_asked_for_after_the_close_is_cancelled_and_one_made_before_is_cancelled_by_it() {
        let l = Lifecycle::new();
        l.close();
        assert!(l.handlers().is_cancelled(), "made after the close");
        let l = Lifecycle::new();
        let token = l.handlers().clone();
        assert!(!token.is_cancelled());
        l.peer_ended();
        assert!(!token.is_cancelled(), "the peer's EOF lets the handlers run");
        l.grace_over();
        assert!(token.is_cancelled(), "made before the close");
    }

    /// The two signals share one wake-up: each waiter is woken by its own state and by no
    /// earlier one.
    #[tokio::test]
    async fn each_signals_waiter_is_woken_by_its_state() {
        use std::time::Duration;
        let l = std::sync::Arc::new(Lifecycle::new());
        let stopped = tokio::spawn({
            let l = l.clone();
            async move { l.stopped().cancelled().await }
        });
        let finished = tokio::spawn({
            let l = l.clone();
            async move { l.finished().cancelled().await }
        });
        tokio::task::yield_now().await;
        l.close();
        tokio::time::timeout(Duration::from_secs(5), stopped).await.expect("woken by the close").unwrap();
        assert!(!finished.is_finished() && !l.finished().is_cancelled());
        l.finish();
        tokio::time::timeout(Duration::from_secs(5), finished).await.expect("woken by the finish").unwrap();
    }

    #[test]
    fn transitions_only_go_forward() {
        let l = Lifecycle::new();
        l.close();
        assert_eq!(fired(&l), (true, true, false));
        l.peer_ended();
        assert!(l.handlers_cancelled(), "an EOF after the end changes nothing");
        let l = Lifecycle::new();
        l.finish();
        assert_eq!(fired(&l), (true, true, true), "finishing fires every state it skips");
        l.close();
        assert_eq!(l.state.load(Ordering::SeqCst), FINISHED);
    }
}

/// The reader's stop, every interleaving (`scripts/loom.sh`): the reader registers and checks
/// between messages while another task ends the connection; it is always woken (loom fails a
/// model whose threads all block) and sees the state the end announced.
#[cfg(all(test, jsonrpc_duplex_loom))]
mod loom_tests {
    use std::sync::Arc;
    use std::task::Poll;

    use super::*;

    fn model(end: fn(&Lifecycle)) {
        loom::model(move || {
            let l = Arc::new(Lifecycle::new());
            let ender = {
                let l = l.clone();
                loom::thread::spawn(move || end(&l))
            };
            loom::future::block_on(std::future::poll_fn(|cx| {
                l.register_reader(cx.waker());
                if l.is_stopped() { Poll::Ready(()) } else { Poll::Pending }
            }));
            ender.join().unwrap();
            assert!(l.is_stopped());
        });
    }

    #[test]
    fn loom_lifecycle_the_reader_is_woken_by_the_end() {
        model(Lifecycle::close);
    }

    #[test]
    fn loom_lifecycle_the_reader_is_woken_by_the_peers_eof() {
        model(Lifecycle::peer_ended);
    }
}
