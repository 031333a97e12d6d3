//! What a handler receives.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use std::borrow::Cow;
use std::sync::Arc;

use super::ReplySlot;
use super::host::Host;
use crate::message::{ErrorObject, Id};
use crate::util::names::MethodName;

/// Decode params into `T`, straight from the raw JSON. Absent params decode as `null` (so `()`,
/// `Option<_>` and all-default types accept them). A failure is a `-32602` naming the problem.
pub fn decode_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    let text = params.map_or("null", RawValue::get);
    serde_json::from_str(text).map_err(ErrorObject::invalid_params)
}

/// An inbound request, as handed to a raw handler together with its [`Responder`](super::Responder).
pub struct Request {
    pub(crate) method: MethodName<'static>,
    pub(crate) params: Option<Box<RawValue>>,
    pub(crate) slot: Arc<ReplySlot>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("id", self.id())
            .field("method", &&*self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// The peer's id for this request.
    pub fn id(&self) -> &Id {
        &self.slot.id
    }
    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }
    /// The raw params (`None` when absent or `null`).
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }
    /// Decode the params (see [`decode_params`]).
    pub fn decode_params<T: DeserializeOwned>(&self) -> Result<T, ErrorObject> {
        decode_params(self.params())
    }
    /// Fires when the peer cancels this request or the connection ends (after the peer's EOF:
    /// once the EOF grace is over, see [`Connection`](crate::Connection)).
    pub fn cancellation(&self) -> &CancellationToken {
        self.slot.cancellation()
    }
    /// The reason the peer gave when it cancelled this request (MCP's `"reason"`), if it did.
    pub fn cancel_reason(&self) -> Option<&str> {
        self.slot.cancel_reason()
    }
    /// What [middleware](crate::middleware) layers attached to this call.
    pub fn extensions(&self) -> &super::Extensions {
        self.slot.extensions()
    }
    /// The context a typed handler receives.
    pub fn context(&self) -> RequestContext {
        RequestContext { slot: self.slot.clone() }
    }
}

/// A request as its handler is started: its params still where the reader read them, for a
/// handler that decodes them before it returns its future (typed handlers: [`Router::method`](super::Router::method)
/// and `#[rpc]` servers), so that they are never copied. A raw handler gets the [`Request`] it
/// keeps ([`RequestStart::into_request`]: the params copied then, if they are still borrowed).
#[doc(hidden)]
pub struct RequestStart<'a> {
    pub(crate) method: MethodName<'a>,
    pub(crate) params: Option<Cow<'a, RawValue>>,
    /// The dispatcher's own reference (a handler that keeps it takes a clone: most keep only
    /// the responder's).
    pub(crate) slot: &'a Arc<ReplySlot>,
}

impl std::fmt::Debug for RequestStart<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStart")
            .field("id", &self.slot.id)
            .field("method", &&*self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl RequestStart<'_> {
    /// The raw params (`None` when absent or `null`).
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }
    /// The context a typed handler receives.
    pub fn context(&self) -> RequestContext {
        RequestContext { slot: self.slot.clone() }
    }
    /// Keep a clone of `service` in the connection for its handlers, at its first request (a
    /// look after that); the key [`Responder::kept_service`](super::Responder::kept_service)
    /// finds it by. What `#[rpc]` servers do instead of a clone per request (see
    /// `handler/locals.rs`). Not a public API.
    #[doc(hidden)]
    pub fn keep_service<T: Send + Sync + 'static>(&self, service: &Arc<T>) -> usize {
        let key = Arc::as_ptr(service).cast::<()>() as usize;
        self.slot.host.locals().get_or_insert_with(key, || service.clone());
        key
    }
    /// The request a raw handler keeps (borrowed params copied now).
    pub fn into_request(self) -> Request {
        let RequestStart { method, params, slot } = self;
        Request { method: method.into_owned(), params: params.map(Cow::into_owned), slot: slot.clone() }
    }
}

impl Request {
    /// The request's slot, and what starts a handler with the request (nothing copied) once
    /// given a reference to that slot.
    pub(crate) fn into_start(self) -> (Arc<ReplySlot>, impl FnOnce(&Arc<ReplySlot>) -> RequestStart<'_>) {
        let Request { method, params, slot } = self;
        (slot, move |slot| RequestStart { method, params: params.map(Cow::Owned), slot })
    }
}

/// What a typed request handler receives besides its params.
#[derive(Clone)]
pub struct RequestContext {
    slot: Arc<ReplySlot>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext").field("id", self.id()).finish_non_exhaustive()
    }
}

impl RequestContext {
    /// The peer's id for this request.
    pub fn id(&self) -> &Id {
        &self.slot.id
    }
    /// Fires when the peer cancels this request or the connection ends (after the peer's EOF:
    /// once the EOF grace is over, see [`Connection`](crate::Connection)). When it fires, the
    /// handler's future is dropped and the request answered `-32800`, unless it was answered
    /// already (under MCP rules a request the peer cancelled is not answered).
    pub fn cancellation(&self) -> &CancellationToken {
        self.slot.cancellation()
    }

    /// The reason the peer gave when it cancelled this request, if it did and the protocol
    /// carries one (MCP: `notifications/cancelled` `{"requestId", "reason"}`). Set before the
    /// token fires, so a handler woken by [`RequestContext::cancellation`] finds it.
    ///
    /// ```
    /// use jsonrpc_duplex_core::{ErrorObject, RequestContext, Router};
    /// let router = Router::new().method("work", |(): (), ctx: RequestContext| async move {
    ///     ctx.cancellation().cancelled().await;
    ///     tracing::info!(reason = ?ctx.cancel_reason(), "the peer gave up on `work`");
    ///     Ok::<(), ErrorObject>(())
    /// });
    /// # drop(router);
    /// ```
    pub fn cancel_reason(&self) -> Option<&str> {
        self.slot.cancel_reason()
    }

    /// What [middleware](crate::middleware) layers attached to this call (empty on a connection
    /// without layers).
    ///
    /// ```
    /// use jsonrpc_duplex_core::{ErrorObject, RequestContext, Router};
    /// #[derive(Clone)]
    /// struct User(String);
    /// let router = Router::new().method("whoami", |(): (), ctx: RequestContext| async move {
    ///     let user = ctx.extensions().get::<User>().map(|u| u.0.clone());
    ///     Ok::<_, ErrorObject>(user.unwrap_or_else(|| "anonymous".into()))
    /// });
    /// # drop(router);
    /// ```
    pub fn extensions(&self) -> &super::Extensions {
        self.slot.extensions()
    }

    /// The request's reply slot (which the connection's map of requests in flight holds too).
    pub(crate) fn slot(&self) -> &Arc<ReplySlot> {
        &self.slot
    }
}

/// An inbound notification.
pub struct Notification {
    pub(crate) method: MethodName<'static>,
    pub(crate) params: Option<Box<RawValue>>,
    /// The connection that read it, and its place on the ordered lane (see
    /// [`Notification::peer`]).
    pub(crate) host: Arc<dyn Host>,
    pub(crate) lane: Option<u64>,
    /// Its top-level trace context members, kept for a layer that reads them.
    pub(crate) trace: Option<Box<crate::message::TraceMembers>>,
}

impl std::fmt::Debug for Notification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notification")
            .field("method", &&*self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Notification {
    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }
    /// The raw params (`None` when absent or `null`).
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }
    /// Decode the params (see [`decode_params`]).
    pub fn decode_params<T: DeserializeOwned>(&self) -> Result<T, ErrorObject> {
        decode_params(self.params())
    }
    /// Its top-level trace context members, if the reader kept them (for a layer that reads
    /// them).
    pub(crate) fn trace(&self) -> Option<&crate::message::TraceMembers> {
        self.trace.as_deref()
    }
    /// The context a typed notification handler receives.
    pub fn context(&self) -> NotificationContext {
        NotificationContext { host: self.host.clone(), lane: self.lane }
    }
}

/// A notification as its handler is started: its params still where the reader read them (see
/// [`RequestStart`]). A raw handler gets the [`Notification`] it keeps
/// ([`NotificationStart::into_notification`]).
#[doc(hidden)]
pub struct NotificationStart<'a> {
    pub(crate) method: MethodName<'a>,
    pub(crate) params: Option<Cow<'a, RawValue>>,
    pub(crate) host: Arc<dyn Host>,
    pub(crate) lane: Option<u64>,
    pub(crate) trace: Option<Box<crate::message::TraceMembers>>,
}

impl std::fmt::Debug for NotificationStart<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationStart")
            .field("method", &&*self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl NotificationStart<'_> {
    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }
    /// The raw params (`None` when absent or `null`).
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }
    /// The context a typed notification handler receives.
    pub fn context(&self) -> NotificationContext {
        NotificationContext { host: self.host.clone(), lane: self.lane }
    }
    /// The notification a raw handler keeps (borrowed params copied now).
    pub fn into_notification(self) -> Notification {
        let NotificationStart { method, params, host, lane, trace } = self;
        Notification { method: method.into_owned(), params: params.map(Cow::into_owned), host, lane, trace }
    }
}

impl Notification {
    /// The notification, to start a handler with (nothing copied).
    pub(crate) fn into_start(self) -> NotificationStart<'static> {
        let Notification { method, params, host, lane, trace } = self;
        NotificationStart { method, params: params.map(Cow::Owned), host, lane, trace }
    }
}

/// What a typed notification handler receives besides its params.
#[derive(Clone)]
pub struct NotificationContext {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) lane: Option<u64>,
}

impl std::fmt::Debug for NotificationContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationContext").finish_non_exhaustive()
    }
}
