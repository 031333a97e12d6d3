//! The reader's timeouts on a slow or silent peer (hyper's header read timeout and keep-alive
//! idle timeout, for JSON-RPC): off by default, on for a [`Server`](crate::server::Server)'s
//! connections.
//!
//! - Message read timeout: once the first bytes of a message have arrived, the rest must follow
//!   within it, so a peer that trickles a byte every few seconds cannot hold a connection (and a
//!   server's connection slot) forever.
//! - Idle timeout: a peer that has sent nothing for this long while nothing is in flight (no call
//!   of ours awaits its answer, no request of its is queued or running, the ordered lane is
//!   idle) is disconnected. Time spent waiting on work in flight does not count.
//!
//! The reader consults the watchdog only when its input runs dry (and marks progress when a
//! frame arrives): with both timeouts off it costs nothing, and on it costs a timer reset per
//! pause in the input, not per message.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::dispatch::Lane;
use super::shared::Shared;
use super::{CloseKind, CloseReason};

/// What the timer is set for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Armed {
    Idle,
    Message,
}

pub(crate) struct Watchdog {
    idle: Option<Duration>,
    message: Option<Duration>,
    sleep: Pin<Box<Sleep>>,
    /// What the timer is set for; `None` after progress (the next pause sets it afresh).
    armed: Option<Armed>,
}

impl Watchdog {
    /// A watchdog for these timeouts, or `None` when both are off.
    pub(crate) fn new(idle: Option<Duration>, message: Option<Duration>) -> Option<Self> {
        if idle.is_none() && message.is_none() {
            return None;
        }
        Some(Watchdog { idle, message, sleep: Box::pin(tokio::time::sleep(Duration::ZERO)), armed: None })
    }

    /// A frame arrived.
    pub(crate) fn progress(&mut self) {
        self.armed = None;
    }

    /// The input ran dry (`in_message`: with part of a message read). `Some` when the
    /// connection must close; otherwise the timer is set and registered with `cx`.
    pub(crate) fn check(
        &mut self,
        cx: &mut Context<'_>,
        in_message: bool,
        shared: &Shared,
        lane: &Lane,
    ) -> Option<CloseReason> {
        loop {
            let (kind, limit) = if in_message { (Armed::Message, self.message) } else { (Armed::Idle, self.idle) };
            let Some(limit) = limit else {
                self.armed = None;
                return None;
            };
            if self.armed != Some(kind) {
                self.sleep.as_mut().reset(Instant::now() + limit);
                self.armed = Some(kind);
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return None;
            }
            match kind {
                Armed::Message => {
                    return Some(CloseReason::new(
                        CloseKind::RemoteProtocolViolation,
                        format!("the peer took longer than {limit:?} to send a message (the message read timeout)"),
                    ));
                }
                Armed::Idle if busy(shared, lane) => self.armed = None,
                Armed::Idle => {
                    return Some(CloseReason::new(
                        CloseKind::LocallyClosed,
                        format!("the peer sent nothing for {limit:?} with nothing in flight (the idle timeout)"),
                    ));
                }
            }
        }
    }
}

/// Something is in flight: the peer's silence may be waiting on it.
fn busy(shared: &Shared, lane: &Lane) -> bool {
    shared.pending.len() > 0 || shared.in_flight.any() || shared.read_ahead.any_queued() || lane.is_busy()
}
