//! What the layers above the connection (its features, the server) may do with it: a narrow
//! context on [`Handle`] (send, limits, quoting, the byte account of the peer's input, ending
//! it), so that none of them reaches into the connection's state.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use super::trace::Quoted;
use super::{CloseReason, Error, Handle, Limits, SharedRefused};
use crate::handler::ReplySlot;
use crate::message::bind::Binder;

impl Handle {
    /// The connection's limits.
    pub(crate) fn limits(&self) -> &Limits {
        &self.shared.config.limits
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
