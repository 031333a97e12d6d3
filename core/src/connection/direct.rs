//! A request served with no connection of its own: for a transport whose every message is
//! answered in one reply and nothing else (plain JSON-RPC over HTTP: one `POST`, one response).
//!
//! The body is parsed once, the request goes straight to the router's handler in the caller's
//! task, and its answer, encoded once, comes back as the reply's body: no reader, no ordered
//! lane, no outbound queue, no channel. What such a transport cannot carry keeps the
//! connection's answers: a handler's call back to its peer goes through the handle of a
//! connection that has ended, saying why (its `reason`); a value that would bind itself to a
//! connection (an offered stream) fails the encoding.
//!
//! Only what needs nothing of a connection is served here ([`Direct::serve`] says
//! [`Served::Elsewhere`] for the rest, which the caller serves over a connection as before):
//! one request or one notification routed by the router; not a batch, not a message a feature
//! takes (`$/cancelRequest`, `$/enumerator/next`, …), not a request for a notification
//! handler, not an unknown notification. A builder with middleware layers or services built
//! per connection has no direct path at all ([`Builder::direct`] is `None`).

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::SinkExt as _;
use futures::task::AtomicWaker;
use tokio_util::sync::CancellationToken;

use super::shared::Shared;
use super::trace::Tracer;
use super::{Builder, Connection, Direction, Handle};
use crate::framing::{Frame, FrameError};
use crate::handler::{Host, NotificationStart, ReplySlot, RequestStart, Responder, Route, Router, poll_supervised};
use crate::message::bind::{Binder, Found, Target};
use crate::message::{ErrorObject, Incoming, ParsedMessage, codes, parse_frame_keeping};

/// What became of a message handed to [`Direct::serve`].
#[derive(Debug)]
pub(crate) enum Served {
    /// A request, answered: the encoded answer.
    Answer(Vec<u8>),
    /// A notification, its handler run to its end (or cancelled at the timeout).
    Done,
    /// Not for the direct path: serve it over a connection.
    Elsewhere,
}

/// The router of a builder, ready to serve messages with no connection of their own.
pub(crate) struct Direct {
    router: Router,
    /// Which names the features take (asked only; its extensions are never called).
    seam: super::seam::Seam,
    common: Arc<Common>,
    max_batch_len: usize,
    /// Keeps the ended connection whose handle every direct request's `peer()` is.
    _dead: Connection,
}

/// What every request's host shares.
struct Common {
    /// The connection a handler's calls back go to: ended, with the transport's reason.
    dead: Arc<Shared>,
    tracer: Tracer,
    answers_cancelled: bool,
    max_message_size: usize,
}

impl fmt::Debug for Direct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Direct").field("router", &self.router).finish_non_exhaustive()
    }
}

impl Builder {
    /// The direct path of this builder's service (see the [module docs](self)), whose handlers'
    /// calls back fail with `reason`; `None` when its middleware layers or its services built
    /// per connection need a connection for every message. Call within a tokio runtime.
    pub(crate) fn direct(&self, reason: &str) -> Option<Direct> {
        if self.config.layered.is_some() || !self.factories.is_empty() {
            return None;
        }
        let tracer = Tracer::new(&self.config);
        // The connection's own cancellation first, as on a connection: its names are taken.
        let cancellation: Arc<dyn super::seam::Extension> =
            Arc::new(super::cancel::Cancellation::new(&self.config.cancel));
        let reason = reason.to_owned();
        let eof_reason = Box::pin(async move { Some(reason) });
        let nothing = futures::stream::empty::<Result<Frame, FrameError>>();
        let dropped = futures::sink::drain::<Vec<u8>>()
            .sink_map_err(|e: std::convert::Infallible| -> std::io::Error { match e {} });
        let (dead, shared) = self.clone().idle_timeout(None).message_read_timeout(None).start_messages(
            nothing,
            |_| dropped,
            Some(eof_reason),
            None,
        );
        // The features start with the ended connection's weak handle (a feature that calls the
        // peer finds it ended, as a handler's call back does); no permits of a connection's own
        // (the service's are used).
        let me = super::WeakHandle::new(Arc::downgrade(&shared));
        let seam = super::seam::Seam::new([cancellation], &self.features, &self.config.limits, &tracer, &me);
        // The features' wrappers, as a connection applies them (a router that panics there has
        // no direct path: the connection path reports it).
        let router = seam.router(self.router.clone()).ok()?;
        let common = Common {
            dead: shared,
            tracer,
            answers_cancelled: self.config.cancel.answers_cancelled,
            max_message_size: self.config.limits.frame.max_message_size,
        };
        Some(Direct {
            router,
            seam,
            common: Arc::new(common),
            max_batch_len: self.config.limits.max_batch_len,
            _dead: dead,
        })
    }
}

impl Direct {
    /// Serve `body` (one message) here if it is for the direct path: parsed once, dispatched
    /// in this task, a handler still running after `timeout` cancelled (a request is then
    /// answered `-32800` saying so).
    pub(crate) async fn serve(&self, body: &[u8], timeout: Duration) -> Served {
        let Ok(ParsedMessage::Single(message)) = parse_frame_keeping(body, self.max_batch_len, false) else {
            return Served::Elsewhere;
        };
        match message {
            Incoming::Request { id, method, params, trace: _ } => {
                if self.seam.serving(&method).is_some() {
                    return Served::Elsewhere;
                }
                let route = match self.router.route(&method) {
                    Some(Route::Request(f)) => f.clone(),
                    Some(Route::Notification(_)) => return Served::Elsewhere,
                    None => match self.router.fallback_handler() {
                        Some(f) => f.clone(),
                        None => {
                            self.common.tracer.message(Direction::Incoming, body);
                            tracing::debug!(
                                target: crate::LOG_TARGET,
                                method = %self.common.tracer.quote(&method),
                                "unknown method answered -32601"
                            );
                            let mut answer = Vec::new();
                            let error = ErrorObject::method_not_found(&method);
                            crate::message::encode_response::<()>(
                                &mut answer,
                                &id,
                                Err(&error),
                                crate::message::bind::UNBOUND,
                            );
                            self.common.tracer.message(Direction::Outgoing, &answer);
                            return Served::Answer(answer);
                        }
                    },
                };
                self.common.tracer.message(Direction::Incoming, body);
                let host = Arc::new(DirectHost::new(self.common.clone()));
                let slot = ReplySlot::new(host.clone(), id, false, None, false);
                let start = RequestStart { method, params, slot: &slot };
                let responder = Responder::new(slot.clone());
                let answer = request_answer(&host, &slot, move || route(start, responder), timeout).await;
                self.common.tracer.message(Direction::Outgoing, &answer);
                Served::Answer(answer)
            }
            Incoming::Notification { method, params, trace } => {
                if self.seam.notifications_taken(&method) {
                    return Served::Elsewhere;
                }
                let Some(Route::Notification(f)) = self.router.route(&method) else {
                    // Unknown (warned about by a connection), or a request handler (run with a
                    // silent slot by one).
                    return Served::Elsewhere;
                };
                self.common.tracer.message(Direction::Incoming, body);
                let host = Arc::new(DirectHost::new(self.common.clone()));
                let name = method.to_owned();
                let started = poll_supervised(None, || {
                    f(NotificationStart { method, params, host: host.clone(), lane: None, trace })
                });
                let Ok(mut fut) = started else {
                    tracing::error!(target: crate::LOG_TARGET, method = %self.common.tracer.quote(&name), "notification handler panicked");
                    return Served::Done;
                };
                let run = std::future::poll_fn(|cx| match poll_supervised(None, || fut.as_mut().poll(cx)) {
                    Ok(Poll::Pending) => Poll::Pending,
                    Ok(Poll::Ready(())) => Poll::Ready(()),
                    Err(_) => {
                        tracing::error!(target: crate::LOG_TARGET, method = %self.common.tracer.quote(&name), "notification handler panicked");
                        Poll::Ready(())
                    }
                });
                if tokio::time::timeout(timeout, run).await.is_err() {
                    host.cancel();
                    tracing::debug!(
                        target: crate::LOG_TARGET,
                        method = %self.common.tracer.quote(&name),
                        "notification handler cancelled after {timeout:?}"
                    );
                }
                Served::Done
            }
            _ => Served::Elsewhere,
        }
    }
}

/// Start a request's handler (`start`) under panic supervision and drive it until its request
/// is answered, whichever task answers; cancel it after `timeout`. The timer is set only if
/// the first poll does not answer (most handlers answer in it).
async fn request_answer(
    host: &Arc<DirectHost>,
    slot: &Arc<ReplySlot>,
    start: impl FnOnce() -> crate::handler::BoxFuture,
    timeout: Duration,
) -> Vec<u8> {
    // (A panic building it: answered with the panic's message.)
    let mut handler = poll_supervised(Some(slot), start).ok();
    let mut drive = std::future::poll_fn(|cx| {
        if let Some(fut) = handler.as_mut() {
            match poll_supervised(Some(slot), || fut.as_mut().poll(cx)) {
                Ok(Poll::Pending) => {}
                // Done (its responder may be with another task), or answered with its panic.
                Ok(Poll::Ready(())) | Err(_) => handler = None,
            }
        }
        host.poll_answer(cx)
    });
    // The first poll, with no timer.
    let first = std::future::poll_fn(|cx| Poll::Ready(std::pin::Pin::new(&mut drive).poll(cx))).await;
    if let Poll::Ready(answer) = first {
        return answer;
    }
    match tokio::time::timeout(timeout, &mut drive).await {
        Ok(answer) => answer,
        Err(_) => {
            drop(drive);
            // Answered first (the responder dropped with the handler would answer otherwise),
            // then cancelled: the handler sees its token fire, its future is dropped here.
            let error =
                ErrorObject::new(codes::REQUEST_CANCELLED, format!("the handler did not answer within {timeout:?}"));
            slot.answer::<()>(Err(&error));
            host.cancel();
            drop(handler.take());
            host.take_answer().unwrap_or_default()
        }
    }
}

/// The host of one request served directly: where its answer goes, its cancellation.
pub(super) struct DirectHost {
    common: Arc<Common>,
    /// Made only if a handler asks for its cancellation token (most never do).
    token: std::sync::OnceLock<CancellationToken>,
    /// The request is cancelled (it ran past the timeout).
    cancelled: std::sync::atomic::AtomicBool,
    answer: Mutex<Option<Vec<u8>>>,
    waker: AtomicWaker,
}

impl DirectHost {
    fn new(common: Arc<Common>) -> Self {
        DirectHost {
            common,
            token: std::sync::OnceLock::new(),
            cancelled: std::sync::atomic::AtomicBool::new(false),
            answer: Mutex::new(None),
            waker: AtomicWaker::new(),
        }
    }

    /// Cancel the request's handler (its token fires, if it has one).
    fn cancel(&self) {
        self.cancelled.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }

    fn take_answer(&self) -> Option<Vec<u8>> {
        self.answer.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn poll_answer(&self, cx: &mut std::task::Context<'_>) -> Poll<Vec<u8>> {
        if let Some(answer) = self.take_answer() {
            return Poll::Ready(answer);
        }
        self.waker.register(cx.waker());
        // Given meanwhile, by another task.
        self.take_answer().map_or(Poll::Pending, Poll::Ready)
    }

    /// The handle a handler's `peer()` gives: the ended connection.
    pub(super) fn dead_handle(&self, lane: Option<u64>) -> Handle {
        Handle { shared: self.common.dead.clone(), lane_seq: lane }
    }
}

impl Binder for DirectHost {
    fn armed(&self) -> bool {
        false
    }

    fn bind(&self, _found: Found, _target: Target) -> Result<(), String> {
        Err("a value bound to a connection (a stream) cannot travel in an answer with no connection".to_owned())
    }
}

impl Host for DirectHost {
    /// The direct path's own: one for all the requests it serves.
    fn locals(&self) -> &crate::handler::Locals {
        &self.common.dead.locals
    }

    fn handle(self: Arc<Self>, lane: Option<u64>) -> Handle {
        self.dead_handle(lane)
    }

    fn enter(&self, _slot: &Arc<ReplySlot>) {}

    fn leave(&self, _slot: &ReplySlot) {}

    fn in_flight(&self, slot: &Arc<ReplySlot>) -> bool {
        !slot.is_answered()
    }

    fn handlers(&self) -> &CancellationToken {
        let token = self.token.get_or_init(CancellationToken::new);
        // Pairs with `cancel`: whichever comes second sees the other's write.
        if self.cancelled.load(std::sync::atomic::Ordering::SeqCst) {
            token.cancel();
        }
        token
    }

    fn handlers_cancelled(&self) -> bool {
        self.cancelled.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn answers_cancelled(&self) -> bool {
        self.common.answers_cancelled
    }

    fn max_message_size(&self) -> usize {
        self.common.max_message_size
    }

    fn send_answer(&self, body: Vec<u8>, _later: bool) {
        *self.answer.lock().unwrap_or_else(|p| p.into_inner()) = Some(body);
        self.waker.wake();
    }

    fn quote(&self, value: &dyn fmt::Display) -> String {
        self.common.tracer.quote(value).to_string()
    }
}
