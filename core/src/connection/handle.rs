//! The cheap, cloneable handle for outbound calls and notifications.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::pending::Outcome;
use super::shared::Shared;
use super::{CloseKind, CloseReason, Error};
use crate::message::{codes, encode_notification, encode_request};

/// Per-call options: a timeout and a cancellation token.
///
/// On timeout the peer is sent a cancellation, the call fails with [`Error::Timeout`] at once and
/// a late answer is absorbed. When the token fires, the peer is sent a cancellation; under
/// protocols whose peers answer cancelled requests (LSP, ACP) the call then waits for that answer
/// (a result, or [`Error::Cancelled`] for `-32800`), otherwise (MCP) it fails with
/// [`Error::Cancelled`] at once.
#[derive(Clone, Debug, Default)]
pub struct CallOptions {
    /// Give up after this long (overrides the connection's default timeout).
    pub timeout: Option<Duration>,
    /// Cancel the call when this fires.
    pub cancel: Option<CancellationToken>,
    /// Resolve only after this side has handled every notification the peer sent before its
    /// answer (see [`CallOptions::after_notifications`]).
    pub after_notifications: bool,
}

impl CallOptions {
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

    /// This handle as given to the handler of the lane's message `seq`.
    pub(crate) fn at_lane(&self, seq: u64) -> Self {
        Handle { shared: self.shared.clone(), lane_seq: Some(seq) }
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("closed", &self.shared.close_reason()).finish_non_exhaustive()
    }
}

/// The rest of a call that must wait for something besides its answer (see [`Handle::send_call`]).
type BoxedCall<'a> = Pin<Box<dyn Future<Output = Result<Box<RawValue>, Error>> + Send + 'a>>;

/// Sends a cancellation for a call whose caller stopped waiting (dropped, timed out).
struct CallGuard<'a> {
    shared: &'a Shared,
    id: u64,
    active: bool,
    /// The request is queued for the writer: only then may the peer hear of its cancellation
    /// (a call dropped while waiting for room in the outbound budget was never sent).
    sent: bool,
}

impl CallGuard<'_> {
    /// The call is settled (or handed on): dropping the guard does nothing.
    fn disarm(mut self) {
        self.active = false;
    }

    /// The request could not be queued (the connection is ending): the call is over, the peer
    /// never heard of it.
    fn unsent(self) -> Error {
        let shared = self.shared;
        shared.pending.abandon(self.id);
        shared.release_call(self.id);
        self.disarm();
        Error::ConnectionLost(shared.lost())
    }

    fn send_cancel(&self) {
        let cancel = &self.shared.config.cancel;
        let mut buf = super::bufpool::take(64);
        let member = serde_json::to_string(cancel.id_member.as_ref()).unwrap_or_else(|_| "\"id\"".into());
        let params = if cancel.send_reason {
            format!("{{{member}:{},\"reason\":\"cancelled by the caller\"}}", self.id)
        } else {
            format!("{{{member}:{}}}", self.id)
        };
        let params = RawValue::from_string(params).ok();
        if encode_notification(&mut buf, &cancel.method, &params).is_ok() {
            // Also sent from `Drop` (a dropped call): left to the writer task.
            let _ = self.shared.outbound.send_later(buf);
        }
    }

    /// Stop waiting: abandon the id and tell the peer.
    fn give_up(&mut self) {
        if std::mem::take(&mut self.active) {
            self.shared.pending.abandon(self.id);
            self.shared.release_call(self.id);
            if self.sent {
                self.send_cancel();
            }
        }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.give_up();
    }
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
        self.request_with(method, params, CallOptions::default()).await
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
    pub(crate) async fn call_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let (id, buf) = self.encode_call(method, params)?;
        self.send_call(id, buf, options).await
    }

    /// Number and encode a request. Streams and progress tokens in `params` bind themselves to
    /// its id while it is encoded (see [`crate::scope`]).
    pub(crate) fn encode_call<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> Result<(u64, Vec<u8>), Error> {
        let shared = &*self.shared;
        let id = shared.next_id();
        let mut buf = super::bufpool::take(64 + method.len());
        let encoded = crate::scope::within(crate::scope::Scope::request(shared, id), || {
            encode_request(&mut buf, id, method, params)
        });
        if let Err(e) = encoded.map_err(Error::Serialize).and_then(|()| self.check_size(&buf)) {
            shared.release_call(id);
            return Err(e);
        }
        Ok((id, buf))
    }

    /// Send a request encoded by [`Handle::encode_call`] and wait for its answer.
    ///
    /// The common call (room to send, no timeout, no cancellation token) waits on its answer
    /// alone; everything else goes on in a future of its own, boxed, so that the future a
    /// caller holds (or a `FuturesUnordered` allocates per call) stays small.
    pub(crate) async fn send_call(&self, id: u64, buf: Vec<u8>, options: &CallOptions) -> Result<Box<RawValue>, Error> {
        let (rx, guard) = match self.start_call(id, buf, options) {
            Ok(started) => started,
            Err(slow) => return slow.await,
        };
        let outcome = rx.await;
        guard.disarm();
        match outcome {
            Ok((result, _)) => result,
            Err(_) => Err(Error::ConnectionLost(self.shared.lost())),
        }
    }

    /// Register and send the call now if nothing needs waiting for (`Ok`: its answer's
    /// receiver and the guard that cancels it if the caller goes away); otherwise the rest of
    /// the call, boxed.
    fn start_call<'a>(
        &'a self,
        id: u64,
        buf: Vec<u8>,
        options: &'a CallOptions,
    ) -> Result<(oneshot::Receiver<Outcome>, CallGuard<'a>), BoxedCall<'a>> {
        let shared = &*self.shared;
        let limited = options.timeout.or(shared.config.default_timeout).is_some() || options.cancel.is_some();
        let rx = match shared.pending.try_register(id) {
            Some(Ok(rx)) => rx,
            Some(Err(e)) => {
                shared.release_call(id);
                return Err(Box::pin(std::future::ready(Err(e))));
            }
            // At most `Limits::max_pending_calls` calls await answers at once: this one waits.
            None => return Err(Box::pin(self.send_call_waiting(id, buf, options))),
        };
        let mut guard = CallGuard { shared, id, active: true, sent: false };
        match shared.outbound.try_send_budgeted(buf, true) {
            Ok(Ok(())) => {}
            Ok(Err(_closed)) => return Err(Box::pin(std::future::ready(Err(guard.unsent())))),
            Err(buf) => return Err(Box::pin(self.finish_call(rx, guard, Some(buf), options))),
        }
        guard.sent = true;
        if limited || options.after_notifications {
            return Err(Box::pin(self.finish_call(rx, guard, None, options)));
        }
        Ok((rx, guard))
    }

    /// The whole call, waiting for a free slot among the pending calls first.
    async fn send_call_waiting(&self, id: u64, buf: Vec<u8>, options: &CallOptions) -> Result<Box<RawValue>, Error> {
        let shared = &*self.shared;
        let rx = match shared.pending.register_waiting(id).await {
            Ok(rx) => rx,
            Err(e) => {
                shared.release_call(id);
                return Err(e);
            }
        };
        let guard = CallGuard { shared, id, active: true, sent: false };
        self.finish_call(rx, guard, Some(buf), options).await
    }

    /// The rest of a registered call: send `buf` (if not sent yet), then wait for the answer
    /// within the call's limits.
    async fn finish_call(
        &self,
        rx: oneshot::Receiver<Outcome>,
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

    /// Wait for the answer to a call with a timeout and/or a cancellation token.
    async fn await_limited(
        &self,
        mut rx: oneshot::Receiver<Outcome>,
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
            _ = &mut expired => {
                guard.give_up();
                return Err(Error::Timeout(timeout.unwrap_or_default()));
            }
        }

        // Cancelled by the caller's token.
        if !shared.config.cancel.answers_cancelled {
            guard.give_up();
            return Err(Error::Cancelled);
        }
        guard.send_cancel();
        tokio::select! {
            biased;
            outcome = &mut rx => {
                guard.active = false;
                match self.settled(outcome, options).await {
                    Err(Error::Remote(e)) if e.code == codes::REQUEST_CANCELLED => Err(Error::Cancelled),
                    other => other,
                }
            }
            _ = &mut expired => {
                guard.give_up();
                Err(Error::Timeout(timeout.unwrap_or_default()))
            }
        }
    }

    /// The answer, once the notifications read before it are handled if the call asked for that.
    async fn settled(
        &self,
        outcome: Result<Outcome, oneshot::error::RecvError>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let (result, read_before) = outcome.unwrap_or_else(|_| (Err(Error::ConnectionLost(self.shared.lost())), 0));
        if options.after_notifications {
            // A notification handler's own handle waits only for the notifications before it
            // (waiting for itself would never end).
            let target = self.lane_seq.map_or(read_before, |seq| read_before.min(seq.saturating_sub(1)));
            Box::pin(self.shared.settle.wait(target, &self.shared.handlers)).await;
        }
        result
    }

    fn check_size(&self, buf: &[u8]) -> Result<(), Error> {
        let limit = self.shared.config.limits.frame.max_message_size;
        if buf.len() > limit {
            return Err(Error::MessageTooLarge { size: buf.len(), limit });
        }
        Ok(())
    }

    /// Send a notification. Returns once it is queued (in order with every other outbound message).
    pub async fn notify(&self, method: &str, params: impl Serialize) -> Result<(), Error> {
        let mut buf = super::bufpool::take(64 + method.len());
        encode_notification(&mut buf, method, &params).map_err(Error::Serialize)?;
        self.check_size(&buf)?;
        self.shared.outbound.send(buf).await.map_err(|_| Error::ConnectionLost(self.shared.lost()))
    }

    /// Resolves with the reason once the connection has ended.
    pub fn closed(&self) -> impl Future<Output = CloseReason> + Send + 'static {
        let shared = self.shared.clone();
        async move { shared.closed().await }
    }

    /// Whether the connection has ended (or is ending).
    pub fn is_closed(&self) -> bool {
        self.shared.close_reason().is_some()
    }

    /// Start closing the connection from this side: pending calls fail, queued messages are
    /// flushed, the write side is shut down.
    pub fn close(&self) {
        self.shared.close(CloseReason::new(CloseKind::LocallyClosed, "closed by this side"));
    }
}
