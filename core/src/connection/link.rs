//! The connection as its extensions see it: [`Link`], implemented by the connection's shared
//! state behind its `Arc` (so that it can hand out its [`Handle`]).

use std::fmt;
use std::sync::Arc;

use super::seam::{Cancelled, Link, Sealed};
use super::shared::Shared;
use super::{CloseReason, Handle, Limits};
use crate::message::Id;

impl Sealed for Arc<Shared> {}

impl Link for Arc<Shared> {
    fn limits(&self) -> &Limits {
        &self.config.limits
    }

    fn quote(&self, value: &dyn fmt::Display) -> String {
        Shared::quote(self, value).to_string()
    }

    fn hold_inbound(&self, bytes: usize) {
        Shared::hold_inbound(self, bytes)
    }

    fn release_inbound(&self, bytes: usize) {
        Shared::release_inbound(self, bytes)
    }

    fn cancel_request(&self, id: &Id, reason: Option<String>) -> Cancelled {
        match self.in_flight.get(id) {
            Some(slot) if slot.never_cancelled() => Cancelled::Forbidden,
            Some(slot) => {
                slot.cancel_by_peer(reason);
                Cancelled::Cancelled
            }
            None => Cancelled::NotInFlight,
        }
    }

    fn close(&self, reason: CloseReason) {
        Shared::close(self, reason)
    }

    fn handle(&self) -> Handle {
        Handle::new(self.clone())
    }
}
