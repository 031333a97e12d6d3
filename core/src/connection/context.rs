//! What the layers above the connection (its features, the server) may do with it: a narrow
//! context on [`Handle`] (send, limits, quoting, the byte account of the peer's input, ending
//! it), so that none of them reaches into the connection's state.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use super::trace::Quoted;
use super::{CloseReason, Error, Handle, Limits, PeerInfo, SharedRefused, TraceContextPlacement};
use crate::handler::ReplySlot;
use crate::message::bind::Binder;

impl Handle {
    /// The connection's limits.
    pub(crate) fn limits(&self) -> &Limits {
        &self.shared.config.limits
    }

    /// Who the peer is (its transport address, its credentials), when the transport knows.
    pub(crate) fn peer_shared(&self) -> Option<Arc<PeerInfo>> {
        self.shared.peer.clone()
    }

    /// [`Handle::peer_shared`], borrowed (unknown when the transport does not know).
    pub(crate) fn peer_ref(&self) -> &PeerInfo {
        self.shared.peer.as_deref().unwrap_or(&super::UNKNOWN_PEER)
    }

    /// Where this connection's messages carry W3C trace context.
    pub(crate) fn trace_placement(&self) -> TraceContextPlacement {
        self.shared.config.trace_context
    }

    /// Quote peer input in a log line of this connection (cut and redacted like the wire log).
    pub(crate) fn quote<T: fmt::Display>(&self, value: T) -> Quoted<'_, T> {
        self.shared.quote(value)
    }

    /// What encodes a message for this connection (it tells the features of their values in it).
    pub(crate) fn binder(&self) -> &dyn Binder {
        &*self.shared
    }

    /// Queue an encoded message without waiting, for the writer task (from `Drop`); nothing
    /// happens once the connection is closed.
    pub(crate) fn send_later(&self, body: Vec<u8>) {
        let _ = self.shared.outbound.send_later(body);
    }

    /// Queue an encoded message once there is room, unless request `slot` is answered first:
    /// what is sent this way reaches the peer before that request's answer (a progress report).
    /// `Ok` without sending once the request is answered.
    pub(crate) async fn send_before_answer(&self, slot: &Arc<ReplySlot>, body: Vec<u8>) -> Result<(), Error> {
        // Answers go out without waiting (they are sent from `Drop`), so this is queued the
        // same way, while the request is known to be unanswered: the answer cannot overtake it.
        self.shared.outbound.wait_room().await;
        let shared = &self.shared;
        match shared.in_flight.while_holding(slot, || shared.outbound.send_now(body)) {
            None => Ok(()),
            Some(sent) => sent.map_err(|_| Error::ConnectionLost(shared.lost())),
        }
    }

    /// Queue one body shared with other connections (a broadcast) without waiting: `Ok(true)`
    /// when this connection is over its outbound buffer (but under `hard_max` bytes queued).
    pub(crate) fn send_shared(&self, body: &Bytes, hard_max: usize) -> Result<bool, SharedRefused> {
        self.shared.outbound.send_shared(body, hard_max)
    }

    /// Resolves once what is queued is within the outbound buffer again.
    pub(crate) async fn wait_within_budget(&self) {
        self.shared.outbound.wait_within_budget().await
    }

    /// Our call `id` is given up or was never sent: what its params carried is released.
    pub(crate) fn release_call(&self, id: u64) {
        self.shared.release_call(id)
    }

    /// `bytes` of the peer's input held for a feature were taken (see
    /// [`Link::release_inbound`](super::Link::release_inbound)).
    pub(crate) fn release_inbound(&self, bytes: usize) {
        self.shared.release_inbound(bytes)
    }

    /// End the connection with `reason` (the first reason wins).
    pub(crate) fn close_with(&self, reason: CloseReason) {
        self.shared.close(reason)
    }
}

/// What a transport that watches the connection from outside (a child process's watcher) may
/// ask of it, so that it does not reach into the connection's parts.
impl super::shared::Shared {
    /// Fires once the connection stops (closing, or draining after the peer's EOF).
    #[cfg_attr(not(feature = "process"), allow(dead_code))]
    pub(crate) fn stopped_signal(&self) -> super::lifecycle::Signal<'_> {
        self.lifecycle.stopped()
    }

    /// Fires once the writer is done: nothing more can be sent.
    #[cfg_attr(not(feature = "process"), allow(dead_code))]
    pub(crate) fn finished_signal(&self) -> super::lifecycle::Signal<'_> {
        self.lifecycle.finished()
    }

    /// The longest the drain after a stop may take before the write side is shut (the EOF
    /// grace plus the flush timeout).
    #[cfg_attr(not(feature = "process"), allow(dead_code))]
    pub(crate) fn drain_bound(&self) -> std::time::Duration {
        self.config.eof_grace + self.config.flush_timeout
    }
}
