//! The reader task: decode frames and route them. It never waits on a handler: answers go
//! straight to their pending call, cancellations straight to their request, and everything else
//! to the ordered lane, which the reader works itself while it is free (one poll of a handler,
//! never a wait; see [`super::dispatch`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

use super::dispatch::{Inbound, Lane, LaneClosed};
use super::frames::{FrameSource, Next};
use super::pending::Delivery;
use super::seam::{Phase, Take};
use super::shared::Shared;
use super::watchdog::Watchdog;
use super::{CloseKind, CloseReason, Direction};
use crate::framing::FrameError;
use crate::handler::{Batch, ReplySlot};
use crate::message::bind::UNBOUND;
use crate::message::{ErrorObject, Id, Incoming, ParsedMessage, encode_response, parse_frame_keeping};

/// At most this many messages are handled while their answers are held (see `Outbound::hold`).
const HOLD_MAX: usize = 32;

/// A future that says why the peer went away when the stream ends (e.g. a child's exit status).
pub(crate) type EofReason = futures::future::BoxFuture<'static, Option<String>>;

/// What became of a message routed without waiting (see `Reader::route_now`).
enum Routed {
    /// Handled, or queued on the lane: read on.
    Done,
    /// The connection must stop reading.
    Stop,
    /// Invalid: to be answered (which may wait for room).
    Invalid { id: Id, error: ErrorObject, batch: Option<Arc<Batch>> },
    /// The lane holds the read-ahead already: wait, then offer this (its params its own).
    Full(Inbound<'static>),
    /// Taken (a progress report held for its receiver), but the read-ahead is full: wait before
    /// reading on.
    Held,
}

/// What the reader's poll gives back to its loop.
enum Step {
    /// The connection is closing: stop reading.
    Stop,
    /// A message that must wait (in a future of its own).
    Later(Later),
    /// Anything but a message: a discarded line, an error, the end of the input.
    Other(Option<Result<Next, FrameError>>),
}

/// A message the reader could not finish within its poll.
enum Later {
    /// Unparsable: answered `-32700` (which may wait for room).
    Unparsable(ErrorObject),
    /// Routed, but what became of it must wait (see [`Routed`]).
    Routed(Routed),
    /// A batch: its items are routed one by one (their params their own).
    Batch(Vec<Incoming<'static>>),
}

pub(crate) struct Reader {
    pub(crate) shared: Arc<Shared>,
    pub(crate) lane: Arc<Lane>,
    /// The answers held while the reader reads on.
    pub(crate) hold: Hold,
    /// Whether a call's top-level trace context members are kept (`Config::keeps_trace_members`,
    /// asked once).
    pub(crate) keeps_trace: bool,
}

/// The reader's hold on the answers its handlers give while it goes through what it has read
/// (the outbound queue's `Held` state, see `outbound/turns.rs`): they are written together, in
/// one write, instead of one write each.
///
/// A lone message's answer is held as well, and written as the reader's poll ends. Written by
/// its handler at once, it woke the peer's reader (when the peer runs on the same runtime, as
/// in-process pairs and benches do) while this poll still had the reader's next read and its
/// bookkeeping to run: the runtime puts every few wakes in the worker's queue, where an idle
/// worker may steal the task and move the exchange to another core. Written last, the wake
/// waits only for the return. With two workers this took the in-memory newline round trip from
/// 0.855 to 0.935 of the hand-written loop's calls/s (the README's performance section).
///
/// | state | meaning |
/// |---|---|
/// | free (`0`) | answers are written as they are given |
/// | holding (`n` > 0) | `n` messages were handled since answers began to be held |
///
/// | transition | method | when |
/// |---|---|---|
/// | free → holding(1) | [`Hold::after_read`] | a message was read |
/// | holding(n) → holding(n + 1) | [`Hold::after_read`] | another message was read |
/// | holding → free | [`Hold::release`] | before every wait of the reader (the peer may be waiting for what is held), and after [`HOLD_MAX`] messages |
/// | holding → free | [`Hold::release_to_task`] | the reader goes away (its `Drop` writes nothing itself) |
///
/// Every `.await` of the reader that can wait goes through [`Hold::release`] first: reading the
/// next frame, waiting for room to answer garbage, waiting for the read-ahead, the end of input.
///
/// Only the reader touches it (an atomic for `Sync` only: plain loads and stores).
#[derive(Default)]
pub(crate) struct Hold(std::sync::atomic::AtomicUsize);

impl Hold {
    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, n: usize) {
        self.0.store(n, Ordering::Relaxed);
    }

    /// A message was read.
    fn after_read(&self, out: &super::outbound::Outbound) {
        let n = self.get();
        if n == 0 {
            out.hold();
        }
        self.set(n + 1);
    }

    /// Write what is held (`Outbound::release`): before a wait, or after a long run.
    fn release(&self, out: &super::outbound::Outbound) {
        if self.get() > 0 {
            self.set(0);
            out.release();
        }
    }

    /// Stop holding without writing (the reader goes away): the writer task writes it.
    fn release_to_task(&self, out: &super::outbound::Outbound) {
        if self.get() > 0 {
            self.set(0);
            out.release_to_task();
        }
    }

    fn is_long(&self) -> bool {
        self.get() >= HOLD_MAX
    }
}

/// The reply slot of a request done with it, reused for the next one (an allocation saved per
/// request answered on the spot). The reader's own: no lock. One is enough: a request takes it
/// and gives at most one back. Kept in the reader's future, not in a list of its own (whose
/// buffer, a line of memory the call touched nowhere else, was a cache miss a request on a
/// server of many connections, where each one's memory has gone cold by its next message).
type Spares = Option<Arc<ReplySlot>>;

impl Drop for Reader {
    fn drop(&mut self) {
        // What it held goes to the writer task (no I/O from `Drop`).
        self.hold.release_to_task(&self.shared.outbound);
        self.lane.input_ended();
    }
}

impl Reader {
    pub(crate) async fn run(self, mut frames: impl FrameSource, eof_reason: Option<EofReason>) {
        let mut spares: Spares = None;
        // The waker the close signal holds: registering costs atomics, so only when it changes.
        let mut registered: Option<Waker> = None;
        let config = &self.shared.config;
        let mut watchdog = Watchdog::new(config.idle_timeout, config.message_read_timeout);
        // The waker changed since the watchdog last registered its timer.
        let mut new_waker = false;
        loop {
            // A message already read (or readable without waiting) is handled while the answers
            // to the ones before it are still held; they are written before the reader waits (or
            // after `HOLD_MAX` messages). The stream is polled with this task's own waker, so
            // finding nothing to read costs no second poll. A message that routes without
            // waiting (the common case) is handled right here, in the same poll; only what must
            // wait leaves this poll, and waits in a future of its own (see `Later`): the
            // reader's own future, which every idle connection holds, stays small.
            let step = std::future::poll_fn(|cx| {
                loop {
                    // Registered before the check: a close from here on wakes this poll.
                    if !registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        self.shared.lifecycle.register_reader(cx.waker());
                        registered = Some(cx.waker().clone());
                        // The watchdog's timer holds the old one until its next poll.
                        new_waker = true;
                    }
                    if self.shared.is_closing() {
                        return Poll::Ready(Step::Stop);
                    }
                    if self.hold.is_long() {
                        self.hold.release(&self.shared.outbound);
                    }
                    let next = match frames.poll_frame(cx) {
                        Poll::Ready(next) => {
                            if let Some(watchdog) = watchdog.as_mut() {
                                watchdog.progress();
                            }
                            next
                        }
                        Poll::Pending => {
                            if let Some(watchdog) = watchdog.as_mut()
                                && let Some(reason) = watchdog.check(
                                    cx,
                                    frames.in_message(),
                                    std::mem::take(&mut new_waker),
                                    &self.shared,
                                    &self.lane,
                                )
                            {
                                self.shared.close(reason);
                                return Poll::Ready(Step::Stop);
                            }
                            self.hold.release(&self.shared.outbound);
                            return Poll::Pending;
                        }
                    };
                    // A lone message's answer is held too, and written as this poll ends: the
                    // peer's task it wakes then waits in our worker's queue for nothing but the
                    // return (see `Hold`).
                    self.hold.after_read(&self.shared.outbound);
                    match next {
                        Some(Ok(Next::Message)) => match self.frame_now(frames.body(), &mut spares, cx) {
                            Ok(true) => {}
                            Ok(false) => return Poll::Ready(Step::Stop),
                            Err(later) => return Poll::Ready(Step::Later(later)),
                        },
                        other => return Poll::Ready(Step::Other(other)),
                    }
                }
            })
            .await;
            match step {
                Step::Stop => return,
                Step::Later(later) => {
                    if !Box::pin(self.later(later, &mut spares)).await {
                        return;
                    }
                }
                Step::Other(Some(Ok(Next::Message))) => unreachable!("messages are handled in the poll"),
                Step::Other(Some(Ok(Next::Discarded { limit }))) => {
                    tracing::warn!(target: crate::LOG_TARGET, limit, "discarded an over-long line");
                    let error = ErrorObject::invalid_request(format!(
                        "message exceeds the limit of {limit} bytes and was discarded"
                    ));
                    Box::pin(self.answer_error(&Id::Null, error)).await;
                }
                Step::Other(Some(Err(e))) => {
                    let kind = match e {
                        FrameError::Io(_) | FrameError::Truncated(_) => CloseKind::StreamError,
                        _ => CloseKind::RemoteProtocolViolation,
                    };
                    self.shared.close(CloseReason::new(kind, format!("reading from the peer failed: {e}")));
                    return;
                }
                Step::Other(None) => {
                    self.hold.release(&self.shared.outbound);
                    let why = match eof_reason {
                        Some(f) => f.await,
                        None => None,
                    };
                    let message = why.unwrap_or_else(|| "the peer closed the stream".to_owned());
                    self.shared.close_after_eof(CloseReason::new(CloseKind::RemoteClosed, message));
                    return;
                }
            }
        }
    }

    /// Handle one frame as far as it goes without waiting: `Ok(false)` when the connection must
    /// stop reading, `Err` with what must wait (or is rare: batches, unparsable input).
    fn frame_now(&self, body: &[u8], spares: &mut Spares, cx: &mut Context<'_>) -> Result<bool, Later> {
        self.shared.outbound.tracer.message(Direction::Incoming, body);
        let config = &self.shared.config;
        match parse_frame_keeping(body, config.limits.max_batch_len, self.keeps_trace) {
            Err(error) => {
                tracing::debug!(target: crate::LOG_TARGET, error = %self.shared.quote(&error), "unparsable message answered -32700");
                Err(Later::Unparsable(error))
            }
            Ok(ParsedMessage::Single(message)) => match self.route_now(message, None, spares, cx) {
                Routed::Done => Ok(true),
                Routed::Stop => Ok(false),
                waits => Err(Later::Routed(waits)),
            },
            Ok(ParsedMessage::Batch(items)) => Err(Later::Batch(items.into_iter().map(Incoming::into_owned).collect())),
        }
    }

    /// What [`Reader::frame_now`] could not finish; `false` when the connection must stop reading.
    async fn later(&self, later: Later, spares: &mut Spares) -> bool {
        match later {
            Later::Unparsable(error) => {
                self.answer_error(&Id::Null, error).await;
                true
            }
            Later::Routed(routed) => self.after_route(routed, spares).await,
            Later::Batch(items) => {
                let expected = items
                    .iter()
                    .filter(|m| matches!(m, Incoming::Request { .. } | Incoming::Invalid { answer: true, .. }))
                    .count();
                let batch = (expected > 0).then(|| Batch::new(self.shared.clone(), expected));
                for item in items {
                    if !self.route(item, batch.clone(), spares).await {
                        return false;
                    }
                }
                true
            }
        }
    }

    /// Answer a broken message. Waits while answers pile up unread: a peer that floods garbage
    /// without reading our errors is slowed down, not buffered without bound.
    async fn answer_error(&self, id: &Id, error: ErrorObject) {
        if self.shared.lifecycle.stopped().is_cancelled() {
            return;
        }
        if !self.shared.outbound.has_room() {
            self.hold.release(&self.shared.outbound);
            // Rare: the wait lives in a future of its own (the reader's stays small).
            let wait = async {
                tokio::select! {
                    biased;
                    _ = self.shared.lifecycle.stopped().cancelled() => false,
                    _ = self.shared.outbound.wait_room() => true,
                }
            };
            if !Box::pin(wait).await {
                return;
            }
        }
        let mut buf = crate::util::bufpool::take(96);
        encode_response::<()>(&mut buf, id, Err(&error), UNBOUND);
        let _ = self.shared.outbound.send_now(buf);
    }

    /// Route one message: without waiting in the common case (one poll, the handler's first
    /// poll included), then whatever must wait.
    async fn route(&self, message: Incoming<'static>, batch: Option<Arc<Batch>>, spares: &mut Spares) -> bool {
        let mut message = Some((message, batch));
        let routed = std::future::poll_fn(|cx| {
            Poll::Ready(match message.take() {
                Some((message, batch)) => self.route_now(message, batch, spares, cx),
                None => Routed::Done,
            })
        })
        .await;
        self.after_route(routed, spares).await
    }

    /// Finish routing a message (waiting as needed); `false` when the connection must stop
    /// reading.
    async fn after_route(&self, routed: Routed, spares: &mut Spares) -> bool {
        match routed {
            Routed::Done => true,
            Routed::Stop => false,
            Routed::Invalid { id, error, batch } => {
                self.answer_invalid(id, error, batch).await;
                true
            }
            Routed::Held => Box::pin(self.wait_read_ahead()).await,
            Routed::Full(item) => {
                if !Box::pin(self.wait_read_ahead()).await {
                    return false;
                }
                let mut item = Some(item);
                let routed = std::future::poll_fn(|cx| {
                    Poll::Ready(match item.take() {
                        Some(item) => self.offer_now(item, spares, cx),
                        None => Routed::Done,
                    })
                })
                .await;
                matches!(routed, Routed::Done)
            }
        }
    }

    /// Route one message as far as it goes without waiting (see [`Routed`]).
    fn route_now(
        &self,
        message: Incoming<'_>,
        batch: Option<Arc<Batch>>,
        spares: &mut Spares,
        cx: &mut Context<'_>,
    ) -> Routed {
        match message {
            Incoming::Response { id, outcome } => {
                let delivery = id.as_u64().map_or(Delivery::Unknown, |n| {
                    // The streams offered in its params end before the caller wakes; its progress
                    // receivers end after the answer is in the caller's hands (a receiver's end
                    // means the call is answered), after every report read before the answer.
                    self.shared.seam.release_call(n, Phase::BeforeAnswer);
                    let delivery = self.shared.pending.complete(n, outcome, self.shared.settle.enqueued());
                    self.shared.seam.release_call(n, Phase::AfterAnswer);
                    delivery
                });
                if delivery != Delivery::Delivered {
                    self.undelivered(&id, delivery);
                }
                Routed::Done
            }
            Incoming::Notification { method, params, trace } => {
                // What a feature takes (cancellations, progress for our tokens, stream aborts)
                // bypasses the queue; what it holds counts against the read-ahead, like queued
                // messages.
                match self.shared.seam.take(&self.shared, &method, params.as_deref()) {
                    Take::Pass => {
                        // With room in the read-ahead it goes to the lane now, as its parts (see
                        // `Lane::offer_request`); else it waits for room (`after_route`).
                        if self.shared.read_ahead_full() {
                            return Routed::Full(Inbound::Notification { method, params, trace }.into_owned());
                        }
                        self.shared.settle.on_enqueue();
                        let offered = self.lane.offer_notification(method, params, trace, cx);
                        self.offered(offered, spares)
                    }
                    Take::Taken => Routed::Done,
                    Take::Held if self.shared.read_ahead_full() => Routed::Held,
                    Take::Held => Routed::Done,
                }
            }
            Incoming::Request { id, method, params, trace } => {
                // Every request that may still be unanswered is in the map by now (see
                // `ReplySlot::register`); while it is empty, no lock is needed to know.
                if self.shared.in_flight.contains(&id) {
                    return self.reused(id, &method, batch);
                }
                let watched = self.shared.config.layered.is_some();
                let mut slot = new_slot(&self.shared, spares, id, batch, watched);
                let cancel = &self.shared.config.cancel;
                if !cancel.never_cancelled.is_empty() && !cancel.may_cancel(&method) {
                    ReplySlot::set_never_cancelled(&mut slot);
                }
                if watched && let Some(trace) = trace {
                    ReplySlot::set_trace(&mut slot, trace);
                }
                if self.shared.read_ahead_full() {
                    return Routed::Full(Inbound::Request { method, params, slot }.into_owned());
                }
                self.shared.settle.on_enqueue();
                let offered = self.lane.offer_request(method, params, slot, cx);
                self.offered(offered, spares)
            }
            Incoming::Invalid { id, error, answer } => self.invalid(id, error, answer, batch),
        }
    }

    // The rare outcomes of `route_now`, out of line and cold: their logging (a `tracing` call
    // site each) and error text kept out of the routing's own code, which runs for every
    // message (a smaller stretch of instructions to fetch).

    #[cold]
    #[inline(never)]
    fn undelivered(&self, id: &Id, delivery: Delivery) {
        if delivery == Delivery::Abandoned {
            tracing::debug!(target: crate::LOG_TARGET, id = %self.shared.quote(id), "late answer to an abandoned call absorbed")
        } else {
            tracing::warn!(target: crate::LOG_TARGET, id = %self.shared.quote(id), "answer to an id we never sent (ignored)")
        }
    }

    #[cold]
    #[inline(never)]
    fn reused(&self, id: Id, method: &str, batch: Option<Arc<Batch>>) -> Routed {
        tracing::warn!(
            target: crate::LOG_TARGET,
            id = %self.shared.quote(&id),
            method = %self.shared.quote(method),
            "request id reused while in flight"
        );
        let error = ErrorObject::invalid_request(format!(
            "request id {} is already in use by a request in flight",
            crate::quote::cut(&id.to_string(), 256)
        ));
        Routed::Invalid { id, error, batch }
    }

    #[cold]
    #[inline(never)]
    fn invalid(&self, id: Option<Id>, error: ErrorObject, answer: bool, batch: Option<Arc<Batch>>) -> Routed {
        tracing::warn!(
            target: crate::LOG_TARGET,
            id = %self.shared.quote(id.as_ref().unwrap_or(&Id::Null)),
            error = %self.shared.quote(&error),
            "invalid message"
        );
        if answer {
            return Routed::Invalid { id: id.unwrap_or(Id::Null), error, batch };
        }
        Routed::Done
    }

    /// Answer an invalid message on its own, or inside its batch's array.
    async fn answer_invalid(&self, id: Id, error: ErrorObject, batch: Option<Arc<Batch>>) {
        match batch {
            Some(batch) => {
                ReplySlot::new(self.shared.clone(), id, false, Some(batch), false).answer::<()>(Err(&error));
            }
            None => self.answer_error(&id, error).await,
        }
    }

    /// Hand a message that waited for room in the read-ahead to the lane. (What `route_now`
    /// hands over at once goes as its parts, see [`Lane::offer_request`].)
    fn offer_now(&self, item: Inbound<'_>, spares: &mut Spares, cx: &mut Context<'_>) -> Routed {
        self.shared.settle.on_enqueue();
        let offered = self.lane.offer(item, cx);
        self.offered(offered, spares)
    }

    /// What the lane made of a message offered to it: a reply slot to reuse, or the end.
    #[inline(always)]
    fn offered(&self, offered: Result<Option<Arc<ReplySlot>>, LaneClosed>, spares: &mut Spares) -> Routed {
        match offered {
            Ok(Some(spare)) => {
                spares.get_or_insert(spare);
                Routed::Done
            }
            Ok(None) => Routed::Done,
            Err(_) => {
                // The dispatcher is gone (it only stops when the connection closes): never
                // leave the connection half alive with calls waiting on it.
                self.shared.close(CloseReason::new(CloseKind::FatalError, "the dispatcher stopped"));
                Routed::Stop
            }
        }
    }

    /// Wait while the read-ahead is full (in messages or bytes); `false` when the connection
    /// closes. With one of our calls pending the reader reads on instead (its answer may be
    /// behind the flood), up to the hard limits, where the connection closes.
    async fn wait_read_ahead(&self) -> bool {
        let limits = &self.shared.config.limits;
        loop {
            if !self.shared.read_ahead_full() {
                return true;
            }
            if self.shared.pending.len() > 0 {
                // Reading on past the read-ahead: only up to the hard limits (never below the
                // read-ahead itself, where the reader would simply pause).
                let max = limits.max_buffered_inbound.max(limits.read_ahead.max(1));
                let max_bytes = limits.max_buffered_inbound_bytes.max(limits.read_ahead_bytes.max(1));
                let (queued, bytes) = self.shared.read_ahead.counts();
                if queued >= max || bytes >= max_bytes {
                    let what = if queued >= max {
                        format!("more than {max} messages")
                    } else {
                        format!("more than {max_bytes} bytes of messages and progress reports")
                    };
                    self.shared.close(CloseReason::new(
                        CloseKind::RemoteProtocolViolation,
                        format!("the peer sent {what} ahead of dispatch"),
                    ));
                    return false;
                }
                return true;
            }
            // About to wait: what is held must go out first (the peer may wait for it).
            self.hold.release(&self.shared.outbound);
            let space = self.shared.read_ahead.space().notified();
            let call_started = self.shared.pending.call_started.notified();
            tokio::pin!(space, call_started);
            space.as_mut().enable();
            call_started.as_mut().enable();
            if !self.shared.read_ahead_full() || self.shared.pending.len() > 0 {
                continue;
            }
            tokio::select! {
                _ = space => {}
                _ = call_started => {}
                _ = self.shared.lifecycle.stopped().cancelled() => return false,
            }
        }
    }
}

/// A request's reply slot, `watched` when middleware wraps it (a spare one renewed, or a new
/// one).
fn new_slot(
    shared: &Arc<Shared>,
    spares: &mut Spares,
    id: Id,
    batch: Option<Arc<Batch>>,
    watched: bool,
) -> Arc<ReplySlot> {
    let (id, batch) = match spares.take() {
        Some(mut slot) => match ReplySlot::renew(&mut slot, id, batch, watched) {
            Ok(()) => return slot,
            Err(back) => back,
        },
        None => (id, batch),
    };
    let mut slot = ReplySlot::new(shared.clone(), id, true, batch, false);
    if watched {
        ReplySlot::set_watched(&mut slot);
    }
    slot
}
