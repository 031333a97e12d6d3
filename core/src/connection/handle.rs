//! The cheap, cloneable handle for outbound calls and notifications.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::pending::{Answer, Outcome};
use super::shared::Shared;
use super::{CloseKind, CloseReason, Error};
use crate::message::bind::UNBOUND;
use crate::message::{codes, encode_notification, encode_request};

/// Per-call options: a timeout, a cancellation token, what a cancellation says.
///
/// On timeout the peer is sent a cancellation (unless [`CallOptions::cancel_on_timeout`] says
/// not to), the call fails with [`Error::Timeout`] at once and a late answer is absorbed. When the
/// token fires, the peer is sent a cancellation; under protocols whose peers answer cancelled
/// requests (LSP, ACP) the call then waits for that answer (a result, or [`Error::Cancelled`]
/// for `-32800`), otherwise (MCP) it fails with [`Error::Cancelled`] at once. Dropping the call's
/// future sends a cancellation too.
///
/// An answer read before the call gives up always wins: the call returns it, and no
/// cancellation is sent for a request that is answered already. A request whose method the
/// protocol forbids cancelling ([`CancelProtocol::never_cancelled`](super::CancelProtocol),
/// MCP's `initialize`) still stops waiting on timeout, token or drop, but nothing is sent.
///
/// Protocols that carry a reason with the cancellation (MCP's `notifications/cancelled`
/// `{"requestId", "reason"}`) send [`CallOptions::cancel_reason`] when the token fires or the
/// call is dropped (by default "cancelled by the caller" and "the caller stopped waiting"), and
/// "timed out after …" on timeout.
#[derive(Clone, Debug)]
#[non_exhaustive]
#[must_use = "a builder does nothing until it is used"]
pub struct CallOptions {
    /// Give up after this long (overrides the connection's default timeout).
    pub timeout: Option<Duration>,
    /// Cancel the call when this fires.
    pub cancel: Option<CancellationToken>,
    /// Resolve only after this side has handled every notification the peer sent before its
    /// answer (see [`CallOptions::after_notifications`]).
    pub after_notifications: bool,
    /// The reason sent with the cancellation when the token fires or the call is dropped, where
    /// the protocol carries one (see [`CallOptions::cancel_reason`]).
    pub cancel_reason: Option<Cow<'static, str>>,
    /// Whether a timeout sends the peer a cancellation (`true` by default).
    pub cancel_on_timeout: bool,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions::DEFAULT
    }
}

impl CallOptions {
    const DEFAULT: CallOptions = CallOptions {
        timeout: None,
        cancel: None,
        after_notifications: false,
        cancel_reason: None,
        cancel_on_timeout: true,
    };

    /// No timeout, no token.
    pub fn new() -> Self {
        CallOptions::default()
    }
    /// Set a timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// Set a cancellation token.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
    /// The reason the peer is told when this call is cancelled by its token or dropped, on
    /// protocols whose cancellation carries one (MCP: `notifications/cancelled`
    /// `{"requestId": 3, "reason": "the user pressed stop"}`); ignored by the others.
    ///
    /// ```
    /// use jsonrpc_duplex_core::{CallOptions, CancellationToken};
    /// let stop = CancellationToken::new();
    /// let options = CallOptions::new().cancel(stop.clone()).cancel_reason("the user pressed stop");
    /// # drop(options);
    /// ```
    pub fn cancel_reason(mut self, reason: impl Into<Cow<'static, str>>) -> Self {
        self.cancel_reason = Some(reason.into());
        self
    }
    /// Whether a timeout sends the peer a cancellation (`true` by default). With `false`, a
    /// timed-out call stops waiting quietly and the peer's late answer is absorbed: for a request
    /// the peer should finish anyway (a save, a commit).
    pub fn cancel_on_timeout(mut self, send: bool) -> Self {
        self.cancel_on_timeout = send;
        self
    }
    /// Resolve only after this side's handlers have handled every notification the peer sent
    /// before its answer (each notification handler run to completion).
    ///
    /// Answers bypass the ordered dispatch lane, so that a handler awaiting a call to the peer
    /// never deadlocks it; without this option a call may return while notifications that
    /// arrived just before its answer (an ACP agent's last `session/update`s before
    /// `session/prompt` returns) are still queued.
    ///
    /// Inside a notification handler, call through the handle of its context
    /// ([`NotificationContext::peer`](crate::NotificationContext::peer), or a typed client made
    /// from it): such a call waits only for the notifications before the one being handled,
    /// which runs on the lane itself. A handle from elsewhere would wait for the handler that
    /// waits for it. Request handlers may use any handle (a request counts as handled once it
    /// has started).
    pub fn after_notifications(mut self) -> Self {
        self.after_notifications = true;
        self
    }
}

/// A cloneable handle to a connection: make calls, send notifications, watch for the end.
///
/// Handles do not keep the connection open: it ends when its [`Connection`](super::Connection)
/// is closed or dropped, or the peer goes away; calls then fail with [`Error::ConnectionLost`].
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
    /// The lane position of the notification whose handler this handle was given to: its calls
    /// made [`after_notifications`](CallOptions::after_notifications) wait only for the
    /// notifications before it.
    pub(crate) lane_seq: Option<u64>,
}

impl Handle {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Handle { shared, lane_seq: None }
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("closed", &self.shared.close_reason()).finish_non_exhaustive()
    }
}

/// The rest of a call that must wait for something besides its answer (see [`Handle::send_call`]).
type BoxedCall<'a> = Pin<Box<dyn Future<Output = Result<Box<RawValue>, Error>> + Send + 'a>>;

/// An outbound call under the connection's one layer, a hook ([`Handle::call_watched`]): the
/// hook's state and the call, started in its first poll ([`Handle::start_call_in`]), every
/// poll inside the hook's scope if it has one for the call. Dropped before it ends, the call is
/// given up (its guard) and the hook's state dropped untold, as a dropped `send_call` would.
pub(crate) struct WatchedCall<'a> {
    handle: &'a Handle,
    options: &'a CallOptions,
    watcher: &'a dyn super::Watcher,
    /// `None` once told.
    state: Option<crate::middleware::state::HookState>,
    /// Polled inside the hook's scope (asked once: an outbound span is not entered).
    scoped: bool,
    sending: Sending<'a>,
    /// The call's guard, made in place when it starts (after `sending`: dropped after the
    /// receiver, as in [`Handle::send_call`]); taken (disarmed) once the answer is in.
    guard: Option<CallGuard<'a>>,
}

/// The rest of a started call: its answer's receiver (the common call), or the rest boxed (see
/// [`Handle::start_call_in`]).
enum Sending<'a> {
    /// Not started yet (`None`: only while it starts).
    Start(Option<EncodedCall>),
    Answer(Answer<'a>),
    Slow(BoxedCall<'a>),
}

impl<'a> Sending<'a> {
    /// Start the call in its first poll, its guard made in place in `guard` (out of line: the
    /// poll that waits for the answer stays small enough to be inlined into the call's future).
    #[inline(never)]
    fn start(
        &mut self,
        guard: &mut Option<CallGuard<'a>>,
        handle: &'a Handle,
        call: EncodedCall,
        options: &'a CallOptions,
        waker: &std::task::Waker,
    ) {
        let guard = guard.insert(CallGuard::unarmed(&handle.shared, options, &call));
        *self = match handle.start_call_in(call, options, guard, waker) {
            Ok(rx) => Sending::Answer(rx),
            Err(slow) => Sending::Slow(slow),
        };
    }

    // Always inlined: with `#[inline]` alone it stayed a call of its own, about 50 instructions
    // more per watched call on `compare`'s row A (callgrind, `codegen-units=1`).
    #[inline(always)]
    fn poll(
        &mut self,
        guard: &mut Option<CallGuard<'a>>,
        handle: &'a Handle,
        options: &'a CallOptions,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Box<RawValue>, Error>> {
        use std::task::Poll;
        if let Sending::Start(call) = self {
            let Some(call) = call.take() else { return Poll::Pending };
            self.start(guard, handle, call, options, cx.waker());
        }
        match self {
            Sending::Start(_) => Poll::Pending,
            Sending::Slow(slow) => slow.as_mut().poll(cx),
            Sending::Answer(rx) => {
                let outcome = std::task::ready!(Pin::new(rx).poll(cx));
                if let Some(guard) = guard.take() {
                    guard.disarm();
                }
                Poll::Ready(match outcome {
                    Some((result, _)) => result.map_err(|e| *e),
                    None => Err(Error::ConnectionLost(handle.shared.lost())),
                })
            }
        }
    }
}

impl Future for WatchedCall<'_> {
    type Output = Result<Box<RawValue>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let this = self.get_mut();
        let Some(state) = this.state.as_ref() else {
            return Poll::Ready(Err(Error::Protocol("polled after it ended".into())));
        };
        let (handle, options, sending, guard) = (this.handle, this.options, &mut this.sending, &mut this.guard);
        let outcome = if this.scoped {
            let mut out = Poll::Pending;
            this.watcher.in_scope(state, &mut || out = sending.poll(guard, handle, options, cx));
            out
        } else {
            sending.poll(guard, handle, options, cx)
        };
        let Poll::Ready(outcome) = outcome else { return Poll::Pending };
        let outcome = outcome.map(Some);
        this.watcher.on_response(&mut this.state, &outcome);
        Poll::Ready(match outcome {
            Ok(Some(result)) => Ok(result),
            Ok(None) => RawValue::from_string("null".into()).map_err(Error::Deserialize),
            Err(e) => Err(e),
        })
    }
}

/// Reasons sent with a cancellation (where the protocol carries one) when the caller gave none.
const CANCELLED_BY_TOKEN: &str = "cancelled by the caller";
const CANCELLED_BY_DROP: &str = "the caller stopped waiting";

/// Sends a cancellation for a call whose caller stopped waiting (dropped, timed out).
struct CallGuard<'a> {
    shared: &'a Shared,
    options: &'a CallOptions,
    id: u64,
    active: bool,
    /// The request is queued for the writer: only then may the peer hear of its cancellation
    /// (a call dropped while waiting for room in the outbound budget was never sent).
    sent: bool,
    /// The protocol lets this request be cancelled on the wire (see `CancelProtocol::never_cancelled`).
    cancellable: bool,
    /// A cancellation was sent already (one is enough).
    announced: bool,
}

impl<'a> CallGuard<'a> {
    fn new(shared: &'a Shared, options: &'a CallOptions, call: &EncodedCall) -> Self {
        let mut guard = CallGuard::unarmed(shared, options, call);
        guard.active = true;
        guard
    }

    /// A guard for `call` that does nothing yet (armed once the call is registered).
    fn unarmed(shared: &'a Shared, options: &'a CallOptions, call: &EncodedCall) -> Self {
        CallGuard {
            shared,
            options,
            id: call.id,
            active: false,
            sent: false,
            cancellable: call.cancellable,
            announced: false,
        }
    }

    /// The guard moved out; what stays behind is disarmed.
    fn take(&mut self) -> CallGuard<'a> {
        let taken = CallGuard { ..*self };
        self.active = false;
        taken
    }

    /// The call is settled (or handed on): dropping the guard does nothing.
    fn disarm(mut self) {
        self.active = false;
    }

    /// The request could not be queued (the connection is ending): the call is over, the peer
    /// never heard of it.
    fn unsent(self) -> Error {
        let shared = self.shared;
        if shared.pending.abandon(self.id) {
            shared.release_call(self.id);
        }
        self.disarm();
        Error::ConnectionLost(shared.lost())
    }

    /// Tell the peer to stop working on the request while the call goes on waiting for its
    /// answer (LSP, ACP), unless that answer has been read already (the cancellation would then
    /// refer to nothing).
    fn cancel_if_waiting(&mut self, reason: &str) {
        if self.shared.pending.is_waiting(self.id) {
            self.send_cancel(reason);
        }
    }

    /// Queue the cancellation notification, unless the request was never sent or the protocol
    /// forbids cancelling its method.
    fn send_cancel(&mut self, reason: &str) {
        if !self.sent || !self.cancellable || std::mem::replace(&mut self.announced, true) {
            return;
        }
        let cancel = &self.shared.config.cancel;
        let mut buf = crate::util::bufpool::take(64);
        let member = serde_json::to_string(cancel.id_member.as_ref()).unwrap_or_else(|_| "\"id\"".into());
        let params = if cancel.send_reason {
            let reason = serde_json::to_string(reason).unwrap_or_else(|_| "\"\"".into());
            format!("{{{member}:{},\"reason\":{reason}}}", self.id)
        } else {
            format!("{{{member}:{}}}", self.id)
        };
        let params = RawValue::from_string(params).ok();
        if encode_notification(&mut buf, &cancel.method, &params, UNBOUND).is_ok() {
            // Also sent from `Drop` (a dropped call): left to the writer task.
            let _ = self.shared.outbound.send_later(buf);
        }
    }

    /// Stop waiting: abandon the id and, given a reason, tell the peer. `false` when the answer
    /// (or the connection's end) was read first: it is in the call's receiver, to be taken from
    /// there, and nothing is sent.
    fn give_up(&mut self, cancel: Option<&str>) -> bool {
        if !std::mem::take(&mut self.active) || !self.shared.pending.abandon(self.id) {
            return false;
        }
        self.shared.release_call(self.id);
        if let Some(reason) = cancel {
            self.send_cancel(reason);
        }
        true
    }

    /// The caller's reason for a cancellation, or `default`.
    fn reason(&self, default: &'static str) -> &'a str {
        self.options.cancel_reason.as_deref().unwrap_or(default)
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if self.active {
            let reason = self.reason(CANCELLED_BY_DROP);
            self.give_up(Some(reason));
        }
    }
}

/// A request numbered and encoded, not sent yet (see [`Handle::encode_call`]).
pub(crate) struct EncodedCall {
    pub(crate) id: u64,
    pub(crate) body: Vec<u8>,
    /// The protocol lets this method be cancelled on the wire (MCP forbids it for `initialize`).
    pub(crate) cancellable: bool,
}

impl Handle {
    /// Call `method` with `params` and decode the result into `R`.
    ///
    /// `params` may be anything serializable: a struct or map (sent by name), a tuple, array or
    /// `Vec` (sent by position), or `()` / `None` (no params member at all). Dropping the future
    /// cancels the call on the peer.
    ///
    /// ```
    /// # use jsonrpc_duplex_core::{Connection, Router, ErrorObject};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (a, b) = tokio::io::duplex(4096);
    /// let server = Connection::builder()
    ///     .serve(Router::new().method("add", |(x, y): (i64, i64), _| async move { Ok::<_, ErrorObject>(x + y) }))
    ///     .connect_io(a);
    /// let client = Connection::builder().connect_io(b);
    /// let sum: i64 = client.handle().request("add", (2, 3)).await?;
    /// assert_eq!(sum, 5);
    /// # drop(server);
    /// # Ok(()) }
    /// ```
    pub async fn request<R: DeserializeOwned>(&self, method: &str, params: impl Serialize) -> Result<R, Error> {
        // Borrowed from a static: the call's future holds no options of its own.
        static DEFAULT: CallOptions = CallOptions::DEFAULT;
        let raw = self.call_raw(method, &params, &DEFAULT).await?;
        serde_json::from_str(raw.get()).map_err(Error::Deserialize)
    }

    /// [`Handle::request`] with a timeout and/or a cancellation token.
    pub async fn request_with<R: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
        options: CallOptions,
    ) -> Result<R, Error> {
        let raw = self.call_raw(method, &params, &options).await?;
        serde_json::from_str(raw.get()).map_err(Error::Deserialize)
    }

    /// Call `method` and return the raw JSON result.
    pub async fn request_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        options: CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        self.call_raw(method, params, &options).await
    }

    /// [`Handle::request_raw`] with borrowed options (one copy of them in the caller's future).
    /// For `#[rpc]`'s generated clients, which call with their own options: borrowing them
    /// costs no clone, and no copy of 56 bytes into the call's future (written a field at a
    /// time, read back a word at a time: a stall of the CPU on every call). Not a public API.
    #[doc(hidden)]
    pub async fn call_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let call = self.encode_call(method, params)?;
        let config = &self.shared.config;
        if let Some(watcher) = &config.watcher {
            // A future of its own, not an `async fn`'s: it keeps the hook's state beside the
            // call's receiver and guard, and nothing twice, so the future every caller holds
            // stays small without boxing it (see `send_call`).
            return self.call_watched(&**watcher, method, call, options).await;
        }
        if let Some(layered) = &config.layered {
            return match layered.call(self, method, call, options).await? {
                Some(result) => Ok(result),
                None => RawValue::from_string("null".into()).map_err(Error::Deserialize),
            };
        }
        self.send_call(call, options).await
    }

    /// A call through the connection's one layer, a hook, run in the call's own future: no
    /// future of the hook's own, and no allocation. Always inlined: a call of its own returned
    /// the future to be copied into the caller's (a `memcpy` of it, 58 instructions a call, and
    /// 48 more for the call itself and its drop glue: callgrind, row A, a hook on the client).
    #[inline(always)]
    pub(crate) fn call_watched<'a>(
        &'a self,
        watcher: &'a dyn super::Watcher,
        method: &str,
        call: EncodedCall,
        options: &'a CallOptions,
    ) -> WatchedCall<'a> {
        let state = watcher.on_outbound(self, method, &call);
        let scoped = watcher.scoped(&state);
        // Started in its first poll (inside the hook's scope, if it has one for the call), in
        // place: made here, its receiver and guard would be moved out with this future just
        // after they were written (in wider loads than their stores, which the CPU cannot
        // forward).
        let sending = Sending::Start(Some(call));
        WatchedCall { handle: self, options, watcher, state: Some(state), scoped, sending, guard: None }
    }

    /// Number and encode a request. Streams and progress tokens in `params` bind themselves to
    /// its id while it is encoded (see [`crate::message::bind`]).
    pub(crate) fn encode_call<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> Result<EncodedCall, Error> {
        let shared = &*self.shared;
        let id = shared.next_id();
        let mut buf = crate::util::bufpool::take(64 + method.len());
        let encoded = encode_request(&mut buf, id, method, params, shared);
        if let Err(e) = encoded.map_err(Error::Serialize).and_then(|()| self.check_size(&buf)) {
            shared.release_call(id);
            return Err(e);
        }
        Ok(EncodedCall { id, body: buf, cancellable: shared.config.cancel.may_cancel(method) })
    }

    /// Send a request encoded by [`Handle::encode_call`] and wait for its answer.
    ///
    /// The common call (room to send, no timeout, no cancellation token) waits on its answer
    /// alone; everything else goes on in a future of its own, boxed, so that the future a
    /// caller holds (or a `FuturesUnordered` allocates per call) stays small.
    pub(crate) async fn send_call(&self, call: EncodedCall, options: &CallOptions) -> Result<Box<RawValue>, Error> {
        // The guard is made in place, in this future, and armed there: not built in
        // `start_call_in` and moved here (its flags, stored a byte at a time, then read back in
        // 16-byte loads, which the CPU cannot forward: a fifth of this function's time).
        let mut guard = CallGuard::unarmed(&self.shared, options, &call);
        // Started with this task's waker, in the poll that then polls its answer first (nothing
        // is awaited between): that first poll takes no lock (see `Pending::try_register`).
        let mut call = Some(call);
        let started = std::future::poll_fn(|cx| match call.take() {
            Some(call) => std::task::Poll::Ready(self.start_call_in(call, options, &mut guard, cx.waker())),
            None => std::task::Poll::Pending,
        })
        .await;
        let rx = match started {
            Ok(rx) => rx,
            Err(slow) => return slow.await,
        };
        let outcome = rx.await;
        guard.disarm();
        match outcome {
            Some((result, _)) => result.map_err(|e| *e),
            None => Err(Error::ConnectionLost(self.shared.lost())),
        }
    }

    /// Register and send the call now if nothing needs waiting for (`Ok`: its answer's
    /// receiver, and `guard`, made for `call` and not armed yet, armed); otherwise the rest of
    /// the call, boxed, which takes the guard (left disarmed here). `waker` is the task's that
    /// polls the answer next, in this same poll.
    fn start_call_in<'a>(
        &'a self,
        call: EncodedCall,
        options: &'a CallOptions,
        guard: &mut CallGuard<'a>,
        waker: &std::task::Waker,
    ) -> Result<Answer<'a>, BoxedCall<'a>> {
        let shared = &*self.shared;
        let limited = options.timeout.or(shared.config.default_timeout).is_some() || options.cancel.is_some();
        let rx = match shared.pending.try_register(call.id, Some(waker)) {
            Some(Ok(rx)) => rx,
            Some(Err(e)) => {
                shared.release_call(call.id);
                return Err(Box::pin(std::future::ready(Err(e))));
            }
            // At most `Limits::max_pending_calls` calls await answers at once: this one waits.
            None => return Err(Box::pin(self.send_call_waiting(call, options))),
        };
        guard.active = true;
        match shared.outbound.try_send_budgeted(call.body, true) {
            Ok(Ok(())) => {}
            Ok(Err(_closed)) => return Err(Box::pin(std::future::ready(Err(guard.take().unsent())))),
            Err(buf) => return Err(Box::pin(self.finish_call(rx, guard.take(), Some(buf), options))),
        }
        guard.sent = true;
        if limited || options.after_notifications {
            return Err(Box::pin(self.finish_call(rx, guard.take(), None, options)));
        }
        Ok(rx)
    }

    /// The whole call, waiting for a free slot among the pending calls first.
    async fn send_call_waiting(&self, call: EncodedCall, options: &CallOptions) -> Result<Box<RawValue>, Error> {
        let shared = &*self.shared;
        let rx = match shared.pending.register_waiting(call.id).await {
            Ok(rx) => rx,
            Err(e) => {
                shared.release_call(call.id);
                return Err(e);
            }
        };
        let guard = CallGuard::new(shared, options, &call);
        self.finish_call(rx, guard, Some(call.body), options).await
    }

    /// The rest of a registered call: send `buf` (if not sent yet), then wait for the answer
    /// within the call's limits.
    async fn finish_call(
        &self,
        rx: Answer<'_>,
        mut guard: CallGuard<'_>,
        buf: Option<Vec<u8>>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let shared = &*self.shared;
        if let Some(buf) = buf {
            let sent = match shared.outbound.try_send_budgeted(buf, true) {
                Ok(sent) => sent,
                Err(buf) => shared.outbound.send_waiting(buf, true).await,
            };
            if sent.is_err() {
                return Err(guard.unsent());
            }
            guard.sent = true;
        }
        let timeout = options.timeout.or(shared.config.default_timeout);
        self.await_limited(rx, guard, timeout, options).await
    }

    /// Wait for the answer to a call with a timeout and/or a cancellation token. Whatever ends
    /// the wait, an answer read before it is returned.
    async fn await_limited(
        &self,
        mut rx: Answer<'_>,
        mut guard: CallGuard<'_>,
        timeout: Option<std::time::Duration>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let shared = &*self.shared;
        let expired = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(expired);
        let cancelled = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };

        tokio::select! {
            biased;
            outcome = &mut rx => {
                guard.active = false;
                return self.settled(outcome, options).await;
            }
            _ = cancelled => {}
            _ = &mut expired => return self.timed_out(rx, guard, timeout.unwrap_or_default(), options).await,
        }

        // Cancelled by the caller's token.
        let reason = guard.reason(CANCELLED_BY_TOKEN);
        if !shared.config.cancel.answers_cancelled {
            if guard.give_up(Some(reason)) {
                return Err(Error::Cancelled);
            }
            // Answered before it could be given up.
            return self.settled(rx.await, options).await;
        }
        guard.cancel_if_waiting(reason);
        tokio::select! {
            biased;
            outcome = &mut rx => {
                guard.active = false;
                match self.settled(outcome, options).await {
                    Err(Error::Remote(e)) if e.code == codes::REQUEST_CANCELLED => Err(Error::Cancelled),
                    other => other,
                }
            }
            _ = &mut expired => self.timed_out(rx, guard, timeout.unwrap_or_default(), options).await,
        }
    }

    /// The call's time is up: give it up (telling the peer, unless the call opted out), or take
    /// its answer if that was read first.
    async fn timed_out(
        &self,
        rx: Answer<'_>,
        mut guard: CallGuard<'_>,
        after: Duration,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let reason = options.cancel_on_timeout.then(|| format!("timed out after {after:?}"));
        if guard.give_up(reason.as_deref()) {
            return Err(Error::Timeout(after));
        }
        self.settled(rx.await, options).await
    }

    /// The answer, once the notifications read before it are handled if the call asked for that.
    async fn settled(&self, outcome: Option<Outcome>, options: &CallOptions) -> Result<Box<RawValue>, Error> {
        let (result, read_before) =
            outcome.unwrap_or_else(|| (Err(Box::new(Error::ConnectionLost(self.shared.lost()))), 0));
        if options.after_notifications {
            // A notification handler's own handle waits only for the notifications before it
            // (waiting for itself would never end).
            let target = self.lane_seq.map_or(read_before, |seq| read_before.min(seq.saturating_sub(1)));
            Box::pin(self.shared.settle.wait(target, self.shared.lifecycle.handlers())).await;
        }
        result.map_err(|e| *e)
    }

    fn check_size(&self, buf: &[u8]) -> Result<(), Error> {
        let limit = self.shared.config.limits.frame.max_message_size;
        if buf.len() > limit {
            return Err(Error::MessageTooLarge { size: buf.len(), limit });
        }
        Ok(())
    }

    /// Send a notification. Returns once it is queued (in order with every other outbound message).
    /// It first spends a unit of tokio's cooperative budget, as tokio's channels do: a loop that
    /// sends a burst yields to the runtime every so often, so the connection's writer runs.
    pub async fn notify(&self, method: &str, params: impl Serialize) -> Result<(), Error> {
        let mut buf = crate::util::bufpool::take(64 + method.len());
        encode_notification(&mut buf, method, &params, &*self.shared).map_err(Error::Serialize)?;
        self.check_size(&buf)?;
        if let Some(layered) = &self.shared.config.layered {
            return layered.notify(self, method, buf).await.map(drop);
        }
        self.send_notification(buf).await
    }

    /// Queue an encoded notification (in order with every other outbound message).
    pub(crate) async fn send_notification(&self, body: Vec<u8>) -> Result<(), Error> {
        self.shared.outbound.send(body).await.map_err(|_| Error::ConnectionLost(self.shared.lost()))
    }

    /// Who the peer is, as its transport told ([`Builder::peer_info`](super::Builder::peer_info)).
    pub fn peer_info(&self) -> &super::PeerInfo {
        self.shared.peer.as_deref().unwrap_or(&super::peer_info::UNKNOWN)
    }

    /// Resolves with the reason once the connection has ended.
    pub fn closed(&self) -> impl Future<Output = CloseReason> + Send + 'static {
        let shared = self.shared.clone();
        async move { shared.closed().await }
    }

    /// Whether the connection has ended (or is ending).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.shared.close_reason().is_some()
    }

    /// Start closing the connection from this side: pending calls fail, queued messages are
    /// flushed, the write side is shut down.
    pub fn close(&self) {
        self.shared.close(CloseReason::new(CloseKind::LocallyClosed, "closed by this side"));
    }
}

impl Handle {
    /// The extension of type `E` of this handle's connection: the state of a feature plugged in
    /// with [`Builder::feature`](super::Builder::feature), `None` if none of its extensions is an
    /// `E` (see [`seam`](super::seam) for an example).
    pub fn extension<E: super::Extension>(&self) -> Option<Arc<E>> {
        self.shared.seam.get::<E>()
    }

    /// The extension of type `E` of a feature every builder plugs in.
    pub(crate) fn builtin<E: super::Extension>(&self) -> Arc<E> {
        match self.shared.seam.get::<E>() {
            Some(extension) => extension,
            // `Builder::default` plugs every feature of the crate into every connection.
            None => unreachable!("a feature missing from a connection"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;
    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio_util::sync::CancellationToken;

    use super::CallOptions;
    use crate::connection::pending::Delivery;
    use crate::{CancelProtocol, Connection, Framing};

    /// How the caller stops waiting in [`an_answer_read_before_giving_up_wins_over_it`].
    #[derive(Clone, Copy, Debug)]
    enum Stop {
        Token,
        Timeout,
        Drop,
    }

    /// The reader hands a call its answer, and the caller gives up (its token fires, its timeout
    /// expires, it is dropped) before its task runs to take it: it must neither tell the peer to
    /// cancel the answered request nor, if it still waits, miss the answer; and the answer's
    /// entry leaves the table either way.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_answer_read_before_giving_up_wins_over_it() {
        for protocol in [CancelProtocol::mcp(), CancelProtocol::lsp()] {
            for stop in [Stop::Token, Stop::Timeout, Stop::Drop] {
                let what = format!("{} / {stop:?}", protocol.method);
                let (ours, theirs) = tokio::io::duplex(4096);
                let conn = Connection::builder()
                    .framing(Framing::NewlineDelimited)
                    .cancel_protocol(protocol.clone())
                    .connect_io(ours);
                let mut lines = BufReader::new(theirs).lines();
                let token = CancellationToken::new();
                let options = CallOptions::new().cancel(token.clone()).timeout(std::time::Duration::from_secs(1));
                let handle = conn.handle();
                let call = tokio::spawn(async move { handle.request_with::<u32>("work", (), options).await });
                let request = lines.next_line().await.unwrap().unwrap();
                assert!(request.contains(r#""id":0"#), "{what}: {request}");
                let answer = RawValue::from_string("7".into()).unwrap();
                let probe = conn.handle();
                let pending = &probe.shared.pending;
                assert_eq!(pending.complete(0, Ok(answer), 0), Delivery::Delivered, "{what}");
                match stop {
                    Stop::Token => token.cancel(),
                    Stop::Timeout => tokio::time::advance(std::time::Duration::from_secs(2)).await,
                    Stop::Drop => call.abort(),
                }
                for _ in 0..10 {
                    tokio::task::yield_now().await;
                }
                match (stop, call.await) {
                    (Stop::Drop, Err(e)) => assert!(e.is_cancelled(), "{what}"),
                    (_, Ok(Ok(n))) => assert_eq!(n, 7, "{what}"),
                    (_, other) => panic!("{what}: the answer was read first, yet the call ended with {other:?}"),
                }
                assert_eq!(pending.entries(), 0, "{what}: the answer's entry stayed");
                conn.handle().notify("mark", ()).await.unwrap();
                let next = lines.next_line().await.unwrap().unwrap();
                assert!(
                    next.contains(r#""method":"mark""#),
                    "{what}: a cancellation went out for an answered request: {next}"
                );
            }
        }
    }
}
