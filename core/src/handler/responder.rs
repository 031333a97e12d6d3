//! The answer-once reply handle of an inbound request.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::Batch;
use super::host::Host;
use crate::message::bind::{Binder, UNBOUND};
use crate::message::{ErrorObject, Id, encode_response, encode_response_json};
use crate::middleware::state::HookState;
use crate::sync::baton::{Baton, Crossing, Told};

/// A request handler's panic supervision, per reply slot (no thread-local state): while its
/// handler is polled the slot is `POLLING`; a [`Responder`] dropped by a panicking thread then
/// (the handler itself unwinding, or a task it handed the responder to) moves it to `DEFERRED`
/// and leaves the answer to the supervisor, which knows the panic's message if it was the
/// handler's own. Outside a poll, such a responder answers itself.
///
/// | from → to | by |
/// |---|---|
/// | `IDLE` → `POLLING` | [`poll_supervised`], before the poll |
/// | `POLLING` → `DEFERRED` | a responder dropped while its thread panics (compare-and-swap) |
/// | `POLLING`, `DEFERRED` → `IDLE` | [`poll_supervised`], after the poll: a swap, `DEFERRED` meaning it answers; a plain store once the request is answered |
mod supervision {
    pub(super) const IDLE: u8 = 0;
    pub(super) const POLLING: u8 = 1;
    pub(super) const DEFERRED: u8 = 2;
}

/// Poll (or start) a handler under panic supervision: a panic is caught and returned; with a
/// `slot`, its request is answered `-32603` with the panic's message, or, when another task
/// holding its responder panicked meanwhile, `-32603` saying so.
pub(crate) fn poll_supervised<R>(slot: Option<&ReplySlot>, poll: impl FnOnce() -> R) -> Result<R, Box<dyn Any + Send>> {
    let Some(slot) = slot else {
        return std::panic::catch_unwind(AssertUnwindSafe(poll));
    };
    // A plain store: a responder's compare-and-swap and the swap below are read-modify-writes
    // of this one atomic, each ordered before or after it; no other memory hangs on it.
    slot.supervision.store(supervision::POLLING, Ordering::Release);
    let out = std::panic::catch_unwind(AssertUnwindSafe(poll));
    // Answered already (most requests are, in their first poll): a deferral changes nothing
    // (whoever would answer finds it answered), so the slot is only made `IDLE` again, by a
    // plain store; a responder's compare-and-swap that comes after it fails and answers itself,
    // which is nothing to do either.
    let deferred = if slot.is_answered() {
        slot.supervision.store(supervision::IDLE, Ordering::Release);
        false
    } else {
        slot.supervision.swap(supervision::IDLE, Ordering::SeqCst) == supervision::DEFERRED
    };
    match &out {
        Err(payload) => slot.answer_panic(payload),
        Ok(_) if deferred => slot.answer_unanswered("the task holding the reply panicked"),
        Ok(_) => {}
    }
    out
}

/// Run `f` inside `hook`'s scope for `state` (outside it, if the scope does not run it; once,
/// if it runs it twice). Under [`poll_supervised`], a hook that panics in its scope is the
/// handler's panic.
pub(crate) fn in_scope<R>(hook: &dyn SlotHook, state: &HookState, f: impl FnOnce() -> R) -> R {
    let mut f = Some(f);
    let mut out = None;
    hook.in_scope(state, &mut || {
        if let Some(f) = f.take() {
            out = Some(f());
        }
    });
    match (out, f) {
        (Some(out), _) => out,
        (None, Some(f)) => f(),
        (None, None) => unreachable!("`f` ran, so `out` is set"),
    }
}

/// A hook as the connection runs it around an inbound request (its state held by the
/// dispatcher, see [`ReplySlot::hold_hook`]).
pub(crate) trait SlotHook: Send + Sync + 'static {
    /// Whether [`SlotHook::in_scope`] does anything for the call of `state` (`false`: it is
    /// polled without it).
    fn scoped(&self, state: &HookState) -> bool;
    /// Run `f` (one poll) inside the hook's scope for the call.
    fn in_scope(&self, state: &HookState, f: &mut dyn FnMut());
    /// The request is answered with this (the state taken from where it is held: moved whole
    /// into the call, it would be copied in wider loads than its stores).
    fn on_answer(&self, state: &mut Option<HookState>, answer: Result<(), &ErrorObject>);
}

/// Poll with `poll` inside `hook`'s scope until it is ready; then the output, with the state
/// back. The state is moved into the poll, not borrowed across an await: it is `Send`, not
/// `Sync`.
pub(crate) fn scoped<'h, T>(
    hook: &'h dyn SlotHook,
    state: HookState,
    mut poll: impl FnMut(&mut std::task::Context<'_>) -> std::task::Poll<T> + Send + 'h,
) -> impl Future<Output = (T, HookState)> + Send + 'h {
    use std::task::Poll;
    let mut state = Some(state);
    std::future::poll_fn(move |cx| {
        let Some(now) = state.as_ref() else { return Poll::Pending };
        let mut out = Poll::Pending;
        hook.in_scope(now, &mut || out = poll(cx));
        let out = std::task::ready!(out);
        state.take().map_or(Poll::Pending, |state| Poll::Ready((out, state)))
    })
}

/// Tell a hook how its request ended. The request is answered: a panic in the hook changes
/// nothing, and is logged, not let through to whoever answered.
pub(crate) fn tell_hook(watcher: &dyn SlotHook, state: &mut Option<HookState>, answer: Result<(), &ErrorObject>) {
    if let Err(payload) = std::panic::catch_unwind(AssertUnwindSafe(|| watcher.on_answer(state, answer))) {
        tracing::error!(target: crate::LOG_TARGET, panic = %panic_message(&payload), "a hook panicked after the answer");
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

/// The one place an inbound request is answered from, and its cancellation state. Shared by the
/// [`Responder`], the request's context, the dispatcher (which answers `-32800` on cancellation
/// and `-32603` on a panic) and the connection's map of requests in flight (the reader cancels
/// through it).
pub(crate) struct ReplySlot {
    pub(crate) id: Id,
    answered: AtomicBool,
    /// The connection that read it.
    pub(crate) host: Arc<dyn Host>,
    /// For a notification routed to a request handler: its place on the lane (see
    /// `Handle::at_lane`).
    pub(crate) lane: Option<u64>,
    /// Belongs in the connection's map of requests in flight under `id` while unanswered (a
    /// request read from the peer; not a notification routed to a request handler, nor an
    /// invalid batch member).
    tracked: bool,
    /// Is (or was) in that map. A request is entered lazily, only once it may be looked up:
    /// queued behind others, still running after its first poll, or reporting progress. One
    /// answered in its first poll on the reader never costs the map a lock.
    registered: AtomicBool,
    batch: Option<Arc<Batch>>,
    /// No answer at all (a notification routed to a request handler).
    silent: bool,
    /// Cancelled (by the peer, or by the connection closing before it started).
    cancelled: AtomicBool,
    /// The peer cancelled it (as opposed to the connection closing).
    peer_cancelled: AtomicBool,
    /// Waiting on the lane to be started (queued behind other messages, or for a concurrency
    /// slot): a cancellation read meanwhile answers it at once instead of when it is taken.
    queued: AtomicBool,
    /// The token handlers see, made only when one asks for it (most never do): a child of the
    /// connection's handler token, cancelled at once if the request already is.
    token: OnceLock<CancellationToken>,
    /// Panic supervision of its handler (see [`poll_supervised`]).
    supervision: AtomicU8,
    /// The reason the peer gave with its cancellation (MCP's `"reason"`), set before the token fires.
    cancel_reason: OnceLock<Box<str>>,
    /// The protocol forbids cancelling this request (MCP's `initialize`): the peer's
    /// cancellation is ignored.
    never_cancelled: bool,
    /// Middleware wraps this request ([`ReplySlot::watch`]): set before the slot is shared, so a
    /// connection without layers tests a plain bool and nothing else.
    watched: bool,
    /// Who tells the connection's hook the answer: the dispatcher polling the handler, which
    /// holds the hook's state, or, once the handler has ended, whoever answers (see
    /// [`Baton`]). Its cell is the answer's watch, told the answer once it is given (middleware
    /// observing it; a slot whose hook's state is held is watched by nothing else). Only used
    /// when `watched`.
    hook: Baton<Watch>,
    /// What the layers attached to the call, for its handler's context; only set when `watched`.
    extensions: OnceLock<super::Extensions>,
    /// The request's top-level trace context members, kept for a layer that reads them; only
    /// set when `watched`.
    trace: Option<Box<crate::message::TraceMembers>>,
}

/// Empty `once` if it holds a value (most never do: a check, not a drop and a new cell).
fn forget_once<T>(once: &mut OnceLock<T>) {
    if once.get().is_some() {
        *once = OnceLock::new();
    }
}

impl ReplySlot {
    pub(crate) fn new(
        host: Arc<dyn Host>,
        id: Id,
        tracked: bool,
        batch: Option<Arc<Batch>>,
        silent: bool,
    ) -> Arc<Self> {
        Arc::new(ReplySlot {
            id,
            answered: AtomicBool::new(false),
            host,
            lane: None,
            tracked,
            registered: AtomicBool::new(false),
            batch,
            silent,
            cancelled: AtomicBool::new(false),
            peer_cancelled: AtomicBool::new(false),
            queued: AtomicBool::new(false),
            token: OnceLock::new(),
            supervision: AtomicU8::new(supervision::IDLE),
            cancel_reason: OnceLock::new(),
            never_cancelled: false,
            watched: false,
            hook: Baton::new(Watch::Idle),
            extensions: OnceLock::new(),
            trace: None,
        })
    }

    /// The silent slot of a notification routed to a request handler, which runs on the lane
    /// at `seq` (nobody is answered).
    pub(crate) fn on_lane(
        host: Arc<dyn Host>,
        seq: u64,
        trace: Option<Box<crate::message::TraceMembers>>,
    ) -> Arc<Self> {
        let mut slot = Self::new(host, Id::Null, false, None, true);
        if let Some(s) = Arc::get_mut(&mut slot) {
            s.lane = Some(seq);
            s.trace = trace;
        }
        slot
    }

    /// A slot nobody else holds any more, made ready for another request of the same
    /// connection (`false`: somebody still holds it), `watched` or not ([`ReplySlot::set_watched`]).
    /// Saves the allocation of a new one.
    #[allow(clippy::type_complexity)]
    pub(crate) fn renew(
        slot: &mut Arc<Self>,
        id: Id,
        batch: Option<Arc<Batch>>,
        watched: bool,
    ) -> Result<(), (Id, Option<Arc<Batch>>)> {
        let Some(s) = Arc::get_mut(slot) else { return Err((id, batch)) };
        s.id = id;
        *s.answered.get_mut() = false;
        s.tracked = true;
        *s.registered.get_mut() = false;
        s.batch = batch;
        s.silent = false;
        *s.cancelled.get_mut() = false;
        *s.peer_cancelled.get_mut() = false;
        *s.queued.get_mut() = false;
        // A spare slot was retired (see `retire`), which emptied its token and reason; an empty
        // cell is left as it is (not dropped and made anew), a full one emptied.
        forget_once(&mut s.token);
        *s.supervision.get_mut() = supervision::IDLE;
        forget_once(&mut s.cancel_reason);
        s.never_cancelled = false;
        if s.watched {
            s.hook.reset();
            // Most often all three are empty already: nothing to drop.
            let watch = s.hook.cell_mut();
            if !matches!(watch, Watch::Idle) {
                *watch = Watch::Idle;
            }
            if s.extensions.get().is_some() {
                s.extensions = OnceLock::new();
            }
            if s.trace.is_some() {
                s.trace = None;
            }
        }
        s.watched = watched;
        Ok(())
    }

    /// Let go of what a finished request's slot still holds (before it waits to be renewed);
    /// `false` if it is shared (another task holds its responder) and holds something.
    ///
    /// Most often it holds nothing to let go (no batch, no token, no reason): it is then kept as
    /// it is, without the exclusive look of [`Arc::get_mut`] (an atomic compare-and-swap a
    /// request, ~6 ns). [`ReplySlot::renew`] makes that look before the slot is used again; one
    /// still shared then is dropped there and a new one made.
    pub(crate) fn retire(slot: &mut Arc<Self>) -> bool {
        if slot.batch.is_none() && slot.token.get().is_none() && slot.cancel_reason.get().is_none() {
            return true;
        }
        let Some(s) = Arc::get_mut(slot) else { return false };
        s.batch = None;
        forget_once(&mut s.token);
        forget_once(&mut s.cancel_reason);
        true
    }

    /// Enter the request in the map of requests in flight (unless it is answered already), so
    /// that the peer's cancellation, a reused id or a progress report finds it. The reader does
    /// this before it reads on, for every request that may still be unanswered then.
    pub(crate) fn register(self: &Arc<Self>) {
        if !self.tracked || self.registered.load(Ordering::Relaxed) {
            return;
        }
        self.host.enter(self);
    }

    /// Called by the host under the lock of its map of requests in flight, before it enters
    /// this slot: `false` when the request is answered already (then it enters nothing). Pairs
    /// with `answer_with`: either it sees `registered` and takes the entry out, or this sees
    /// `answered`.
    pub(crate) fn mark_registered(&self) -> bool {
        self.registered.store(true, Ordering::SeqCst);
        !self.answered.load(Ordering::SeqCst)
    }

    /// Whether this is the request in flight under its id (not answered, not replaced).
    pub(crate) fn in_flight(self: &Arc<Self>) -> bool {
        self.host.in_flight(self)
    }

    /// The request's cancellation token (fires when the peer cancels it or the connection ends).
    pub(crate) fn cancellation(&self) -> &CancellationToken {
        let token = self.token.get_or_init(|| self.host.handlers().child_token());
        // Pairs with `cancel`: whichever of the two comes second sees the other's write.
        if self.cancelled.load(Ordering::SeqCst) {
            token.cancel();
        }
        token
    }

    /// Whether the request is cancelled (by the peer, or by the connection ending).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
            || self.host.handlers_cancelled()
            || self.token.get().is_some_and(CancellationToken::is_cancelled)
    }

    /// Mark a request the protocol forbids cancelling (before anyone else holds its slot).
    pub(crate) fn set_never_cancelled(slot: &mut Arc<Self>) {
        if let Some(s) = Arc::get_mut(slot) {
            s.never_cancelled = true;
        }
    }

    /// Mark a request that middleware wraps (before anyone else holds its slot): its answer
    /// can be watched ([`ReplySlot::watch`]) and its handler's context carries extensions.
    pub(crate) fn set_watched(slot: &mut Arc<Self>) {
        if let Some(s) = Arc::get_mut(slot) {
            s.watched = true;
        }
    }

    /// Start watching for the answer: [`ReplySlot::watched_answer`] then tells it (`Ok` for a
    /// result, the error object otherwise; `Err(Closed)` when the handler's responder was dropped
    /// unanswered). `false` unless the slot is watched. Replaces an earlier watch. The answer is
    /// kept in the slot itself: nothing is allocated, and a handler that answered before its
    /// future ended is seen on the first poll.
    pub(crate) fn watch(&self) -> bool {
        if !self.watched {
            return false;
        }
        *self.watch_state() = Watch::Waiting(None);
        true
    }

    /// The dispatcher holds the connection's hook's state for this request (`false`: answered
    /// already, or not watched). It asks [`ReplySlot::hook_told`] after each poll of the
    /// handler, and gives the state to [`ReplySlot::leave_hook`] once the handler ends.
    pub(crate) fn hold_hook(&self) -> bool {
        self.watched && self.hook.hold()
    }

    /// The answer, if the request was answered since the dispatcher took the hook's state on
    /// (then it tells the hook).
    #[inline]
    pub(crate) fn hook_told(&self) -> Option<Result<(), ErrorObject>> {
        self.hook.told()
    }

    /// The handler ended unanswered: its hook's state waits here for the answer, whose giver
    /// tells the hook. `Err`: answered meanwhile; the state back with the answer.
    pub(crate) fn leave_hook(
        &self,
        hook: Arc<dyn SlotHook>,
        state: HookState,
    ) -> Result<(), (HookState, Result<(), ErrorObject>)> {
        self.hook.leave((hook, state)).map_err(|((_, state), answer)| (state, answer))
    }

    /// What [`ReplySlot::watch`] learnt, once it has.
    pub(crate) fn poll_watched(
        &self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Result<(), ErrorObject>, Closed>> {
        use std::task::Poll;
        let mut state = self.watch_state();
        match std::mem::replace(&mut *state, Watch::Idle) {
            Watch::Told(answer) => Poll::Ready(Ok(answer)),
            Watch::Closed | Watch::Idle => Poll::Ready(Err(Closed)),
            // The hook's, not a watch's (never both on one slot): left as it was.
            other @ (Watch::HookLeft(..) | Watch::HookError(_)) => {
                *state = other;
                Poll::Ready(Err(Closed))
            }
            Watch::Waiting(_) => {
                *state = Watch::Waiting(Some(cx.waker().clone()));
                Poll::Pending
            }
        }
    }

    /// What [`ReplySlot::watch`] learns, as a future.
    pub(crate) fn watched_answer(
        self: Arc<Self>,
    ) -> impl std::future::Future<Output = Result<Result<(), ErrorObject>, Closed>> + Send {
        std::future::poll_fn(move |cx| self.poll_watched(cx))
    }

    fn watch_state(&self) -> crate::sync::MutexGuard<'_, Watch> {
        crate::sync::lock(self.hook.cell())
    }

    /// End a watch waiting for an answer with `to` (the answer, or closed), waking its future.
    fn end_watch(&self, to: impl FnOnce() -> Watch) {
        let mut state = self.watch_state();
        if let Watch::Waiting(waker) = &mut *state {
            let waker = waker.take();
            *state = to();
            drop(state);
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    /// Keep the request's top-level trace context members (before the slot is shared; a
    /// watched slot only).
    pub(crate) fn set_trace(slot: &mut Arc<Self>, trace: Box<crate::message::TraceMembers>) {
        if let Some(s) = Arc::get_mut(slot)
            && s.watched
        {
            s.trace = Some(trace);
        }
    }

    /// The request's top-level trace context members, if kept.
    pub(crate) fn trace(&self) -> Option<&crate::message::TraceMembers> {
        self.trace.as_deref()
    }

    /// Attach the call's extensions for its handler (the first time only).
    pub(crate) fn set_extensions(&self, extensions: super::Extensions) {
        let _ = self.extensions.set(extensions);
    }

    /// What middleware attached to the call.
    pub(crate) fn extensions(&self) -> &super::Extensions {
        self.extensions.get().unwrap_or(&super::extensions::EMPTY)
    }

    /// Tell the watch the answer.
    fn tell_watch(&self, outcome: Result<(), &ErrorObject>) {
        let mut watch = self.watch_state();
        if let Watch::Waiting(waker) = &mut *watch {
            let waker = waker.take();
            *watch = Watch::Told(outcome.map_err(Clone::clone));
            drop(watch);
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    /// The protocol forbids cancelling this request.
    pub(crate) fn never_cancelled(&self) -> bool {
        self.never_cancelled
    }

    /// The reason the peer gave when it cancelled the request, if it did and gave one.
    pub(crate) fn cancel_reason(&self) -> Option<&str> {
        self.cancel_reason.get().map(|r| &**r)
    }

    /// The peer cancelled the request (with its reason, if it gave one): answer it now if it
    /// has not started (its handler, once started, sees the cancellation and the dispatcher
    /// answers when it ends).
    pub(crate) fn cancel_by_peer(&self, reason: Option<String>) {
        if let Some(reason) = reason {
            // Before the token fires: a handler woken by it finds the reason.
            let _ = self.cancel_reason.set(reason.into());
        }
        self.peer_cancelled.store(true, Ordering::Release);
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
        if self.queued.load(Ordering::Acquire) {
            self.answer_unanswered("cancelled before it started");
        }
    }

    /// The request waits on the lane (`true`) or its handler is about to start (`false`).
    pub(crate) fn set_queued(&self, queued: bool) {
        self.queued.store(queued, Ordering::Release);
    }

    pub(crate) fn is_answered(&self) -> bool {
        self.answered.load(Ordering::Acquire)
    }

    /// Answer unless answered already. Returns whether this call answered.
    pub(crate) fn answer<R: Serialize + ?Sized>(&self, outcome: Result<&R, &ErrorObject>) -> bool {
        self.answer_from(outcome, Writes::Here)
    }

    fn answer_from<R: Serialize + ?Sized>(&self, outcome: Result<&R, &ErrorObject>, writes: Writes) -> bool {
        // Streams in the result bind themselves to the connection while it is encoded.
        let binder: &dyn Binder = &*self.host;
        self.answer_with(outcome.map(|_| ()), |buf| encode_response(buf, &self.id, outcome, binder), writes)
    }

    /// Answer with a result that is JSON text already (a stream's batch, serialized straight
    /// into it).
    pub(crate) fn answer_json(&self, result: &[u8]) -> bool {
        self.answer_with(Ok(()), |buf| encode_response_json(buf, &self.id, result), Writes::Here)
    }

    fn answer_with(&self, seen: Result<(), &ErrorObject>, encode: impl FnOnce(&mut Vec<u8>), writes: Writes) -> bool {
        if self.answered.swap(true, Ordering::SeqCst) {
            return false;
        }
        if !self.watched {
            return self.send_answer(encode, writes);
        }
        let left = match self.hook.tell(seen) {
            // No hook's state held: middleware watching the answer, if any, is told.
            Told::Nobody => {
                self.tell_watch(seen);
                None
            }
            // The dispatcher tells the hook after its poll.
            Told::Holder => None,
            Told::Left(left) => Some(left),
        };
        let sent = self.send_answer(encode, writes);
        // The hook is told once the answer is on its way.
        if let Some((hook, state)) = left {
            tell_hook(&*hook, &mut Some(state), seen);
        }
        sent
    }

    /// Send an answer just given (the rest of [`ReplySlot::answer_with`]).
    fn send_answer(&self, encode: impl FnOnce(&mut Vec<u8>), writes: Writes) -> bool {
        if self.registered.load(Ordering::SeqCst) {
            self.host.leave(self);
        }
        if self.silent {
            return true;
        }
        let peer_cancelled = self.peer_cancelled.load(Ordering::Acquire);
        if peer_cancelled && !self.host.answers_cancelled() {
            // MCP: a cancelled request is never answered (not even inside its batch's array).
            if let Some(batch) = &self.batch {
                batch.skip();
            }
            return true;
        }
        let mut buf = crate::util::bufpool::take(64);
        encode(&mut buf);
        let limit = self.host.max_message_size();
        if buf.len() > limit {
            let size = buf.len();
            buf.clear();
            let error =
                ErrorObject::internal_error(format!("the result of {size} bytes exceeds the limit of {limit} bytes"));
            encode_response::<()>(&mut buf, &self.id, Err(&error), UNBOUND);
            tracing::warn!(
                target: crate::LOG_TARGET,
                id = %self.host.quote(&self.id),
                size,
                limit,
                "response over the size limit replaced by an error"
            );
        }
        match &self.batch {
            Some(batch) => batch.add(&self.id, &buf, matches!(writes, Writes::Later)),
            None => self.host.send_answer(buf, matches!(writes, Writes::Later)),
        }
        true
    }

    /// The default answer of a request nobody answered: `-32800` if it was cancelled, else `-32603`.
    pub(crate) fn answer_unanswered(&self, why: &str) {
        self.answer_unanswered_from(why, Writes::Here);
    }

    fn answer_unanswered_from(&self, why: &str, writes: Writes) {
        if self.is_answered() {
            return;
        }
        let error =
            if self.is_cancelled() { ErrorObject::request_cancelled() } else { ErrorObject::internal_error(why) };
        self.answer_from::<()>(Err(&error), writes);
    }

    /// Answer `-32603` with a caught panic's message (unless answered already).
    pub(crate) fn answer_panic(&self, payload: &Box<dyn Any + Send>) {
        let error = ErrorObject::internal_error(format!("the handler panicked: {}", panic_message(payload)));
        tracing::error!(target: crate::LOG_TARGET, %error, "request handler panicked");
        self.answer::<()>(Err(&error));
    }
}

/// Whether an answer may be written by the task that gives it (the common case), or must be
/// left to the writer task (an answer given from `Drop`, which must not do I/O).
#[derive(Clone, Copy)]
enum Writes {
    Here,
    Later,
}

/// The reply handle of one inbound request: answer it once, from any task, at any time.
///
/// Replying consumes the handle, so a request cannot be answered twice. Dropping it unanswered
/// sends an error instead (`-32800` if the request was cancelled, else `-32603`), so the peer
/// never waits forever.
pub struct Responder {
    slot: Arc<ReplySlot>,
    /// Given to a handler inside middleware: dropped unanswered, it tells the chain (which
    /// answers with what the layers return) instead of answering itself.
    quiet: bool,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder").field("id", &self.slot.id).finish_non_exhaustive()
    }
}

/// A watch on a slot's answer (see [`ReplySlot::watch`]).
pub(crate) enum Watch {
    /// Nobody watches.
    Idle,
    /// Watched, not answered yet; the waker of the future waiting, once it has polled.
    Waiting(Option<std::task::Waker>),
    /// Answered with this.
    Told(Result<(), ErrorObject>),
    /// The handler's responder was dropped unanswered.
    Closed,
    /// A hook's state the dispatcher left when the handler ended unanswered, for whoever
    /// answers ([`Baton`]).
    HookLeft(Arc<dyn SlotHook>, HookState),
    /// The error the request was answered with, for the dispatcher to tell the hook ([`Baton`]).
    HookError(ErrorObject),
}

impl Crossing<(Arc<dyn SlotHook>, HookState), ErrorObject> for Watch {
    fn put_left(&mut self, (hook, state): (Arc<dyn SlotHook>, HookState)) {
        *self = Watch::HookLeft(hook, state);
    }
    fn take_left(&mut self) -> Option<(Arc<dyn SlotHook>, HookState)> {
        match std::mem::replace(self, Watch::Idle) {
            Watch::HookLeft(hook, state) => Some((hook, state)),
            other => {
                *self = other;
                None
            }
        }
    }
    fn put_error(&mut self, error: ErrorObject) {
        *self = Watch::HookError(error);
    }
    fn take_error(&mut self) -> Option<ErrorObject> {
        match std::mem::replace(self, Watch::Idle) {
            Watch::HookError(error) => Some(error),
            other => {
                *self = other;
                None
            }
        }
    }
    fn clear(&mut self) {
        *self = Watch::Idle;
    }
}

/// The handler's responder was dropped without answering (see [`ReplySlot::watch`]).
#[derive(Debug)]
pub(crate) struct Closed;

impl Responder {
    pub(crate) fn new(slot: Arc<ReplySlot>) -> Self {
        Responder { slot, quiet: false }
    }

    /// The service [`RequestStart::keep_service`](super::RequestStart::keep_service) kept under
    /// `key` for this request's connection, borrowed for as long as this responder lives (it
    /// keeps the connection). Not a public API.
    ///
    /// # Panics
    /// If nothing of type `T` is kept under `key`: the key must come from `keep_service` on
    /// this request's start, as `#[rpc]` servers take it.
    #[doc(hidden)]
    pub fn kept_service<T: Send + Sync + 'static>(&self, key: usize) -> &T {
        self.slot
            .host
            .locals()
            .get(key)
            .and_then(|kept| kept.downcast_ref::<T>())
            .expect("a service kept by `RequestStart::keep_service` for this request")
    }

    /// The responder of a handler inside middleware, on a watched slot (see [`ReplySlot::watch`]):
    /// dropped unanswered (the handler gave up, or a layer dropped it on a timeout), it closes
    /// the watch and leaves the answer to the chain.
    pub(crate) fn inside_layers(slot: Arc<ReplySlot>) -> Self {
        let quiet = slot.watched;
        Responder { slot, quiet }
    }

    /// The id of the request this answers.
    pub fn id(&self) -> &Id {
        &self.slot.id
    }

    /// Fires when the peer cancels the request or the connection ends.
    pub fn cancellation(&self) -> &CancellationToken {
        self.slot.cancellation()
    }

    /// Answer with a result or an error object. Returns `false` if the request had been answered
    /// already (it was cancelled and answered `-32800` meanwhile, or the connection ended).
    pub fn respond<R: Serialize>(self, outcome: Result<R, ErrorObject>) -> bool {
        match &outcome {
            Ok(r) => self.slot.answer(Ok(r)),
            Err(e) => self.slot.answer::<()>(Err(e)),
        }
    }

    /// Answer with a result.
    pub fn ok<R: Serialize>(self, result: R) -> bool {
        self.slot.answer(Ok(&result))
    }

    /// Answer with an error object.
    pub fn err(self, error: ErrorObject) -> bool {
        self.slot.answer::<()>(Err(&error))
    }

    /// Answer with a result that is already JSON text.
    pub(crate) fn ok_json(self, result: &[u8]) -> bool {
        self.slot.answer_json(result)
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        // No I/O from `Drop`: the default answer is queued for the writer task.
        if std::thread::panicking() {
            let polling = self.slot.supervision.compare_exchange(
                supervision::POLLING,
                supervision::DEFERRED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            if polling.is_ok() {
                // Its handler is being polled: the supervisor answers (see `poll_supervised`).
                return;
            }
            self.slot.answer_unanswered_from("the task holding the reply panicked", Writes::Later);
            return;
        }
        if self.quiet {
            self.slot.end_watch(|| Watch::Closed);
            return;
        }
        self.slot.answer_unanswered_from("the handler dropped the request without answering", Writes::Later);
    }
}
