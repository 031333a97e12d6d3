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
//! frame arrives): with both timeouts off it costs nothing. On, a pause in the input costs a
//! look at whether the timer has fired, not a reading of the clock and a timer reset: the idle
//! timer runs in steps of an eighth of the timeout and only notes, when a step ends, whether a
//! frame arrived (or work was in flight) meanwhile. A step that saw neither is followed by the
//! rest of the timeout, and the connection closes if that too sees neither: so never before the
//! timeout has passed in silence, and at most a step (an eighth of it) after. A busy connection's
//! timer fires once a step; an idle one's twice in all. The message read timeout is set once per
//! message that pauses (a reset, as before): exact.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::dispatch::Lane;
use super::shared::Shared;
use super::{CloseKind, CloseReason};

/// The idle timeout's steps: an eighth of it each (how late, at most, a silent peer is cut).
const IDLE_STEPS: u32 = 8;

/// What the timer is set for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Armed {
    /// A step of the idle timeout.
    IdleStep,
    /// The idle timeout's rest, after a step that saw no frame and nothing in flight.
    IdleRest,
    /// The message read timeout of the message begun.
    Message,
}

pub(crate) struct Watchdog {
    idle: Option<Duration>,
    message: Option<Duration>,
    sleep: Pin<Box<Sleep>>,
    /// What the timer is set for; `None` when it is not (the next pause sets it).
    armed: Option<Armed>,
    /// A frame arrived since the idle timer was last set.
    moved: bool,
}

impl Watchdog {
    /// A watchdog for these timeouts, or `None` when both are off.
    pub(crate) fn new(idle: Option<Duration>, message: Option<Duration>) -> Option<Self> {
        if idle.is_none() && message.is_none() {
            return None;
        }
        let sleep = Box::pin(tokio::time::sleep(Duration::ZERO));
        Some(Watchdog { idle, message, sleep, armed: None, moved: false })
    }

    /// A frame arrived.
    #[inline]
    pub(crate) fn progress(&mut self) {
        self.moved = true;
        // The message it ends no longer times out; the next one that pauses is timed afresh.
        if self.armed == Some(Armed::Message) {
            self.armed = None;
        }
    }

    /// Set the timer to `after` from now, for `kind`.
    fn arm(&mut self, kind: Armed, after: Duration) {
        self.sleep.as_mut().reset(Instant::now() + after);
        self.armed = Some(kind);
        self.moved = false;
    }

    /// The input ran dry (`in_message`: with part of a message read; `new_waker`: the reader's
    /// waker is not the one it registered last). `Some` when the connection must close;
    /// otherwise the timer is set and registered with `cx`.
    pub(crate) fn check(
        &mut self,
        cx: &mut Context<'_>,
        in_message: bool,
        new_waker: bool,
        shared: &Shared,
        lane: &Lane,
    ) -> Option<CloseReason> {
        if in_message {
            let Some(limit) = self.message else {
                // Bytes arrived (part of a message): the peer is not silent.
                self.moved = true;
                return None;
            };
            if self.armed != Some(Armed::Message) {
                self.arm(Armed::Message, limit);
            } else if !new_waker && !self.sleep.is_elapsed() {
                return None;
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return None;
            }
            return Some(CloseReason::new(
                CloseKind::RemoteProtocolViolation,
                format!("the peer took longer than {limit:?} to send a message (the message read timeout)"),
            ));
        }
        let Some(limit) = self.idle else {
            self.armed = None;
            return None;
        };
        // At least a millisecond (the timer's resolution): a zero timeout steps, not spins.
        let step = (limit / IDLE_STEPS).max(Duration::from_millis(1));
        match self.armed {
            Some(Armed::IdleStep | Armed::IdleRest) => {
                // The common case: set already, and not fired (its waker registered).
                if !new_waker && !self.sleep.is_elapsed() {
                    return None;
                }
            }
            _ => self.arm(Armed::IdleStep, step),
        }
        while self.sleep.as_mut().poll(cx).is_ready() {
            if self.moved || busy(shared, lane) {
                self.arm(Armed::IdleStep, step);
            } else if self.armed == Some(Armed::IdleStep) {
                // Silent since the step began: silent for the timeout once the rest passes so.
                self.arm(Armed::IdleRest, limit.saturating_sub(step));
            } else {
                return Some(CloseReason::new(
                    CloseKind::LocallyClosed,
                    format!("the peer sent nothing for {limit:?} with nothing in flight (the idle timeout)"),
                ));
            }
        }
        None
    }
}

/// Something is in flight: the peer's silence may be waiting on it.
fn busy(shared: &Shared, lane: &Lane) -> bool {
    shared.pending.len() > 0 || shared.in_flight.any() || shared.read_ahead.any_queued() || lane.is_busy()
}
