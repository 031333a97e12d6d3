//! The dispatcher: one ordered lane for inbound requests and notifications.
//!
//! Messages are taken in arrival order. A notification's handler runs to completion before the
//! next message is taken (LSP's `didChange` is applied before the `hover` after it). A request's
//! handler is polled once on the lane — so its synchronous start happens in order — and then runs
//! as its own task, concurrently with later messages, up to the in-flight limit.
//!
//! Nobody owns the lane by default. When the reader reads a message and the lane is free, it
//! dispatches it itself, right away (a lone request costs no task hop to reach its handler).
//! Whatever cannot finish in that one step — a notification handler that waits for something, a
//! request that must wait for a concurrency slot or for the peer to read our answers — is handed
//! to the dispatcher task together with the lane, and the messages read after it queue behind it
//! until the task has caught up and lets the lane go. Either way a handler is only ever polled,
//! never waited for, by the reader.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use serde_json::value::RawValue;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;

use super::PeerInfo;
use super::lane::{Handoff, LaneTurns, Offered};
use super::layered::{HookState, Watcher};
use super::permits::{self, Admitted, Permits};
use super::seam::Admission;
use super::shared::Shared;
use crate::handler::{
    Host, NotificationStart, ReplySlot, RequestStart, Responder, Route, Router, SlotHook, in_scope, panic_message,
    poll_supervised, tell_hook,
};
use crate::message::{ErrorObject, TraceMembers, owned_params};
use crate::util::names::MethodName;

/// A message for the lane. A call's params are borrowed from the reader's buffer while the
/// reader dispatches it on the spot (a typed handler decodes them there: no copy), and owned
/// once it waits on the lane ([`Inbound::into_owned`]).
pub(crate) enum Inbound<'a> {
    Request { method: MethodName<'a>, params: Option<Cow<'a, RawValue>>, slot: Arc<ReplySlot> },
    Notification { method: MethodName<'a>, params: Option<Cow<'a, RawValue>>, trace: Option<Box<TraceMembers>> },
}

/// What holding one message costs beyond its text (its slot, its place in the queue), counted
/// against the byte read-ahead so that a flood of tiny messages counts too.
pub(crate) const HELD_OVERHEAD: usize = 128;

impl Inbound<'_> {
    /// The message, its params copied if they are borrowed (to wait on the lane).
    pub(crate) fn into_owned(self) -> Inbound<'static> {
        match self {
            Inbound::Request { method, params, slot } => {
                Inbound::Request { method: method.into_owned(), params: owned_params(params), slot }
            }
            Inbound::Notification { method, params, trace } => {
                Inbound::Notification { method: method.into_owned(), params: owned_params(params), trace }
            }
        }
    }

    /// The bytes this message holds while it waits on the lane.
    fn held_bytes(&self) -> usize {
        let (method, params, trace) = match self {
            Inbound::Request { method, params, slot } => (method, params.as_deref(), slot.trace()),
            Inbound::Notification { method, params, trace } => (method, params.as_deref(), trace.as_deref()),
        };
        HELD_OVERHEAD + method.len() + params_len(params) + trace.map_or(0, TraceMembers::len)
    }
}

/// A message queued on the lane (or put back first in line): a cancellation (or a reused id)
/// read meanwhile must find it, and answer it at once.
fn queued(shared: &Shared, item: &Inbound) {
    shared.read_ahead.queued_one();
    shared.hold_inbound(item.held_bytes());
    if let Inbound::Request { slot, .. } = item {
        slot.register();
        slot.set_queued(true);
    }
}

/// The lane, shared by the reader and the dispatcher task. Its hand-off is [`LaneTurns`]'s
/// state machine; what is dispatched, and how, is this module's.
pub(crate) struct Lane {
    turns: LaneTurns<Inbound<'static>, NotificationJob>,
    /// Messages taken off the lane so far (for [`super::settle`]). Only the lane's owner of the
    /// moment writes it (the reader while `Here`, the task while `Task`).
    taken: AtomicU64,
    /// The dispatcher task was spawned: at the first hand-off, not before (a connection whose
    /// reader dispatches everything on the spot never pays for the task).
    task: std::sync::atomic::AtomicBool,
    dispatcher: Dispatcher,
}

/// The lane is closed; the connection is ending.
pub(crate) struct LaneClosed;

pub(crate) struct Dispatcher {
    pub(crate) shared: Arc<Shared>,
    pub(crate) router: Router,
    pub(crate) tracker: TaskTracker,
    /// When requests may start: the seam's admission (the connection's own request permits).
    pub(crate) admission: Arc<dyn Admission>,
    /// The same admission when it is the connection's own permits (no feature's replaced
    /// them): the reader then starts a request on a look at them ([`Admitted::Deferred`]).
    pub(crate) own: Option<Arc<Permits>>,
    /// The connection's one layer when it is a hook ([`super::Layered::watcher`]): run here
    /// around each request's handler, its state held by whoever polls the handler (see
    /// [`HeldHook`]), and the peer it is shown.
    pub(crate) hook: Option<(Arc<dyn Watcher>, Arc<PeerInfo>)>,
}

type HandlerFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What became of a message the reader tried to dispatch itself.
enum Step {
    /// Done; with the request's reply slot when nobody holds it any more (for reuse).
    Done(Option<Arc<ReplySlot>>),
    /// Give the lane to the task, with what it must take first.
    Handoff(Handoff<Inbound<'static>, NotificationJob>),
}

impl Lane {
    pub(crate) fn new(dispatcher: Dispatcher) -> Self {
        Lane { turns: LaneTurns::new(), taken: AtomicU64::new(0), task: Default::default(), dispatcher }
    }

    /// The dispatcher task, spawned once: by the first hand-off (the reader is still running,
    /// so the tracker cannot have emptied yet).
    fn ensure_task(self: &Arc<Self>) {
        if !self.task.load(Ordering::Relaxed) && !self.task.swap(true, Ordering::AcqRel) {
            self.dispatcher.tracker.spawn(self.clone().run());
        }
    }

    /// The reader hands over a message: dispatched on the spot if the lane is free (its handler
    /// polled once with `cx`, the reader's context), else queued for the dispatcher task.
    /// `Ok` may hand back the reply slot of a request that is done with it, for reuse.
    #[inline(always)]
    pub(crate) fn offer(
        self: &Arc<Self>,
        item: Inbound<'_>,
        cx: &mut Context<'_>,
    ) -> Result<Option<Arc<ReplySlot>>, LaneClosed> {
        let shared = &self.dispatcher.shared;
        let item = match self.turns.offer(item, Inbound::into_owned, |item| queued(shared, item)) {
            Offered::Here(item) => item,
            Offered::Queued => return Ok(None),
            Offered::Closed(_) => return Err(LaneClosed),
        };
        let step = match item {
            Inbound::Notification { method, params, trace } => self.step_notification(method, params, trace, cx),
            Inbound::Request { method, params, slot } => self.step_request(method, params, slot, cx),
        };
        self.stepped(step)
    }

    /// [`Lane::offer`] for a request, its parts as they are: when the lane is free (the common
    /// case) they go to its start as they are, never made into an [`Inbound`] that is moved
    /// along (built from the parse's 8-byte stores and copied in 16-byte loads, which the CPU
    /// cannot forward: a third of the reader's routing time under `perf record`, row A).
    #[inline(always)]
    pub(crate) fn offer_request(
        self: &Arc<Self>,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        slot: Arc<ReplySlot>,
        cx: &mut Context<'_>,
    ) -> Result<Option<Arc<ReplySlot>>, LaneClosed> {
        self.offer_parts(
            (method, params, slot),
            |lane, (method, params, slot), cx| lane.step_request(method, params, slot, cx),
            |(method, params, slot)| Inbound::Request { method, params, slot },
            cx,
        )
    }

    /// [`Lane::offer`] for a notification, its parts as they are (see [`Lane::offer_request`]).
    #[inline(always)]
    pub(crate) fn offer_notification(
        self: &Arc<Self>,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        trace: Option<Box<TraceMembers>>,
        cx: &mut Context<'_>,
    ) -> Result<Option<Arc<ReplySlot>>, LaneClosed> {
        self.offer_parts(
            (method, params, trace),
            |lane, (method, params, trace), cx| lane.step_notification(method, params, trace, cx),
            |(method, params, trace)| Inbound::Notification { method, params, trace },
            cx,
        )
    }

    /// A message's `parts` worked by `step` if the lane is free, else made one message by
    /// `whole` and offered (queued behind the task, or refused once the lane is closed).
    #[inline(always)]
    fn offer_parts<'a, P>(
        self: &Arc<Self>,
        parts: P,
        step: impl FnOnce(&Self, P, &mut Context<'_>) -> Step,
        whole: impl FnOnce(P) -> Inbound<'a>,
        cx: &mut Context<'_>,
    ) -> Result<Option<Arc<ReplySlot>>, LaneClosed> {
        if self.turns.try_here() {
            let step = step(self, parts, cx);
            return self.stepped(step);
        }
        self.offer(whole(parts), cx)
    }

    /// The lane after the reader worked a message on the spot: free again, or handed to the
    /// task with what it must finish or take first.
    #[inline(always)]
    fn stepped(self: &Arc<Self>, step: Step) -> Result<Option<Arc<ReplySlot>>, LaneClosed> {
        let handoff = match step {
            Step::Done(spare) => {
                self.turns.done_here();
                return Ok(spare);
            }
            Step::Handoff(handoff) => handoff,
        };
        let shared = &self.dispatcher.shared;
        let requeued = |item: &Inbound| {
            // Not taken after all: the task takes it first.
            let taken = self.taken.load(Ordering::Acquire);
            self.taken.store(taken - 1, Ordering::Release);
            queued(shared, item);
        };
        match self.turns.hand_off(handoff, requeued) {
            Ok(()) => {
                self.ensure_task();
                Ok(None)
            }
            Err(handoff) => {
                // The task stopped meanwhile (the connection is closing): nobody would take this.
                if let Handoff::Blocked(Inbound::Request { slot, .. }) = handoff {
                    slot.answer_unanswered("the connection closed before the request started");
                }
                Err(LaneClosed)
            }
        }
    }

    /// Count one message taken off the lane; its number. Only the lane's owner counts: no
    /// read-modify-write needed.
    #[inline(always)]
    fn take_one(&self) -> u64 {
        let taken = self.taken.load(Ordering::Acquire) + 1;
        self.taken.store(taken, Ordering::Release);
        taken
    }

    /// Dispatch one notification from the reader without waiting for anything. (The reader's
    /// steps count what they finish with a plain store, which a waiter sees through the answer
    /// it waits on: see `settle`.)
    #[inline(always)]
    fn step_notification(
        &self,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        trace: Option<Box<TraceMembers>>,
        cx: &mut Context<'_>,
    ) -> Step {
        let d = &self.dispatcher;
        let taken = self.take_one();
        let Some((name, mut fut)) = d.notification_start(method, params, trace, taken) else {
            d.shared.settle.note_handled(taken);
            return Step::Done(None);
        };
        // The first poll needs neither the name nor the stop signal as its own: only a handler
        // that goes on becomes a job.
        match poll_notification(&mut fut, name, cx) {
            Poll::Ready(()) => {
                d.shared.settle.note_handled(taken);
                Step::Done(None)
            }
            Poll::Pending => {
                Step::Handoff(Handoff::Running(NotificationJob::new(name.clone(), fut, d.shared.lifecycle.handlers())))
            }
        }
    }

    /// Dispatch one request from the reader without waiting for anything.
    #[inline(always)]
    fn step_request(
        &self,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        slot: Arc<ReplySlot>,
        cx: &mut Context<'_>,
    ) -> Step {
        let d = &self.dispatcher;
        let taken = self.take_one();
        if !slot.is_cancelled() {
            let blocked = |method, params, slot| {
                Step::Handoff(Handoff::Blocked(Inbound::Request { method, params, slot }.into_owned()))
            };
            if !d.shared.outbound.has_room() {
                return blocked(method, params, slot);
            }
            let bytes = params_len(params.as_deref());
            let admitted = match &d.own {
                Some(own) if own.fits(bytes) => Admitted::Deferred(own, bytes),
                Some(_) => return blocked(method, params, slot),
                None => match permits::try_take(&d.admission, bytes) {
                    Some(permit) => Admitted::Taken(permit),
                    None => return blocked(method, params, slot),
                },
            };
            d.shared.settle.note_handled(taken);
            return Step::Done(d.start_request(method, params, slot, admitted, cx));
        }
        d.shared.settle.note_handled(taken);
        slot.answer_unanswered("cancelled before it started");
        Step::Done(None)
    }

    /// Someone works the lane (a notification handler still running, messages queued).
    pub(crate) fn is_busy(&self) -> bool {
        self.turns.is_busy()
    }

    /// The reader stopped (after the peer's EOF the messages it read are still dispatched; then
    /// the task ends).
    pub(crate) fn input_ended(&self) {
        self.turns.input_ended();
    }

    /// The dispatcher task: work the lane whenever it is handed over, until the connection
    /// closes; then answer the requests that never started.
    pub(crate) async fn run(self: Arc<Self>) {
        let d = &self.dispatcher;
        // Not `shutdown`: after the peer's EOF the messages already read are still dispatched
        // (the reader then stops offering).
        let shutdown = d.shared.lifecycle.handlers().clone();
        let read_ahead = d.shared.config.limits.read_ahead.max(1);
        // One cancellation future for the whole loop (a new one per message costs a registration).
        let stopped = shutdown.cancelled();
        tokio::pin!(stopped);
        'run: loop {
            tokio::select! {
                biased;
                _ = &mut stopped => break,
                owns = std::future::poll_fn(|cx| self.turns.poll_turn(cx)) => if !owns {
                    break;
                },
            }
            if let Some(job) = self.turns.take_current() {
                if !job.await {
                    break;
                }
                d.shared.settle.set_handled(self.taken.load(Ordering::Acquire));
            }
            while let Some(item) = self.turns.next() {
                d.shared.read_ahead.took_one(read_ahead);
                d.shared.release_inbound(item.held_bytes());
                let taken = self.taken.load(Ordering::Acquire) + 1;
                self.taken.store(taken, Ordering::Release);
                if !d.dispatch(item, taken, &shutdown).await {
                    break 'run;
                }
                // Everything taken so far is handled: notifications ran to completion, requests started.
                d.shared.settle.set_handled(taken);
            }
        }
        // The connection is closing: answer what never started.
        for item in self.turns.close() {
            if let Inbound::Request { slot, .. } = item {
                slot.answer_unanswered("the connection closed before the request started");
            }
        }
    }
}

impl Dispatcher {
    /// Dispatch one message on the task, waiting as needed; `false` if the connection closed.
    async fn dispatch(&self, item: Inbound<'static>, taken: u64, shutdown: &CancellationToken) -> bool {
        match item {
            Inbound::Notification { method, params, trace } => match self
                .notification_start(method, params, trace, taken)
            {
                Some((name, fut)) => NotificationJob::new(name.clone(), fut, self.shared.lifecycle.handlers()).await,
                None => true,
            },
            Inbound::Request { method, params, slot } => {
                // A request counts as handled once taken: a call awaiting the lane must not
                // wait for a concurrency slot that its own caller may be holding.
                self.shared.settle.set_handled(taken);
                let closed = "the connection closed before the request started";
                if slot.is_cancelled() {
                    slot.answer_unanswered("cancelled before it started");
                    return true;
                }
                // Answers the peer has not read yet hold back new work.
                tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => {
                        slot.answer_unanswered(closed);
                        return false;
                    }
                    _ = self.shared.outbound.wait_room() => {}
                }
                let bytes = params_len(params.as_deref());
                let permit = match permits::try_take(&self.admission, bytes) {
                    Some(permit) => Some(permit),
                    // A request cancelled while it waits for a slot is answered by the reader at
                    // once; the lane goes on to what follows it.
                    None => tokio::select! {
                        biased;
                        _ = shutdown.cancelled() => None,
                        _ = slot.cancellation().cancelled() => {
                            slot.answer_unanswered("cancelled before it started");
                            return true;
                        }
                        permit = permits::take(&self.admission, bytes) => Some(permit),
                    },
                };
                let Some(permit) = permit else {
                    slot.answer_unanswered(closed);
                    return false;
                };
                slot.set_queued(false);
                if slot.is_answered() {
                    return true;
                }
                let mut start = Some((method, params, slot, Admitted::Taken(permit)));
                std::future::poll_fn(|cx| {
                    if let Some((method, params, slot, permit)) = start.take() {
                        let _ = self.start_request(method, params, slot, permit, cx);
                    }
                    Poll::Ready(())
                })
                .await;
                true
            }
        }
    }

    /// Start a request's handler: its first poll on the lane (with `cx`), the rest as its own
    /// task (which polls it again at once, so the waker that counts is the task's).
    fn start_request(
        &self,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        slot: Arc<ReplySlot>,
        permit: Admitted<'_>,
        cx: &mut Context<'_>,
    ) -> Option<Arc<ReplySlot>> {
        if let Some((hook, peer)) = &self.hook
            && slot.hold_hook()
        {
            return self.start_hooked(hook, peer, method, params, slot, permit, cx);
        }
        // The first poll on the lane; most handlers finish in it, and then cost no task. Two
        // copies the CPU cannot forward are avoided: the request and its responder are made
        // inside (moved in as parts, not as structs whose flags were just stored a byte at a
        // time), and the poll's outcome is written where it is read (not returned beside the
        // handler: a byte and seven of padding, copied as words just after the byte's store).
        let mut first = Poll::Pending;
        let started = poll_supervised(Some(&slot), || {
            let responder = Responder::new(slot.clone());
            let start = RequestStart { method, params, slot: &slot };
            let mut handler = self.request_future(start, responder)?;
            first = handler.as_mut().poll(cx);
            Some(handler)
        });
        let handler = match started {
            Ok(Some(handler)) => handler,
            Ok(None) => return spare(slot),
            // Answered with the panic's message.
            Err(_) => return None,
        };
        self.go_on(handler, first, slot, permit, None)
    }

    /// After a request handler's first poll: still unanswered, it is entered in the map of
    /// requests in flight; finished, it costs no task; still running, it goes on as a task of
    /// its own (with the hook's state, if one is held).
    #[inline]
    fn go_on(
        &self,
        handler: HandlerFuture,
        first: Poll<()>,
        slot: Arc<ReplySlot>,
        permit: Admitted<'_>,
        hooked: Option<(&Arc<dyn Watcher>, HeldHook)>,
    ) -> Option<Arc<ReplySlot>> {
        // Still unanswered (running on, or its responder handed to another task): in flight,
        // so it must be found by a cancellation or a reused id from here on.
        if !slot.is_answered() {
            slot.register();
        }
        if first.is_ready() {
            drop(handler);
            if let Some((hook, mut held)) = hooked {
                held.let_go(hook, &slot);
            }
            return spare(slot);
        }
        let permit = permit.owned();
        let held = hooked.map(|(hook, held)| (hook.clone(), held));
        self.tracker.spawn(async move {
            let cancel = slot.cancellation().clone();
            let end = supervise(handler, held, &slot, &cancel).await;
            // A handler that finished may have handed its responder to another task: only a
            // cancelled one is answered here.
            if end == End::Cancelled {
                slot.answer_unanswered("cancelled");
            }
            drop(permit);
        });
        None
    }

    /// [`Dispatcher::start_request`] under the connection's hook: the hook's state made and
    /// held here, the handler built and polled inside its scope, the hook told after the poll
    /// that answered (most often the first), or by whoever answers once the handler has ended.
    #[allow(clippy::too_many_arguments)]
    fn start_hooked(
        &self,
        hook: &Arc<dyn Watcher>,
        peer: &PeerInfo,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        slot: Arc<ReplySlot>,
        permit: Admitted<'_>,
        cx: &mut Context<'_>,
    ) -> Option<Arc<ReplySlot>> {
        let mut held = HeldHook { state: None, scoped: false };
        // One supervision for the hook's state, the handler's start and its first poll: a hook
        // that panics answers the request `-32603`, as a handler would. (The poll's outcome is
        // written in place, as in `start_request`; the hook reads the request's parts where
        // they are, and the request is made after it.)
        let mut first = Poll::Pending;
        let started = poll_supervised(Some(&slot), || {
            let state = hook.on_inbound(&method, &slot.id, params.as_deref(), peer);
            let (state, scoped) = held.keep(&**hook, state);
            let start = || {
                let responder = Responder::new(slot.clone());
                let start = RequestStart { method, params, slot: &slot };
                let mut handler = self.request_future(start, responder)?;
                first = handler.as_mut().poll(cx);
                Some(handler)
            };
            if scoped { in_scope(&**hook, state, start) } else { start() }
        });
        held.after_poll(&**hook, &slot);
        let handler = match started {
            Ok(Some(handler)) => handler,
            Ok(None) | Err(_) => {
                held.let_go(hook, &slot);
                return if started.is_ok() { spare(slot) } else { None };
            }
        };
        self.go_on(handler, first, slot, permit, Some((hook, held)))
    }

    /// The connection, as what it reads knows it.
    fn host(&self) -> Arc<dyn Host> {
        self.shared.clone()
    }

    /// The handler future for a request, or `None` when it was answered on the spot.
    fn request_future(&self, start: RequestStart<'_>, responder: Responder) -> Option<HandlerFuture> {
        // Methods a feature serves are its own, whatever the router serves.
        if let Some(extension) = self.shared.seam.serving(&start.method) {
            return Some(extension.clone().serve(&self.shared, start.into_request(), responder));
        }
        match self.router.route(&start.method) {
            Some(Route::Request(f)) => Some(f(start, responder)),
            // A request for a notification handler: run it and answer `null` (StreamJsonRpc does the same).
            Some(Route::Notification(f)) => {
                let RequestStart { method, params, slot } = start;
                let host = slot.host.clone();
                let trace = slot.trace().map(|t| Box::new(t.clone()));
                let fut = f(NotificationStart { method, params, host, lane: None, trace });
                Some(Box::pin(async move {
                    fut.await;
                    responder.ok(());
                }))
            }
            None => match self.router.fallback_handler() {
                Some(f) => Some(f(start, responder)),
                None => {
                    tracing::debug!(
                        target: crate::LOG_TARGET,
                        method = %self.shared.quote(&*start.method),
                        id = %self.shared.quote(&start.slot.id),
                        "unknown method answered -32601"
                    );
                    responder.err(ErrorObject::method_not_found(&start.method));
                    None
                }
            },
        }
    }

    /// A notification's handler future and the method's registered name (`None` when nobody
    /// handles it, or building it panicked).
    fn notification_start(
        &self,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        trace: Option<Box<TraceMembers>>,
        seq: u64,
    ) -> Option<(&Arc<str>, HandlerFuture)> {
        let Some((name, route)) = self.router.route_named(&method) else {
            let Some((name, fallback)) = self.router.notification_fallback_handler() else {
                self.shared.seam.unrouted(&self.shared, &method, params.as_deref());
                return None;
            };
            let host = self.host();
            let started =
                poll_supervised(None, || fallback(NotificationStart { method, params, host, lane: Some(seq), trace }));
            return match started {
                Ok(fut) => Some((name, fut)),
                Err(payload) => {
                    tracing::error!(target: crate::LOG_TARGET, method = %name, panic = panic_message(&payload), "notification handler panicked");
                    None
                }
            };
        };
        let started = poll_supervised(None, || self.notification_future(route, method, params, trace, seq));
        match started {
            Ok(fut) => Some((name, fut)),
            Err(payload) => {
                tracing::error!(target: crate::LOG_TARGET, method = %name, panic = panic_message(&payload), "notification handler panicked");
                None
            }
        }
    }

    /// The handler future for a notification on `route`.
    fn notification_future(
        &self,
        route: &Route,
        method: MethodName<'_>,
        params: Option<Cow<'_, RawValue>>,
        trace: Option<Box<TraceMembers>>,
        seq: u64,
    ) -> HandlerFuture {
        // The handler runs on the lane: its handle's calls do not wait for it (see `Handle::at_lane`).
        match route {
            Route::Notification(f) => {
                f(NotificationStart { method, params, host: self.host(), lane: Some(seq), trace })
            }
            // A notification for a request handler: run it and discard the answer.
            Route::Request(f) => {
                let slot = ReplySlot::on_lane(self.host(), seq, trace);
                let start = RequestStart { method, params, slot: &slot };
                let Some((hook, peer)) = &self.hook else { return f(start, Responder::new(slot.clone())) };
                // Under the connection's hook, in its own future (nobody is answered: the hook
                // is told a result once the handler ends).
                let state = hook.on_inbound(&start.method, &start.slot.id, start.params(), peer);
                let mut handler = f(start, Responder::new(slot.clone()));
                let hook = hook.clone();
                Box::pin(async move {
                    let scope: &dyn SlotHook = &*hook;
                    let ((), state) = crate::handler::scoped(scope, state, |cx| handler.as_mut().poll(cx)).await;
                    hook.on_response(&mut Some(state), &Ok(None));
                })
            }
        }
    }
}

/// The bytes a request's params hold (what its permit weighs).
fn params_len(params: Option<&RawValue>) -> usize {
    params.map_or(0, |p| p.get().len())
}

/// Poll a notification handler once under panic supervision; a panic is logged and ends it.
fn poll_notification(fut: &mut HandlerFuture, method: &str, cx: &mut Context<'_>) -> Poll<()> {
    let polled = poll_supervised(None, || fut.as_mut().poll(cx));
    match polled {
        Ok(poll) => poll,
        Err(payload) => {
            tracing::error!(target: crate::LOG_TARGET, %method, panic = panic_message(&payload), "notification handler panicked");
            Poll::Ready(())
        }
    }
}

/// A notification handler run to completion on the lane, under panic supervision: `true` when it
/// finished (or panicked: logged), `false` when the connection closed first (it is dropped).
/// Movable between polls, so the reader can start it and hand it to the task.
struct NotificationJob {
    /// The method's registered name (shared with the router), for the log of a panic.
    method: Arc<str>,
    fut: Option<HandlerFuture>,
    stopped: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl NotificationJob {
    fn new(method: Arc<str>, fut: HandlerFuture, stop: &CancellationToken) -> Self {
        NotificationJob { method, fut: Some(fut), stopped: Box::pin(stop.clone().cancelled_owned()) }
    }
}

impl Future for NotificationJob {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = &mut *self;
        if let Some(fut) = this.fut.as_mut()
            && poll_notification(fut, &this.method, cx).is_ready()
        {
            this.fut = None;
            return Poll::Ready(true);
        }
        match this.stopped.as_mut().poll(cx) {
            Poll::Ready(()) => {
                // Dropped here, inside the lane's poll, like a handler that finished.
                this.fut = None;
                Poll::Ready(false)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    Finished,
    Panicked,
    Cancelled,
}

/// Drive a request handler until it finishes, panics (answered by [`poll_supervised`]) or
/// `cancel` fires (then the handler is dropped). With the connection's hook `held`: each poll
/// inside its scope, the hook told after the poll that answered, or its state left in the reply
/// slot once the handler has ended (or this is dropped) unanswered.
async fn supervise(
    fut: HandlerFuture,
    held: Option<(Arc<dyn Watcher>, HeldHook)>,
    slot: &Arc<ReplySlot>,
    cancel: &CancellationToken,
) -> End {
    // Declared before the handler: dropped after it, however this ends (an answer the
    // handler's drop gives finds the state still held).
    let mut held = Holding { held, slot };
    let mut fut = Some(fut);
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let end = std::future::poll_fn(|cx| {
        if let Some(f) = fut.as_mut() {
            let polled = match held.held.as_mut() {
                None => poll_supervised(Some(slot), || f.as_mut().poll(cx)),
                Some((hook, held)) => {
                    let polled = held.poll(&**hook, slot, || f.as_mut().poll(cx));
                    held.after_poll(&**hook, slot);
                    polled
                }
            };
            match polled {
                Ok(Poll::Ready(())) => return Poll::Ready(End::Finished),
                Ok(Poll::Pending) => {}
                Err(_) => return Poll::Ready(End::Panicked),
            }
        }
        cancelled.as_mut().poll(cx).map(|()| End::Cancelled)
    })
    .await;
    drop(fut);
    drop(held);
    end
}

/// Lets go of a [`HeldHook`] when dropped.
struct Holding<'a> {
    held: Option<(Arc<dyn Watcher>, HeldHook)>,
    slot: &'a ReplySlot,
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        if let Some((hook, held)) = self.held.as_mut() {
            held.let_go(hook, self.slot);
        }
    }
}

/// The connection's hook's state for one request, held by whoever polls its handler (the
/// lane, then the handler's task): the holder's side of [`crate::sync::baton`]. The hook is
/// given to each step (the lane borrows the connection's; the task keeps a clone).
struct HeldHook {
    state: Option<HookState>,
    /// Polls run inside the hook's scope.
    scoped: bool,
}

impl HeldHook {
    /// Keep the hook's state for the request.
    fn keep(&mut self, hook: &dyn Watcher, state: HookState) -> (&HookState, bool) {
        self.scoped = hook.scoped(&state);
        (self.state.insert(state), self.scoped)
    }

    /// One poll of the handler, inside the hook's scope if it has one.
    fn poll<R>(
        &self,
        hook: &dyn Watcher,
        slot: &ReplySlot,
        poll: impl FnOnce() -> R,
    ) -> Result<R, Box<dyn std::any::Any + Send>> {
        match &self.state {
            Some(state) if self.scoped => poll_supervised(Some(slot), || in_scope(hook, state, poll)),
            _ => poll_supervised(Some(slot), poll),
        }
    }

    /// After a poll: answered in it (or before), the hook is told now.
    #[inline]
    fn after_poll(&mut self, hook: &dyn Watcher, slot: &ReplySlot) {
        if let Some(answer) = slot.hook_told()
            && self.state.is_some()
        {
            tell_hook(hook, &mut self.state, answer.as_ref().copied());
        }
    }

    /// The handler has ended (or is dropped): the state waits in the slot for the answer, or,
    /// answered meanwhile, the hook is told now.
    #[inline]
    fn let_go(&mut self, hook: &Arc<dyn Watcher>, slot: &ReplySlot) {
        // Told already (by `after_poll`, which also takes the answer to a hook that panicked
        // before it made its state): nothing held.
        let Some(state) = self.state.take() else { return };
        if let Err((state, answer)) = slot.leave_hook(hook.clone(), state) {
            tell_hook(&**hook, &mut Some(state), answer.as_ref().copied());
        }
    }
}

/// A finished request's reply slot, to be reused by the reader unless it is shared and holds
/// something (see [`ReplySlot::retire`]: a shared one that holds nothing is kept until the next
/// request's renewal finds it shared).
fn spare(mut slot: Arc<ReplySlot>) -> Option<Arc<ReplySlot>> {
    ReplySlot::retire(&mut slot).then_some(slot)
}
