//! Middleware: layers around every call and notification, in both directions.
//!
//! A layer is a [`Middleware`]: it gets each [`Call`] (the method, the raw params, the id, the
//! direction, the [peer](Call::peer), per-call [extensions](Call::extensions)) and the [`Next`]
//! step of the chain, and returns the call's [`Outcome`]. It may read the call, run `next` and
//! observe the answer and its timing, wait before running it (a rate limit), or answer without
//! running it at all (a refusal). [`Builder::layer`] installs one; [`from_fn`] makes one from a
//! closure.
//!
//! A layer that only watches is cheaper as a [`Hook`]: a synchronous
//! [`on_request`](Hook::on_request) before each call and [`on_response`](Hook::on_response)
//! after it, with a state of its own in between (see [`hook`]). [`trace::TraceLayer`] and
//! `metrics::MetricsLayer` are hooks; [`Builder::layer`] installs either kind.
//!
//! **Order.** Layers run in the order they were added: the first added is the outermost, for
//! inbound and outbound traffic alike. An inbound request passes every layer, then reaches its
//! handler; a call the handler makes back to the peer (or any call or notification through a
//! [`Handle`](crate::Handle)) passes every layer again as an outbound call, then goes on the wire:
//!
//! ```text
//! peer ──▶ layer 1 ─▶ layer 2 ─▶ handler ──(handle.request)──▶ layer 1 ─▶ layer 2 ─▶ peer
//! ```
//!
//! **What passes.** Inbound: every request and notification a route or fallback takes (a
//! request no route takes reaches the layers too, answered `-32601` at the end of the chain);
//! outbound: [`Handle::request`](crate::Handle::request) and its variants, [`Handle::notify`](crate::Handle::notify), and the generated
//! clients built on them. The protocol's own plumbing, which the connection handles itself, does
//! not pass: cancellation notifications, `$/progress` for this side's tokens, the stream
//! protocol's pulls, unknown notifications (dropped, logged).
//!
//! **Cost.** A connection without layers pays nothing for them: no allocation, no atomic
//! operation, one branch on an `Option` per message. With layers, each call pays a boxed future
//! per middleware and pass, and one for the chain's end; a connection whose only layer is a
//! hook pays no chain, and the connection runs the hook itself: its dispatcher holds an inbound
//! request's hook state while it polls the handler (no future, no allocation of the hook's
//! own), an outbound call's
//! hook runs inside the call's own future (no allocation either: 4 per call on `compare`'s
//! row A, as without layers).
//!
//! A layer in full (a log line per call, with its time):
//!
//! ```
//! use std::time::Instant;
//! use jsonrpc_duplex_core::middleware::{BoxFuture, Call, Middleware, Next, Outcome};
//!
//! struct LogCalls;
//!
//! impl Middleware for LogCalls {
//!     fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
//!         let what = format!("{:?} {}", call.direction(), call.method());
//!         Box::pin(async move {
//!             let started = Instant::now();
//!             let outcome = next.run(call).await;
//!             let status = match &outcome {
//!                 Ok(_) => "ok".to_owned(),
//!                 Err(e) => format!("error {}", jsonrpc_duplex_core::middleware::error_code(e)),
//!             };
//!             eprintln!("{what}: {status} in {:?}", started.elapsed());
//!             outcome
//!         })
//!     }
//! }
//!
//! let builder = jsonrpc_duplex_core::Connection::builder().layer(LogCalls);
//! # drop(builder);
//! ```

mod chain;
pub mod context;
pub mod hook;
pub mod limit;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod names;
#[cfg(feature = "otel")]
pub mod otel;
pub(crate) mod state;
#[cfg(feature = "tower")]
pub mod tower;
pub mod trace;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::connection::{Builder, Direction, Error, PeerInfo};
use crate::handler::{Extensions, Notification, Request};
use crate::message::{ErrorObject, Id, codes};

pub use self::chain::Next;
#[doc(hidden)]
pub use self::hook::{AsHook, AsMiddleware, Installed};
pub use self::hook::{CallInfo, Hook, IntoLayer};

/// A boxed, sendable future: what a layer returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a call ended with, as the layers see it: `Ok` with the result's JSON where this side has
/// it (an outbound call's answer; a layer's own answer), `Ok(None)` for an inbound request
/// answered with a result (encoded straight onto the wire) and for notifications; `Err` with
/// why not ([`Error::Remote`] carries the error object, of either side).
///
/// A layer that answers an inbound request without running `next` returns the answer:
/// `Err(Error::Remote(object))` (see [`refuse`]), or `Ok(Some(result))`; `Ok(None)` answers
/// `null`. Once `next` has answered, what a layer returns no longer changes the answer (a
/// request is answered once).
pub type Outcome = Result<Option<Box<RawValue>>, Error>;

/// The outcome of a refusal: `Err(Error::Remote(error))`.
///
/// ```
/// use jsonrpc_duplex_core::{ErrorObject, middleware::refuse};
/// let outcome = refuse(ErrorObject::new(-32001, "not allowed"));
/// assert_eq!(outcome.unwrap_err().as_remote().map(|e| e.code), Some(-32001));
/// ```
pub fn refuse(error: ErrorObject) -> Outcome {
    Err(Error::Remote(error))
}

/// The JSON-RPC error code an outcome's error stands for: the error object's own code, `-32800`
/// for a cancellation, `-32001` for a timeout, `-32000` for a lost connection, `-32603` for the
/// rest (what a handler answers when it passes the error on, see `From<Error> for ErrorObject`).
pub fn error_code(error: &Error) -> i64 {
    match error {
        Error::Remote(object) => object.code,
        Error::Cancelled => codes::REQUEST_CANCELLED,
        Error::Timeout(_) => codes::REQUEST_TIMEOUT,
        Error::ConnectionLost(_) => codes::CONNECTION_CLOSED,
        _ => codes::INTERNAL_ERROR,
    }
}

/// A layer around calls and notifications (see the [module docs](self)).
pub trait Middleware: Send + Sync + 'static {
    /// Handle one call: run `next.run(call)` (or not), and return the outcome.
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome>;
}

impl<M: Middleware + ?Sized> Middleware for Arc<M> {
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
        (**self).call(call, next)
    }
}

/// A layer from a closure (see [`from_fn`]).
#[derive(Clone)]
pub struct FromFn<F>(F);

impl<F> std::fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FromFn")
    }
}

/// A layer from an async closure over the call and the rest of the chain.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, ErrorObject, middleware::{self, Kind}};
///
/// // Refuse every inbound request whose method starts with `admin/`.
/// let no_admin = middleware::from_fn(|call, next| async move {
///     if call.is_inbound() && call.kind() == Kind::Request && call.method().starts_with("admin/") {
///         return middleware::refuse(ErrorObject::new(-32001, "admin methods are disabled"));
///     }
///     next.run(call).await
/// });
/// let builder = Connection::builder().layer(no_admin);
/// # drop(builder);
/// ```
pub fn from_fn<F, Fut>(f: F) -> FromFn<F>
where
    F: Fn(Call, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    FromFn(f)
}

impl<F, Fut> Middleware for FromFn<F>
where
    F: Fn(Call, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
        Box::pin((self.0)(call, next))
    }
}

/// A request (answered) or a notification (not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A call with an id, answered.
    Request,
    /// A message without an id; nothing answers it.
    Notification,
}

/// One call or notification on its way through the layers.
pub struct Call {
    pub(crate) direction: Direction,
    pub(crate) kind: Kind,
    pub(crate) body: Body,
    pub(crate) peer: Option<Arc<PeerInfo>>,
    pub(crate) extensions: Extensions,
    /// Where the connection's profile carries trace context.
    pub(crate) placement: crate::connection::TraceContextPlacement,
}

pub(crate) enum Body {
    InRequest(Request),
    InNotification(Notification),
    Out(Outgoing),
}

/// An outbound message, encoded (layers may still add top-level members).
pub(crate) struct Outgoing {
    pub(crate) method: OutMethod,
    pub(crate) id: Option<(u64, Id)>,
    pub(crate) body: Vec<u8>,
    /// Where the params' JSON starts in `body` (`None`: no params member).
    pub(crate) params_at: Option<usize>,
    pub(crate) cancellable: bool,
}

/// An outbound message's method: where its text lies in the encoded body when it needs no
/// unescaping (no copy), or a copy of it.
pub(crate) enum OutMethod {
    In(std::ops::Range<usize>),
    Owned(String),
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("direction", &self.direction)
            .field("kind", &self.kind)
            .field("method", &self.method())
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

impl Call {
    /// Read from the peer ([`Direction::Incoming`]) or sent to it ([`Direction::Outgoing`]).
    pub fn direction(&self) -> Direction {
        self.direction
    }
    /// Whether the peer sent it (a call to one of this side's handlers).
    pub fn is_inbound(&self) -> bool {
        self.direction == Direction::Incoming
    }
    /// A request or a notification.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// The method name, as sent.
    pub fn method(&self) -> &str {
        match &self.body {
            Body::InRequest(r) => r.method(),
            Body::InNotification(n) => n.method(),
            Body::Out(o) => match &o.method {
                OutMethod::In(at) => std::str::from_utf8(&o.body[at.clone()]).unwrap_or_default(),
                OutMethod::Owned(method) => method,
            },
        }
    }
    /// The raw params (`None` when absent). Outbound, they are read back from the encoded
    /// message (parsed on each call: keep the result if you need it twice).
    pub fn params(&self) -> Option<&RawValue> {
        match &self.body {
            Body::InRequest(r) => r.params(),
            Body::InNotification(n) => n.params(),
            Body::Out(o) => {
                let at = o.params_at?;
                let text = std::str::from_utf8(&o.body[at..o.body.len() - 1]).ok()?;
                serde_json::from_str::<&RawValue>(text).ok()
            }
        }
    }
    /// The request's id (`None` for a notification); outbound, the id this side gave it.
    pub fn id(&self) -> Option<&Id> {
        match &self.body {
            Body::InRequest(r) => Some(r.id()),
            Body::InNotification(_) => None,
            Body::Out(o) => o.id.as_ref().map(|(_, id)| id),
        }
    }
    /// Who the peer is (its address, its credentials, what the transport attached).
    pub fn peer(&self) -> &PeerInfo {
        self.peer.as_deref().unwrap_or(&crate::connection::UNKNOWN_PEER)
    }
    /// What the layers attached to this call so far. An inbound request's handler reads them
    /// from [`RequestContext::extensions`](crate::RequestContext::extensions).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }
    /// An inbound call's top-level `traceparent` / `tracestate`, as the peer sent them (kept
    /// by the reader only for a layer that reads them).
    pub(crate) fn trace_members(&self) -> Option<&crate::message::TraceMembers> {
        match &self.body {
            Body::InRequest(r) => r.slot.trace(),
            Body::InNotification(n) => n.trace(),
            Body::Out(_) => None,
        }
    }

    /// Attach values to this call, for the layers after this one and the handler.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }
    /// Add a top-level member to an outbound message (`"traceparent"` beside `"method"`, as
    /// StreamJsonRpc sends it). `value` is JSON text. Returns `false` (and adds nothing) for an
    /// inbound call, a reserved name (`jsonrpc`, `id`, `method`, `params`, `result`, `error`),
    /// or text that is not JSON.
    pub fn add_member(&mut self, name: &str, value: &str) -> bool {
        const RESERVED: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
        let Body::Out(o) = &mut self.body else { return false };
        if RESERVED.contains(&name) || serde_json::from_str::<&RawValue>(value).is_err() {
            return false;
        }
        let Ok(name) = serde_json::to_string(name) else { return false };
        // Before the closing brace; the params (if any) stay where they are. The value on one
        // line, as the encoder writes raw JSON (the message must stay one line).
        let close = o.body.len() - 1;
        let mut member = format!(",{name}:").into_bytes();
        let _ = crate::framing::write_flat(&mut member, value.as_bytes());
        o.body.splice(close..close, member);
        true
    }
}

impl Builder {
    /// Add a middleware layer to every connection started from this builder: around every
    /// inbound request and notification and every outbound call and notification. Layers run in
    /// the order added, the first outermost (see [`middleware`](crate::middleware)).
    ///
    /// ```
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Router, middleware};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (a, b) = tokio::io::duplex(64 * 1024);
    /// let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// let _server = Connection::builder()
    ///     .layer(middleware::from_fn(move |call, next| {
    ///         log.lock().unwrap().push(format!("{:?} {}", call.direction(), call.method()));
    ///         next.run(call)
    ///     }))
    ///     .serve(Router::new().method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") }))
    ///     .connect_io(a);
    /// let client = Connection::builder().connect_io(b);
    /// assert_eq!(client.handle().request::<String>("ping", ()).await?, "pong");
    /// assert_eq!(*seen.lock().unwrap(), ["Incoming ping"]);
    /// # Ok(()) }
    /// ```
    pub fn layer<Kind>(self, layer: impl IntoLayer<Kind>) -> Self {
        let (mut layers, mut propagate): (Vec<Arc<dyn Middleware>>, _) =
            match self.layered().and_then(|l| l.as_any().downcast_ref::<chain::Stack>()) {
                Some(stack) => (stack.layers.iter().cloned().collect(), stack.propagate.clone()),
                None => (Vec::new(), Vec::new()),
            };
        let installed = layer.into_layer();
        propagate.extend(installed.propagate);
        // A hook alone runs without the chain; with other layers, in it.
        let alone = if layers.is_empty() { installed.alone } else { None };
        layers.push(installed.layer);
        self.set_layered(Arc::new(chain::Stack { layers: layers.into(), propagate, alone }))
    }
}
