//! How features plug into the connection, which knows nothing of them: the public seam.
//!
//! A feature is a protocol extension that lives beside the router: StreamJsonRpc's streams
//! (`$/enumerator/*`), progress (`$/progress`), request cancellation, or one of your own (MCP's
//! `logging/setLevel` filter, LSP partial results). Each is a [`Feature`] in the
//! [`Builder`](super::Builder) (its settings, [`Builder::feature`](super::Builder::feature)) and
//! an [`Extension`] in every connection (its state, [`Handle::extension`](super::Handle::extension)).
//! The connection calls its extensions at eight points and nowhere else, the way a tower layer
//! wraps a service:
//!
//! | point | when | what an extension does |
//! |---|---|---|
//! | [`Extension::requests`] / [`Extension::serve`] | a request for one of its methods arrives | answers it itself, before the router (`$/enumerator/next`, `logging/setLevel`) |
//! | [`Extension::notifications`] / [`Extension::take`] | one of its notifications arrives | takes it off the wire before the ordered lane (`$/cancelRequest`, `$/enumerator/abort`, progress reports for our tokens) |
//! | [`Extension::bind`] | a value of its own is found in a message being encoded | binds it to that message: to one of our calls, to a result, or refuses it (the crate's own streams and progress tokens) |
//! | [`Extension::release`] | a call it bound a token to is over ([`Extension::phase`]: before its answer reaches the caller, or after) | ends what the token held (an argument stream, a progress receiver) |
//! | [`Extension::router`] | the connection starts | wraps the router's handlers, or adds routes (a server's drain gate) |
//! | [`Extension::unrouted`] | a notification no route took | notices it (the connection's own warning about unknown notifications) |
//! | [`Extension::closed`] | the connection ends | ends everything it holds, with the reason |
//! | [`Extension::admission`] | the connection starts | decides when the peer's requests may start ([`Admission`]: the connection's own request permits, or a feature's in their place) |
//!
//! An extension sees its connection through a narrow context, [`Link`] (the limits, quoting peer
//! input in a log line, the byte account of the peer's input it holds, cancelling a request in
//! flight, ending the connection, its handle), never through the connection's state. A request
//! it serves carries the connection's [`Handle`] ([`Request::peer`]) for anything
//! it sends; what it keeps for the connection's whole life is a [`WeakHandle`]
//! ([`Start::handle`]), which does not keep a closed connection alive.
//!
//! **User code.** A panic in [`Extension::serve`] answers its request `-32603`, like a
//! handler's; a panic in [`Extension::take`], [`Extension::unrouted`] or [`Extension::router`]
//! ends the connection ([`CloseKind::FatalError`](super::CloseKind), the reason names the method
//! and the panic), never the reader alone.
//!
//! **Order and cost.** Notifications an extension takes bypass the ordered lane (like a
//! cancellation, they act at once, even while a long notification handler runs); requests it
//! serves start in order with the others, under the same request permits, and are answered like
//! any request. The names are matched once per message; a connection whose extensions hold
//! nothing pays no allocation and one atomic load per message for them.
//!
//! ```
//! use std::borrow::Cow;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use jsonrpc_duplex_core::seam::{Extension, Feature, Link, Start, Take};
//! use jsonrpc_duplex_core::{Connection, Router, transport::memory};
//! use serde_json::value::RawValue;
//!
//! /// Counts `$/heartbeat` notifications off the wire, before any handler sees them.
//! #[derive(Clone, Default)]
//! struct Heartbeats;
//!
//! #[derive(Default)]
//! struct Beats(AtomicU64);
//!
//! impl Feature for Heartbeats {
//!     fn start(&self, _: &Start<'_>) -> Arc<dyn Extension> {
//!         Arc::new(Beats::default())
//!     }
//! }
//!
//! impl Extension for Beats {
//!     fn notifications(&self) -> Vec<Cow<'static, str>> {
//!         vec!["$/heartbeat".into()]
//!     }
//!     fn take(&self, _: &dyn Link, _: &str, _: Option<&RawValue>) -> Take {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!         Take::Taken
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Connection::builder().feature(Heartbeats).serve(Router::new().method("ping", |(): (), _| async { Ok::<_, jsonrpc_duplex_core::ErrorObject>("pong") }));
//! let (client, server) = memory::pair(Connection::builder(), server);
//! client.handle().notify("$/heartbeat", ()).await?;
//! client.handle().notify("$/heartbeat", ()).await?;
//! // Notifications are taken in order with what follows them.
//! let _: String = client.handle().request("ping", ()).await?;
//! let beats = server.handle().extension::<Beats>().expect("plugged in");
//! assert_eq!(beats.0.load(Ordering::Relaxed), 2);
//! # Ok(()) }
//! ```

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use super::trace::Tracer;
use super::{CloseKind, CloseReason, Handle, Limits, WeakHandle};
use crate::handler::{BoxFuture as HandlerFuture, Request, Responder, Router};
use crate::message::Id;
use crate::message::bind::Found;
pub use crate::message::bind::Target;
use crate::sync::lazy::OnceBox;
use crate::util::hash::IdBuild;

mod sealed {
    /// Only the connection is a [`Link`](super::Link).
    pub trait Sealed {}
}
pub(crate) use sealed::Sealed;

/// What an extension may do with its connection when the connection calls it: a narrow view of
/// the connection, not its state. Only the connection implements it.
pub trait Link: Send + Sync + Sealed {
    /// The connection's limits.
    fn limits(&self) -> &Limits;
    /// Quote peer input for a log line: cut and redacted like the wire log
    /// ([`Limits::max_trace_len`], [`Builder::trace_redactor`](super::Builder::trace_redactor)).
    fn quote(&self, value: &dyn fmt::Display) -> String;
    /// `bytes` of the peer's input are held by the extension (they count against the
    /// read-ahead, [`Limits::read_ahead_bytes`], like a queued message) until
    /// [`Link::release_inbound`]. Whatever an extension keeps of the peer's input must be
    /// counted so: a peer may not make us hold more than the limits say.
    fn hold_inbound(&self, bytes: usize);
    /// `bytes` held by [`Link::hold_inbound`] were taken.
    fn release_inbound(&self, bytes: usize);
    /// Cancel the peer's request `id` in flight (its handler's cancellation token fires), as
    /// the connection's own cancellation notification does; `reason` is what its handler sees.
    fn cancel_request(&self, id: &Id, reason: Option<String>) -> Cancelled;
    /// End the connection (the first reason wins).
    fn close(&self, reason: CloseReason);
    /// The connection's handle, to call or notify the peer (from a task the extension spawns:
    /// what runs on the reader must not wait). Keep it no longer than the work it is for; what
    /// the extension keeps for the connection's whole life is a [`WeakHandle`]
    /// ([`Start::handle`]), or its own state would keep the connection alive.
    fn handle(&self) -> Handle;
}

/// What [`Link::cancel_request`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancelled {
    /// Its handler's token fired.
    Cancelled,
    /// The protocol forbids cancelling that request ([`CancelProtocol::never_cancelled`](super::CancelProtocol)): nothing done.
    Forbidden,
    /// No request of the peer's is in flight under that id (answered already, or never sent).
    NotInFlight,
}

/// What a feature gets to start its part of a new connection.
pub struct Start<'a> {
    pub(crate) handle: &'a WeakHandle,
    pub(crate) limits: &'a Limits,
    pub(crate) tracer: &'a Tracer,
}

impl Start<'_> {
    /// The new connection's limits (a feature's bounds are set with the others, in [`Limits`]).
    pub fn limits(&self) -> &Limits {
        self.limits
    }

    /// The new connection's handle, weak: the extension may keep it (a strong [`Handle`] in
    /// the extension would keep the connection alive after it closed, since the connection
    /// keeps its extensions). It upgrades once the connection has started (not yet within
    /// [`Feature::start`]) and until the connection is freed.
    pub fn handle(&self) -> &WeakHandle {
        self.handle
    }

    /// How the connection quotes peer input.
    pub(crate) fn tracer(&self) -> &Tracer {
        self.tracer
    }
}

/// A feature's settings, carried by the builder: it is cloned with the builder (derive `Clone`),
/// and starts an [`Extension`] for each connection.
pub trait Feature: Any + Send + Sync + CloneFeature {
    /// This feature's part of a new connection.
    fn start(&self, start: &Start<'_>) -> Arc<dyn Extension>;
}

/// A copy of a feature (a builder is cloned for each connection it starts): any `Clone` feature
/// has it.
pub trait CloneFeature {
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn Feature>;
}

impl<F: Feature + Clone> CloneFeature for F {
    fn clone_box(&self) -> Box<dyn Feature> {
        Box::new(self.clone())
    }
}

/// What became of a notification an extension was offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// Not its own after all: it goes on to the ordered lane and the router.
    Pass,
    /// Taken.
    Taken,
    /// Taken and kept until somebody takes it from the extension: its bytes were counted with
    /// [`Link::hold_inbound`], and the reader pauses while the read-ahead is full.
    Held,
}

/// What binding a found value did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// It travels in the params of our request and ends with it: [`Extension::release`] when the
    /// call is over.
    ToCall,
    /// Nothing more to do.
    Done,
}

/// When the tokens bound to one of our calls are released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// When its answer is read, before it reaches the caller (a stream passed as an argument
    /// must be over before its callee's answer is seen).
    BeforeAnswer,
    /// Once its answer is in the caller's hands (a progress receiver ends after the answer).
    AfterAnswer,
}

/// A feature's part of one connection. Every method has a default that does nothing: implement
/// the points the feature uses.
pub trait Extension: Any + Send + Sync {
    /// Requests it answers itself, before the router (asked once, when the connection starts).
    fn requests(&self) -> Vec<Cow<'static, str>> {
        Vec::new()
    }
    /// Answer one of [`Extension::requests`]: answer `responder` (at once or from the returned
    /// future, which runs like a handler: on the ordered lane until its first wait, then on a
    /// task of its own). By default it answers "method not found".
    fn serve(self: Arc<Self>, link: &dyn Link, request: Request, responder: Responder) -> HandlerFuture {
        let _ = link;
        responder.err(crate::message::ErrorObject::method_not_found(request.method()));
        Box::pin(async {})
    }
    /// Notifications it takes before the ordered lane (asked once, when the connection starts).
    fn notifications(&self) -> Vec<Cow<'static, str>> {
        Vec::new()
    }
    /// One of [`Extension::notifications`] arrived. It runs on the reader: it must not block
    /// (hand anything slow to a task).
    fn take(&self, link: &dyn Link, method: &str, params: Option<&RawValue>) -> Take {
        let _ = (link, method, params);
        Take::Pass
    }
    /// A value of its own (`token`) is in a message going to `target`. Only the crate's own
    /// features make such values; by default there is nothing to do.
    fn bind(&self, token: u64, target: Target) -> Result<Bound, String> {
        let _ = (token, target);
        Ok(Bound::Done)
    }
    /// When its tokens bound to a call are released.
    fn phase(&self) -> Phase {
        Phase::AfterAnswer
    }
    /// A call `token` was bound to is over.
    fn release(&self, token: u64) {
        let _ = token;
    }
    /// The connection's router, once, as the connection starts (after
    /// [`Builder::serve_with`](super::Builder::serve_with)'s services are merged, inside the
    /// middleware): the extension may wrap its handlers or add routes (a server's drain gate
    /// wraps every request handler). By default it is left as it is.
    fn router(&self, router: Router) -> Router {
        router
    }
    /// A notification no route and no fallback took (after its turn on the ordered lane);
    /// every extension is told, in order (the connection's own logs it, once per name at WARN).
    fn unrouted(&self, link: &dyn Link, method: &str, params: Option<&RawValue>) {
        let _ = (link, method, params);
    }
    /// The connection ended: whatever it holds ends too, with the reason.
    fn closed(&self, reason: &CloseReason) {
        let _ = reason;
    }
    /// Why a route named like one of its methods would never be called, for the error that
    /// refuses it at connect; `None` when such a route is still called (the extension passes
    /// some of them on).
    fn shadows(&self) -> Option<&'static str> {
        Some("a feature plugged into the connection answers it before the router")
    }
    /// When the peer's requests may start ([`Admission`]), asked once, when the connection
    /// starts. The first extension that has one decides for the connection: a feature's comes
    /// before the connection's own request permits ([`Limits::max_concurrent_requests`],
    /// [`Limits::max_concurrent_request_bytes`]) and replaces them, bounds included.
    fn admission(self: Arc<Self>) -> Option<Arc<dyn Admission>> {
        None
    }
}

/// When the peer's requests may start: the request permits of a connection. A request taken
/// off the ordered lane starts once it is admitted, and holds its admission (a weight the
/// admission chose) until its handler ends; requests behind it wait, in order. The
/// connection's own ([`Limits::max_concurrent_requests`] requests holding at most
/// [`Limits::max_concurrent_request_bytes`] bytes of params, any one request alone whatever
/// its size) is plugged in through [`Extension::admission`]; a feature's replaces it (a limit
/// shared by every connection of a server, say).
///
/// Only the connection's lane asks: at most one [`Admission::poll_admit`] waits at a time,
/// and it must be woken (its `cx`'s waker) once a [`Admission::release`] may make room, or
/// the lane stalls. [`Admission::try_admit`] and [`Admission::poll_admit`] run on the reader
/// or the dispatcher, [`Admission::release`] wherever a request's handler ends: none may
/// block.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::task::{Context, Poll, Waker};
///
/// use jsonrpc_duplex_core::seam::{Admission, Extension, Feature, Start};
/// use jsonrpc_duplex_core::{Connection, Router, transport::memory};
///
/// /// One of the peer's requests at a time, however small.
/// #[derive(Clone, Default)]
/// struct OneAtATime;
///
/// /// Whether one runs, and the lane waiting for it to end.
/// #[derive(Default)]
/// struct Gate(Mutex<(bool, Option<Waker>)>);
///
/// impl Feature for OneAtATime {
///     fn start(&self, _: &Start<'_>) -> Arc<dyn Extension> {
///         Arc::new(Gate::default())
///     }
/// }
///
/// impl Extension for Gate {
///     fn admission(self: Arc<Self>) -> Option<Arc<dyn Admission>> {
///         Some(self)
///     }
/// }
///
/// impl Admission for Gate {
///     fn try_admit(&self, _bytes: usize) -> Option<u64> {
///         let mut state = self.0.lock().unwrap();
///         (!state.0).then(|| {
///             state.0 = true;
///             1
///         })
///     }
///     fn poll_admit(&self, _bytes: usize, cx: &mut Context<'_>) -> Poll<u64> {
///         let mut state = self.0.lock().unwrap();
///         if state.0 {
///             state.1 = Some(cx.waker().clone());
///             return Poll::Pending;
///         }
///         state.0 = true;
///         Poll::Ready(1)
///     }
///     fn release(&self, _weight: u64) {
///         let waiting = {
///             let mut state = self.0.lock().unwrap();
///             state.0 = false;
///             state.1.take()
///         };
///         if let Some(waker) = waiting {
///             waker.wake();
///         }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let router = Router::new().method("ping", |(): (), _| async { Ok::<_, jsonrpc_duplex_core::ErrorObject>("pong") });
/// let server = Connection::builder().feature(OneAtATime).serve(router);
/// let (client, _server) = memory::pair(Connection::builder(), server);
/// let peer = client.handle();
/// // The second waits for the first to end, then runs.
/// let (a, b) = tokio::join!(peer.request::<String>("ping", ()), peer.request::<String>("ping", ()));
/// assert_eq!((a?, b?), ("pong".to_owned(), "pong".to_owned()));
/// # Ok(()) }
/// ```
pub trait Admission: Send + Sync {
    /// Admit a request whose params take `bytes` if it may start now: `Some` with the weight to
    /// give back to [`Admission::release`] when it ends.
    fn try_admit(&self, bytes: usize) -> Option<u64>;
    /// Admit it, or register `cx` to be woken once it may be (see the trait's docs).
    fn poll_admit(&self, bytes: usize, cx: &mut std::task::Context<'_>) -> std::task::Poll<u64>;
    /// A request admitted with `weight` ended.
    fn release(&self, weight: u64);
}

/// The features of a builder, one of each kind.
#[derive(Default)]
pub(crate) struct Features(Vec<Box<dyn Feature>>);

impl Clone for Features {
    fn clone(&self) -> Self {
        Features(self.0.iter().map(|f| f.clone_box()).collect())
    }
}

impl Features {
    /// The feature of kind `F`, added with its defaults if it is not there yet.
    pub(crate) fn get_mut<F: Feature + Default>(&mut self) -> &mut F {
        let at = match self.0.iter().position(|f| (&**f as &dyn Any).is::<F>()) {
            Some(at) => at,
            None => {
                self.0.push(Box::new(F::default()));
                self.0.len() - 1
            }
        };
        let feature: &mut dyn Any = &mut *self.0[at];
        feature.downcast_mut::<F>().unwrap_or_else(|| unreachable!("found by its type"))
    }

    /// Add `F` with its defaults unless it is there.
    pub(crate) fn with<F: Feature + Default>(mut self) -> Self {
        self.get_mut::<F>();
        self
    }

    /// Add `feature`, in place of one of its kind if there is one.
    pub(crate) fn put<F: Feature>(&mut self, feature: F) {
        match self.0.iter().position(|f| (&**f as &dyn Any).is::<F>()) {
            Some(at) => self.0[at] = Box::new(feature),
            None => self.0.push(Box::new(feature)),
        }
    }
}

/// How many values the extensions of one connection made that wait to be bound to a message (an
/// offered stream not sent yet, a progress token not sent yet): while none does, messages are
/// encoded by serde_json directly. Kept in the connection's shared state itself, beside what
/// every message reads anyway (a separate allocation was a cache line of its own, missed at
/// each message encoded), and counted by the features through their weak handle
/// ([`WeakHandle::unbound`]).
#[derive(Default)]
pub(crate) struct Unbound(AtomicUsize);

impl Unbound {
    /// A value waits to be bound.
    pub(crate) fn arm(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// A value that waited is bound, or gone (once per [`Unbound::arm`]).
    pub(crate) fn disarm(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    pub(crate) fn any(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }
}

/// A connection's extensions and what it keeps for them.
pub(crate) struct Seam {
    extensions: Vec<Arc<dyn Extension>>,
    /// Request and notification names, with the extension that takes each (shared with the
    /// connections started before whose names are the same, see [`Names::shared`]).
    names: Arc<Names>,
    /// Which extension tokens travel in which of our calls, per release phase.
    before: CallBindings,
    after: CallBindings,
}

impl Seam {
    /// The extensions of a new connection: `first` (the connection's own, which take precedence),
    /// then one for each feature. (The connection's own request permits are no extension: they
    /// are made only when no feature's [`Extension::admission`] replaces them.)
    pub(crate) fn new(
        first: impl IntoIterator<Item = Arc<dyn Extension>>,
        features: &Features,
        limits: &Limits,
        tracer: &Tracer,
        handle: &WeakHandle,
    ) -> Self {
        let start = Start { handle, limits, tracer };
        let extensions: Vec<_> = first.into_iter().chain(features.0.iter().map(|f| f.start(&start))).collect();
        let mut names = Names::default();
        for (at, e) in extensions.iter().enumerate() {
            names.requests.extend(e.requests().into_iter().map(|name| (name, at)));
            names.notifications.extend(e.notifications().into_iter().map(|name| (name, at)));
        }
        Seam { extensions, names: names.shared(), before: CallBindings::default(), after: CallBindings::default() }
    }

    /// The extension of kind `E`.
    pub(crate) fn get<E: Extension>(&self) -> Option<Arc<E>> {
        self.extensions.iter().find_map(|e| {
            let any: Arc<dyn Any + Send + Sync> = e.clone();
            any.downcast::<E>().ok()
        })
    }

    /// What admits the peer's requests: the first extension's that has one (see
    /// [`Extension::admission`]).
    pub(crate) fn admission(&self) -> Option<Arc<dyn Admission>> {
        self.extensions.iter().find_map(|e| e.clone().admission())
    }

    /// The extension that answers requests for `method`, if one does.
    pub(crate) fn serving(&self, method: &str) -> Option<&Arc<dyn Extension>> {
        self.names.requests.iter().find(|(name, _)| name == method).map(|(_, at)| &self.extensions[*at])
    }

    /// Whether an extension takes notifications for `method`.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn notifications_taken(&self, method: &str) -> bool {
        self.names.notifications.iter().any(|(name, _)| name == method)
    }

    /// Offer a notification to the extension that takes `method`, if one does. An extension
    /// that panics ends the connection (with the panic's message), never the reader alone.
    pub(crate) fn take(&self, link: &dyn Link, method: &str, params: Option<&RawValue>) -> Take {
        match self.names.notifications.iter().find(|(name, _)| name == method) {
            Some((_, at)) => {
                let taken = catch_unwind(AssertUnwindSafe(|| self.extensions[*at].take(link, method, params)));
                taken.unwrap_or_else(|payload| {
                    link.close(panicked("taking", method, &payload));
                    Take::Taken
                })
            }
            None => Take::Pass,
        }
    }

    /// The router each extension made of `router`, in order; `Err` with the reason to close
    /// when one panicked.
    pub(crate) fn router(&self, mut router: Router) -> Result<Router, CloseReason> {
        for e in &self.extensions {
            router = catch_unwind(AssertUnwindSafe(|| e.router(router)))
                .map_err(|payload| panicked("wrapping", "the router", &payload))?;
        }
        Ok(router)
    }

    /// A notification nobody took: every extension is told (one that panics ends the
    /// connection).
    pub(crate) fn unrouted(&self, link: &dyn Link, method: &str, params: Option<&RawValue>) {
        for e in &self.extensions {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| e.unrouted(link, method, params))) {
                link.close(panicked("hearing of the unrouted", method, &payload));
                return;
            }
        }
    }

    /// A route the connection would never call: its name and why.
    pub(crate) fn shadowing(&self, mut is_routed: impl FnMut(&str) -> bool) -> Option<(&str, &'static str)> {
        self.names
            .requests
            .iter()
            .chain(&self.names.notifications)
            .filter(|(name, _)| is_routed(name))
            .find_map(|(name, at)| Some((&**name, self.extensions[*at].shadows()?)))
    }

    /// A bound value was found in a message going to `target`.
    pub(crate) fn bind(&self, found: Found, target: Target) -> Result<(), String> {
        let Some(at) = self.extensions.iter().position(|e| registry(e) == found.registry) else {
            return if found.strict {
                Err("it belongs to another connection: it can be sent only on the connection that made it".to_owned())
            } else {
                Ok(())
            };
        };
        let extension = &self.extensions[at];
        if let (Bound::ToCall, Target::Request(id)) = (extension.bind(found.token, target)?, target) {
            let bindings = match extension.phase() {
                Phase::BeforeAnswer => &self.before,
                Phase::AfterAnswer => &self.after,
            };
            bindings.bind(id, at, found.token);
        }
        Ok(())
    }

    /// Our call `id` is over (answered, given up, never sent): release what was bound to it in
    /// `phase`.
    ///
    /// Inlined up to the check that anything is bound at all (most often nothing is: a load
    /// and a compare per call, not a call and an empty list).
    #[inline]
    pub(crate) fn release_call(&self, id: u64, phase: Phase) {
        let bindings = match phase {
            Phase::BeforeAnswer => &self.before,
            Phase::AfterAnswer => &self.after,
        };
        if bindings.count.load(Ordering::Acquire) != 0 {
            self.release_bound(bindings, id);
        }
    }

    #[inline(never)]
    fn release_bound(&self, bindings: &CallBindings, id: u64) {
        for (at, token) in bindings.take(id) {
            self.extensions[at].release(token);
        }
    }

    /// The connection ended.
    pub(crate) fn close(&self, reason: &CloseReason) {
        self.before.clear();
        self.after.clear();
        for e in &self.extensions {
            e.closed(reason);
        }
    }
}

/// The request and notification names a connection's extensions take, each with the position
/// of its extension.
#[derive(Default, PartialEq, Eq)]
struct Names {
    requests: Vec<(Cow<'static, str>, usize)>,
    notifications: Vec<(Cow<'static, str>, usize)>,
}

/// The names of the connection started last, while one that uses them lives.
static LAST_NAMES: std::sync::Mutex<std::sync::Weak<Names>> = std::sync::Mutex::new(std::sync::Weak::new());

impl Names {
    /// These names, shared with the connections started before whose names are the same (the
    /// connections of one builder, of one `Server`: the tables are made once, not held by
    /// every connection).
    fn shared(self) -> Arc<Names> {
        let mut last = LAST_NAMES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(names) = last.upgrade().filter(|names| **names == self) {
            return names;
        }
        let names = Arc::new(self);
        *last = Arc::downgrade(&names);
        names
    }
}

/// Why the connection ends when an extension panicked doing `what` with `method`.
fn panicked(what: &str, method: &str, payload: &Box<dyn Any + Send>) -> CloseReason {
    let message = crate::handler::panic_message(payload);
    let method = crate::quote::cut(method, 256);
    tracing::error!(target: crate::LOG_TARGET, %method, panic = %message, "a feature panicked");
    CloseReason::new(CloseKind::FatalError, format!("a feature panicked {what} {method:?}: {message}"))
}

/// The address that marks an extension's values.
pub(crate) fn registry(extension: &Arc<dyn Extension>) -> usize {
    Arc::as_ptr(extension) as *const () as usize
}

/// Our request id → (extension, token) pairs in its params.
type Owned = HashMap<u64, Vec<(usize, u64)>, IdBuild>;

/// Which extension tokens travel in which of our requests: they end when that request is
/// answered, given up, or never sent.
#[derive(Default)]
struct CallBindings {
    /// Our request id → (extension, token) in its params. Made at the first token bound to a
    /// call: a connection whose calls never carried one holds none of it (40 bytes inline, twice,
    /// were every connection's).
    owned: OnceBox<Mutex<Owned>>,
    /// Entries of `owned`, so that answers to calls that carry no token skip the lock.
    count: AtomicUsize,
}

impl CallBindings {
    /// The map, if a token was ever bound (`None`: there is nothing to take).
    fn lock(&self) -> Option<std::sync::MutexGuard<'_, Owned>> {
        // Every critical section is one map operation: a poisoned lock is still consistent.
        Some(self.owned.get()?.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn bind(&self, id: u64, extension: usize, token: u64) {
        let owned = self.owned.get_or_init(|| Box::new(Mutex::new(Owned::default())));
        owned.lock().unwrap_or_else(|p| p.into_inner()).entry(id).or_default().push((extension, token));
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    /// The tokens call `id` carried (none, without taking the lock, in the common case).
    /// (Its one caller, [`Seam::release_call`], looks at `count` first.)
    fn take(&self, id: u64) -> Vec<(usize, u64)> {
        let tokens = self.lock().and_then(|mut owned| owned.remove(&id)).unwrap_or_default();
        self.count.fetch_sub(tokens.len(), Ordering::AcqRel);
        tokens
    }

    fn clear(&self) {
        if let Some(mut owned) = self.lock() {
            owned.clear();
            self.count.store(0, Ordering::Release);
        }
    }
}
