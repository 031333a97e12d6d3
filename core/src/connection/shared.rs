//! State shared by the handle, the reader, the dispatcher, the writer and reply handles.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::config::Config;
use super::in_flight::InFlight;
use super::lifecycle::Lifecycle;
use super::outbound::Outbound;
use super::pending::Pending;
use super::read_ahead::ReadAhead;
use super::seam::Unbound;
use super::trace::Quoted;
use super::{ChildExit, CloseKind, CloseReason};

pub(crate) struct Shared {
    /// Shared with the builder it came from (and the other connections it started).
    pub(crate) config: Arc<Config>,
    /// Who the peer is, as the transport told (`None`: it said nothing).
    pub(crate) peer: Option<Arc<super::PeerInfo>>,
    pub(crate) next_id: AtomicU64,
    pub(crate) pending: Pending,
    pub(crate) outbound: Outbound,
    /// The features plugged into this connection (streams, progress) and what it keeps for them.
    pub(crate) seam: super::seam::Seam,
    /// The peer's requests not answered yet, by their ids (for cancellation).
    pub(crate) in_flight: InFlight,
    /// Values the features made that wait to be bound to a message (see [`Unbound`]): read as
    /// each message is encoded, so kept here, not in an allocation of its own.
    pub(crate) unbound: Unbound,
    /// What runs: the reader, the handlers, the writer (one state machine, see
    /// [`Lifecycle`]).
    pub(crate) lifecycle: Lifecycle,
    /// How far the reader has read ahead of dispatch, in messages and bytes.
    pub(crate) read_ahead: ReadAhead,
    /// How far the dispatcher has got, for calls that wait for the notifications before their answer.
    pub(crate) settle: super::settle::Settle,
    /// Why the connection ended, once it has (the first reason wins). A lock and the
    /// lifecycle's wake-up ([`Lifecycle::wake_waiters`], woken once it is set), not a watch
    /// channel: every connection holds one, and this costs no allocation and no `Notify` of its
    /// own. Boxed: 64 bytes for the rest of the connection's life were paid by every connection
    /// for a value made only at its end.
    reason: crate::sync::Mutex<Option<Box<CloseReason>>>,
    /// How the child process ended, once known (a child process transport only).
    child_exit: OnceLock<Box<ChildExit>>,
    /// What a detached connection's owner keeps until the connection has finished
    /// ([`Connection::detach`](super::Connection)).
    kept: crate::sync::Mutex<Option<Box<dyn Send>>>,
    /// What the connection keeps for its handlers (see [`crate::handler::Locals`]).
    pub(crate) locals: crate::handler::Locals,
}

impl Shared {
    pub(crate) fn new(
        config: Arc<Config>,
        peer: Option<Arc<super::PeerInfo>>,
        outbound: Outbound,
        seam: super::seam::Seam,
    ) -> Self {
        let pending = Pending::new(config.limits.max_pending_calls);
        Shared {
            config,
            peer,
            next_id: AtomicU64::new(0),
            pending,
            outbound,
            seam,
            in_flight: InFlight::default(),
            unbound: Unbound::default(),
            lifecycle: Lifecycle::new(),
            read_ahead: ReadAhead::default(),
            settle: Default::default(),
            reason: crate::sync::Mutex::new(None),
            child_exit: OnceLock::new(),
            kept: crate::sync::Mutex::new(None),
            locals: Default::default(),
        }
    }

    /// End the connection (the first reason wins): fail pending calls, cancel handlers, stop
    /// reading, and let the writer flush what is queued.
    pub(crate) fn close(&self, reason: CloseReason) {
        self.close_with(reason, false);
    }

    /// The peer closed its sending side cleanly (EOF between messages): fail pending calls (no
    /// answer can come any more) and stop reading, but let the messages already read be
    /// dispatched and the requests among them answered, as a peer that half-closes its stream
    /// (`printf '…' | server`) expects. The writer ends the drain: handlers still running after
    /// the EOF grace are cancelled, and what is queued then gets the flush timeout.
    pub(crate) fn close_after_eof(&self, reason: CloseReason) {
        self.close_with(reason, true);
    }

    /// The writer is done: nothing more can be sent, so stop everything still running.
    pub(crate) fn finish(&self) {
        self.outbound.finish();
        self.lifecycle.finish();
        self.read_ahead.space().notify_waiters();
        // Taken after the state says finished: one kept from here on is dropped at once.
        let kept = crate::sync::lock(&self.kept).take();
        drop(kept);
    }

    /// Hold `keep` until the connection has finished, then drop it (at once if it has).
    pub(crate) fn keep_until_finished(&self, keep: Box<dyn Send>) {
        let mut kept = crate::sync::lock(&self.kept);
        if self.lifecycle.finished().is_cancelled() {
            drop(kept);
            drop(keep);
        } else {
            *kept = Some(keep);
        }
    }

    fn close_with(&self, reason: CloseReason, drain: bool) {
        let reason = {
            let mut r = crate::sync::lock(&self.reason);
            if r.is_some() {
                return;
            }
            // Under the lock: a child's exit noted meanwhile is in this reason or amends it.
            let reason = match self.child_exit.get() {
                Some(exit) => reason.with_child(ChildExit::clone(exit)),
                None => reason,
            };
            *r = Some(Box::new(reason.clone()));
            reason
        };
        // Set under the lock, which `closed` checks after registering.
        self.lifecycle.wake_waiters();
        match reason.kind {
            CloseKind::LocallyClosed | CloseKind::RemoteClosed => {
                tracing::debug!(target: crate::LOG_TARGET, %reason, "connection closed")
            }
            _ => {
                tracing::warn!(target: crate::LOG_TARGET, reason = %self.quote(&reason), "connection closed")
            }
        }
        self.pending.close(&reason);
        // No `next` or progress report can arrive any more (after an EOF neither).
        self.seam.close(&reason);
        if drain {
            self.lifecycle.peer_ended();
        } else {
            self.outbound.close();
            self.lifecycle.close();
        }
        self.read_ahead.space().notify_waiters();
        // The writer flushes what is queued and shuts the write side (it may not run yet).
        self.outbound.start_writer();
    }

    /// The child process behind the connection has ended: the reason says how, from now on (and
    /// the one already given, for whoever reads it after this).
    #[cfg_attr(not(feature = "process"), allow(dead_code))]
    pub(crate) fn note_child_exit(&self, exit: ChildExit) {
        if self.child_exit.set(Box::new(exit.clone())).is_err() {
            return;
        }
        let mut r = crate::sync::lock(&self.reason);
        if let Some(reason) = r.take() {
            *r = Some(Box::new((*reason).with_child(exit)));
        }
    }

    /// The connection is closing: the reader stops.
    pub(crate) fn is_closing(&self) -> bool {
        self.lifecycle.is_stopped()
    }

    /// The handlers' token is cancelled (the connection ended).
    pub(crate) fn handlers_cancelled(&self) -> bool {
        self.lifecycle.handlers_cancelled()
    }

    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        crate::sync::lock(&self.reason).as_deref().cloned()
    }

    /// The reason, or a generic one if the connection is somehow not marked closed yet.
    pub(crate) fn lost(&self) -> CloseReason {
        self.close_reason()
            .unwrap_or_else(|| CloseReason::new(CloseKind::FatalError, "the connection's writer is gone"))
    }

    pub(crate) async fn closed(&self) -> CloseReason {
        loop {
            // Registered before the check: a reason set from here on wakes it.
            let set = self.lifecycle.changed();
            tokio::pin!(set);
            set.as_mut().enable();
            if let Some(r) = self.close_reason() {
                return r;
            }
            set.await;
        }
    }

    /// Our request `id` is given up or was never sent: what its params carried is released (the
    /// streams offered in them end, the receivers of the progress tokens in them stop).
    pub(crate) fn release_call(&self, id: u64) {
        self.seam.release_call(id, super::seam::Phase::BeforeAnswer);
        self.seam.release_call(id, super::seam::Phase::AfterAnswer);
    }

    /// `bytes` of the peer's input are held until dispatch or a progress receiver takes them.
    pub(crate) fn hold_inbound(&self, bytes: usize) {
        self.read_ahead.hold(bytes);
    }

    /// `bytes` held by [`Shared::hold_inbound`] were taken: a reader paused on the byte
    /// read-ahead may go on.
    pub(crate) fn release_inbound(&self, bytes: usize) {
        self.read_ahead.release(bytes, self.config.limits.read_ahead_bytes.max(1));
    }

    /// The reader has read as far ahead of dispatch as it may without a reason to read on (in
    /// messages or in bytes).
    pub(crate) fn read_ahead_full(&self) -> bool {
        self.read_ahead.full(&self.config.limits)
    }

    /// Quote peer input in a log line of this connection (see [`Tracer::quote`](super::trace::Tracer::quote)).
    pub(crate) fn quote<T: std::fmt::Display>(&self, value: T) -> Quoted<'_, T> {
        self.outbound.tracer.quote(value)
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// Every message this connection encodes tells its extensions of their values in it (see
/// [`crate::message::bind`]).
impl crate::message::bind::Binder for Shared {
    fn armed(&self) -> bool {
        self.unbound.any()
    }

    fn bind(&self, found: crate::message::bind::Found, target: crate::message::bind::Target) -> Result<(), String> {
        self.seam.bind(found, target)
    }
}

#[cfg(test)]
mod tests {
    /// Every connection holds one `Shared` for its whole life: what only a full budget, a full
    /// call table, a caller that gives up, a paused reader or the connection's end needs is made
    /// on first use, not held inline (1,336 bytes when it was, 1,080 with the wake-ups of the
    /// lifecycle, the close reason, the drained answers, the call table and the settle count
    /// inline, 856 with the maps of requests in flight and of tokens bound to calls; the heap
    /// figure of `benches/tests/idle_memory.rs` is too noisy to tell 160 bytes apart).
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn an_idle_connections_shared_state_holds_no_waits_inline() {
        let size = std::mem::size_of::<super::Shared>();
        assert!(size <= 768, "Shared is {size} bytes");
        let outbound = std::mem::size_of::<super::Outbound>();
        assert!(outbound <= 312, "Outbound is {outbound} bytes");
        let pending = std::mem::size_of::<super::Pending>();
        assert!(pending <= 96, "Pending is {pending} bytes");
        let lifecycle = std::mem::size_of::<super::Lifecycle>();
        assert!(lifecycle <= 80, "Lifecycle is {lifecycle} bytes");
    }
}
