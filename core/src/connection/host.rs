//! The connection as the inbound seam sees it ([`Host`]), and the handles handlers get from
//! what they receive: the connection implements the seam's trait, and gives its types the way
//! back to a [`Handle`].

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Handle;
use super::shared::Shared;
use crate::handler::{Host, Notification, NotificationContext, ReplySlot, Request, RequestContext};

impl Host for Shared {
    fn locals(&self) -> &crate::handler::Locals {
        &self.locals
    }

    fn enter(&self, slot: &Arc<ReplySlot>) {
        self.in_flight.enter(slot);
    }

    fn leave(&self, slot: &ReplySlot) {
        self.in_flight.leave(slot);
    }

    fn in_flight(&self, slot: &Arc<ReplySlot>) -> bool {
        self.in_flight.holds(slot)
    }

    fn handlers(&self) -> &CancellationToken {
        self.lifecycle.handlers()
    }

    fn handlers_cancelled(&self) -> bool {
        Shared::handlers_cancelled(self)
    }

    fn answers_cancelled(&self) -> bool {
        self.config.cancel.answers_cancelled
    }

    fn max_message_size(&self) -> usize {
        self.config.limits.frame.max_message_size
    }

    fn send_answer(&self, body: Vec<u8>, later: bool) {
        let _ = if later { self.outbound.send_later(body) } else { self.outbound.send_now(body) };
    }

    fn quote(&self, value: &dyn fmt::Display) -> String {
        self.quote(value).to_string()
    }

    fn handle(self: Arc<Self>, lane: Option<u64>) -> Handle {
        Handle { shared: self, lane_seq: lane }
    }
}

impl Handle {
    /// The handle of the connection that read a request or notification, as given to the
    /// handler of the lane's message `lane`, if any (a request served with no connection, in
    /// `direct.rs`, gives the ended connection it stands for).
    pub(crate) fn of_host(host: &Arc<dyn Host>, lane: Option<u64>) -> Handle {
        host.clone().handle(lane)
    }
}

impl Request {
    /// A handle to call the peer back.
    pub fn peer(&self) -> Handle {
        Handle::of_host(&self.slot.host, self.slot.lane)
    }
}

impl crate::handler::RequestStart<'_> {
    /// A handle to call the peer back.
    pub fn peer(&self) -> Handle {
        Handle::of_host(&self.slot.host, self.slot.lane)
    }
}

impl RequestContext {
    /// A handle to call the peer back.
    pub fn peer(&self) -> Handle {
        Handle::of_host(&self.slot().host, self.slot().lane)
    }
}

impl Notification {
    /// A handle to call the peer back. Its calls made
    /// [`after_notifications`](crate::CallOptions::after_notifications) wait only for the
    /// notifications before this one (which is being handled on the ordered lane).
    pub fn peer(&self) -> Handle {
        Handle::of_host(&self.host, self.lane)
    }
}

impl NotificationContext {
    /// A handle to call the peer back (see [`Notification::peer`]).
    pub fn peer(&self) -> Handle {
        Handle::of_host(&self.host, self.lane)
    }
}
