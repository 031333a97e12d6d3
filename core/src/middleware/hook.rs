//! Hooks: layers that only watch, with a synchronous step before a call and one after it.
//!
//! A [`Hook`] sees each call before it runs ([`Hook::on_request`], which returns the hook's own
//! state for this call) and its outcome after ([`Hook::on_response`], given that state back),
//! and may run every poll of the call inside a scope of its own ([`Hook::in_scope`]: a
//! `tracing` span entered). It cannot refuse, hold or change a call: that is what a
//! [`Middleware`] is for. In exchange it costs less: a connection whose only layer is a hook
//! runs it itself, with no chain to walk: the connection's dispatcher holds an inbound
//! request's hook state while it polls the handler (no future, no allocation and no lock of the
//! hook's own), an outbound call's hook runs inside the call's own future, which allocates
//! nothing (a state of [`TraceLayer`](super::trace::TraceLayer) or `MetricsLayer` is kept as it
//! is, another hook's boxed unless zero-sized). For an inbound request, the hook is told the
//! outcome once the answer is given: after the poll that gave it, or by whoever gives it once
//! the handler has ended (a task it handed its responder to); a notification still runs in one
//! future of the hook's.
//! [`TraceLayer`](super::trace::TraceLayer) and [`MetricsLayer`](super::metrics::MetricsLayer)
//! are hooks. To run several hooks at the price of one, give them as a tuple: `(a, b)` is a
//! hook running `a` outside `b`.
//!
//! A hook is installed with [`Builder::layer`](crate::Builder::layer), like a middleware, and
//! takes its place in the order of the layers.
//!
//! A hook in full (count the calls that failed, by direction):
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use jsonrpc_duplex_core::{Connection, ErrorObject, Router, middleware::{CallInfo, Hook, Outcome}};
//!
//! #[derive(Default)]
//! struct CountErrors {
//!     inbound: AtomicU64,
//!     outbound: AtomicU64,
//! }
//!
//! impl Hook for CountErrors {
//!     type State = bool; // inbound?
//!     fn on_request(&self, call: &CallInfo<'_>) -> bool {
//!         call.is_inbound()
//!     }
//!     fn on_response(&self, inbound: bool, outcome: &Outcome) {
//!         if outcome.is_err() {
//!             let counter = if inbound { &self.inbound } else { &self.outbound };
//!             counter.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let errors = Arc::new(CountErrors::default());
//! let (a, b) = tokio::io::duplex(64 * 1024);
//! // An `Arc` of a hook is a hook: keep one to read the counts.
//! let _server = Connection::builder()
//!     .layer(errors.clone())
//!     .serve(Router::new().method("no", |(): (), _| async { Err::<(), _>(ErrorObject::new(7, "no")) }))
//!     .connect_io(a);
//! let client = Connection::builder().connect_io(b);
//! assert!(client.handle().request::<()>("no", ()).await.is_err());
//! while errors.inbound.load(Ordering::Relaxed) == 0 {
//!     tokio::task::yield_now().await; // told just after the answer is written
//! }
//! assert_eq!(errors.outbound.load(Ordering::Relaxed), 0);
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::value::RawValue;

use super::chain::Stack;
use super::state::HookState;
use super::{BoxFuture, Call, Kind, Middleware, Next, Outcome};
use crate::connection::{
    CallOptions, Direction, EncodedCall, Error, Handle, Layered, LayeredFuture, PeerInfo, TraceContextPlacement,
    Watcher,
};
use crate::handler::{BoxFuture as HandlerFuture, Extensions, Router, SlotHook};
use crate::message::{ErrorObject, Id};

/// A layer with a synchronous step before each call and one after it (see the
/// [module docs](self)).
pub trait Hook: Send + Sync + 'static {
    /// What the hook keeps for one call, from [`Hook::on_request`] to [`Hook::on_response`].
    /// Dropped without reaching `on_response` when the call's future is dropped before it ends
    /// (an outbound call the caller gave up on; inside other layers, a handler cancelled as the
    /// connection closes): give it a `Drop` for what must happen then (a gauge going down). An
    /// inbound request under a connection's only layer reaches `on_response` however it ends
    /// (a handler dropped unanswered is answered, and the hook told, `-32800` or `-32603`).
    type State: Send + 'static;

    /// A call or notification, in either direction, before it runs (before an inbound call's
    /// handler; before an outbound call goes on the wire).
    fn on_request(&self, call: &CallInfo<'_>) -> Self::State;

    /// How it ended: for an inbound request, once it is answered (`Ok(None)` for a result, the
    /// error object in `Err(Error::Remote(_))`); for an outbound call, the peer's answer; for a
    /// notification, once handled (inbound) or queued (outbound).
    fn on_response(&self, state: Self::State, outcome: &Outcome);

    /// [`Hook::on_request`], its state as the connection keeps it: a shipped hook's written in
    /// place (through the erasure it would be copied in loads wider than its stores).
    #[doc(hidden)]
    #[inline(always)]
    fn on_request_held(&self, call: &CallInfo<'_>) -> HookState {
        HookState::new(self.on_request(call))
    }

    /// Whether [`Hook::on_response_ref`] tells the hook all [`Hook::on_response`] would (then
    /// the connection tells it so, and drops the state where it holds it after: the state is
    /// not moved out for the call). `false` unless the hook says so.
    #[doc(hidden)]
    const TOLD_BY_REF: bool = false;

    /// [`Hook::on_response`] with the state borrowed (dropped after it), for a hook whose
    /// [`Hook::TOLD_BY_REF`] is `true`.
    #[doc(hidden)]
    fn on_response_ref(&self, state: &Self::State, outcome: &Outcome) {
        let _ = (state, outcome);
    }

    /// Run `f`, one poll of the call (the handler's, inbound), inside the hook's scope for it:
    /// what [`TraceLayer`](super::trace::TraceLayer) enters its span with, so that what the
    /// handler logs and the calls it makes are the span's children. By default, `f()`.
    fn in_scope<R>(&self, state: &Self::State, f: impl FnOnce() -> R) -> R {
        let _ = state;
        f()
    }

    /// Whether [`Hook::in_scope`] does anything (`true` unless the hook says not): a hook
    /// without a scope lets the connection poll its calls without asking it.
    #[doc(hidden)]
    const SCOPED: bool = true;

    /// Whether [`Hook::in_scope`] does anything for this call (by default [`Hook::SCOPED`]):
    /// [`TraceLayer`](super::trace::TraceLayer) enters no span around an outbound call's polls.
    #[doc(hidden)]
    fn scoped_for(&self, state: &Self::State) -> bool {
        let _ = state;
        Self::SCOPED
    }
}

impl<H: Hook> Hook for Arc<H> {
    type State = H::State;
    fn on_request(&self, call: &CallInfo<'_>) -> H::State {
        (**self).on_request(call)
    }
    fn on_response(&self, state: H::State, outcome: &Outcome) {
        (**self).on_response(state, outcome)
    }
    #[inline(always)]
    fn on_request_held(&self, call: &CallInfo<'_>) -> HookState {
        (**self).on_request_held(call)
    }
    const TOLD_BY_REF: bool = H::TOLD_BY_REF;
    fn on_response_ref(&self, state: &H::State, outcome: &Outcome) {
        (**self).on_response_ref(state, outcome)
    }
    fn in_scope<R>(&self, state: &H::State, f: impl FnOnce() -> R) -> R {
        (**self).in_scope(state, f)
    }
    const SCOPED: bool = H::SCOPED;
    fn scoped_for(&self, state: &H::State) -> bool {
        (**self).scoped_for(state)
    }
}

/// Two hooks as one: `A` outside `B` (`A` sees the call first and its outcome last), as
/// `.layer(a).layer(b)` would order them, in one future.
impl<A: Hook, B: Hook> Hook for (A, B) {
    type State = (A::State, B::State);
    fn on_request(&self, call: &CallInfo<'_>) -> Self::State {
        let a = self.0.on_request(call);
        (a, self.1.on_request(call))
    }
    fn on_response(&self, (a, b): Self::State, outcome: &Outcome) {
        self.1.on_response(b, outcome);
        self.0.on_response(a, outcome);
    }
    const TOLD_BY_REF: bool = A::TOLD_BY_REF && B::TOLD_BY_REF;
    fn on_response_ref(&self, (a, b): &Self::State, outcome: &Outcome) {
        self.1.on_response_ref(b, outcome);
        self.0.on_response_ref(a, outcome);
    }
    fn in_scope<R>(&self, (a, b): &Self::State, f: impl FnOnce() -> R) -> R {
        self.0.in_scope(a, || self.1.in_scope(b, f))
    }
    const SCOPED: bool = A::SCOPED || B::SCOPED;
    fn scoped_for(&self, (a, b): &Self::State) -> bool {
        self.0.scoped_for(a) || self.1.scoped_for(b)
    }
}

/// What a [`Hook`] sees of a call: borrowed, nothing copied.
#[derive(Clone, Copy)]
pub struct CallInfo<'a> {
    direction: Direction,
    kind: Kind,
    method: &'a str,
    id: Option<&'a Id>,
    peer: &'a PeerInfo,
    params: Params<'a>,
    extensions: &'a Extensions,
}

#[derive(Clone, Copy)]
enum Params<'a> {
    Raw(Option<&'a RawValue>),
    /// An outbound message as encoded, with its id (read back on demand).
    Encoded(&'a [u8], Option<u64>),
}

impl std::fmt::Debug for CallInfo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallInfo")
            .field("direction", &self.direction)
            .field("kind", &self.kind)
            .field("method", &self.method)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl<'a> CallInfo<'a> {
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
    pub fn method(&self) -> &'a str {
        self.method
    }
    /// The request's id (`None` for a notification); outbound, the id this side gave it.
    pub fn id(&self) -> Option<&'a Id> {
        self.id
    }
    /// Who the peer is (its address, its credentials, what the transport attached).
    pub fn peer(&self) -> &'a PeerInfo {
        self.peer
    }
    /// The raw params (`None` when absent). Outbound, they are read back from the encoded
    /// message (parsed on each call: keep the result if you need it twice).
    pub fn params(&self) -> Option<&'a RawValue> {
        match self.params {
            Params::Raw(params) => params,
            Params::Encoded(body, id) => {
                let at = super::chain::head_offsets(body, id).1?;
                let text = std::str::from_utf8(&body[at..body.len() - 1]).ok()?;
                serde_json::from_str::<&RawValue>(text).ok()
            }
        }
    }
    /// What the layers before this one attached to the call (empty when none did).
    pub fn extensions(&self) -> &'a Extensions {
        self.extensions
    }
}

impl Call {
    /// What a [`Hook`] sees of this call.
    pub fn info(&self) -> CallInfo<'_> {
        let params = match &self.body {
            super::Body::Out(o) => Params::Encoded(&o.body, o.id.as_ref().map(|(n, _)| *n)),
            _ => Params::Raw(self.params()),
        };
        CallInfo {
            direction: self.direction,
            kind: self.kind,
            method: self.method(),
            id: self.id().filter(|_| self.kind == Kind::Request),
            peer: self.peer(),
            params,
            extensions: &self.extensions,
        }
    }
}

/// A hook among other layers: a middleware running it around the rest of the chain.
pub(crate) struct InChain<H>(pub(crate) Arc<H>);

impl<H: Hook> Middleware for InChain<H> {
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
        let state = self.0.on_request(&call.info());
        let hook = self.0.clone();
        Box::pin(async move {
            let mut start = Some((call, next));
            let mut running: Option<BoxFuture<Outcome>> = None;
            let (outcome, state) = scoped(&*hook, state, move |cx| {
                if let Some((call, next)) = start.take() {
                    running = Some(next.run(call));
                }
                match running.as_mut() {
                    Some(running) => running.as_mut().poll(cx),
                    None => Poll::Ready(Err(Error::Protocol("polled after it ended".into()))),
                }
            })
            .await;
            hook.on_response(state, &outcome);
            outcome
        })
    }
}

/// Run `poll` inside the hook's scope until it is ready; then the output, with the state back.
/// The state is kept by the future, not borrowed across an await: it needs `Send`, not `Sync`.
fn scoped<'h, H: Hook, T>(
    hook: &'h H,
    state: H::State,
    mut poll: impl FnMut(&mut Context<'_>) -> Poll<T> + Send + 'h,
) -> impl Future<Output = (T, H::State)> + Send + 'h {
    let mut state = Some(state);
    std::future::poll_fn(move |cx| {
        let Some(now) = state.as_ref() else { return Poll::Pending };
        let out = std::task::ready!(hook.in_scope(now, || poll(cx)));
        match state.take() {
            Some(state) => Poll::Ready((out, state)),
            None => Poll::Pending,
        }
    })
}

/// A connection whose one layer is a hook: the connection runs it itself (see
/// [`Layered::watcher`]), the hook's state held by the dispatcher while it polls an inbound
/// request's handler (left in the reply slot if the handler ends unanswered), or kept in the
/// outbound call's own future.
pub(crate) struct Alone<H> {
    hook: Arc<H>,
    /// The same hook, erased.
    watcher: Arc<dyn Watcher>,
}

impl<H: Hook> Alone<H> {
    fn new(hook: Arc<H>) -> Self {
        let watcher: Arc<dyn Watcher> = Arc::new(Erased(hook.clone()));
        Alone { hook, watcher }
    }
}

/// A hook as the connection runs it.
struct Erased<H>(Arc<H>);

/// Empties a held hook state as it goes out of scope, unwinding included.
struct Clear<'a>(&'a mut Option<HookState>);

impl Drop for Clear<'_> {
    fn drop(&mut self) {
        *self.0 = None;
    }
}

impl<H: Hook> SlotHook for Erased<H> {
    fn scoped(&self, state: &HookState) -> bool {
        H::SCOPED && state.get::<H::State>().is_none_or(|state| self.0.scoped_for(state))
    }

    fn in_scope(&self, state: &HookState, f: &mut dyn FnMut()) {
        match state.get::<H::State>() {
            Some(state) => self.0.in_scope(state, f),
            None => f(),
        }
    }

    fn on_answer(&self, state: &mut Option<HookState>, answer: Result<(), &ErrorObject>) {
        if state.is_none() {
            return;
        }
        let outcome = match answer {
            Ok(()) => Ok(None),
            Err(error) => Err(Error::Remote(error.clone())),
        };
        Watcher::on_response(self, state, &outcome);
    }
}

impl<H: Hook> Watcher for Erased<H> {
    fn on_inbound(&self, method: &str, id: &Id, params: Option<&RawValue>, peer: &PeerInfo) -> HookState {
        let info = CallInfo {
            direction: Direction::Incoming,
            kind: Kind::Request,
            method,
            id: Some(id),
            peer,
            params: Params::Raw(params),
            extensions: &crate::handler::EMPTY_EXTENSIONS,
        };
        self.0.on_request_held(&info)
    }

    fn on_outbound(&self, handle: &Handle, method: &str, call: &EncodedCall) -> HookState {
        let id = Id::from(call.id);
        let info = CallInfo {
            direction: Direction::Outgoing,
            kind: Kind::Request,
            method,
            id: Some(&id),
            peer: handle.peer_ref(),
            params: Params::Encoded(&call.body, Some(call.id)),
            extensions: &crate::handler::EMPTY_EXTENSIONS,
        };
        self.0.on_request_held(&info)
    }

    fn on_response(&self, state: &mut Option<HookState>, outcome: &Outcome) {
        if H::TOLD_BY_REF {
            // Told where the state is, and dropped there, also when the hook panics (told once:
            // whoever holds the state finds it gone).
            let state = Clear(state);
            if let Some(held) = state.0.as_ref().and_then(HookState::get::<H::State>) {
                self.0.on_response_ref(held, outcome);
            }
            return;
        }
        if let Some(state) = state.take().and_then(HookState::take::<H::State>) {
            self.0.on_response(state, outcome);
        }
    }
}

impl<H: Hook> Alone<H> {
    fn wrap_notification(
        hook: Arc<H>,
        peer: Arc<PeerInfo>,
        handler: crate::handler::NotificationFn,
    ) -> crate::handler::NotificationFn {
        let this = Arc::new((hook, peer, handler));
        Arc::new(move |notification: crate::handler::NotificationStart<'_>| -> HandlerFuture {
            let info = CallInfo {
                direction: Direction::Incoming,
                kind: Kind::Notification,
                method: notification.method(),
                id: None,
                peer: &this.1,
                params: Params::Raw(notification.params()),
                extensions: &crate::handler::EMPTY_EXTENSIONS,
            };
            let state = this.0.on_request(&info);
            let notification = notification.into_notification().into_start();
            let this = this.clone();
            Box::pin(async move {
                let (hook, handler) = (&this.0, &this.2);
                // Started inside the hook's scope, in the future's first poll: its params its own.
                let mut start = Some(notification);
                let mut running: Option<HandlerFuture> = None;
                let ((), state) = scoped(&**hook, state, move |cx| {
                    if let Some(notification) = start.take() {
                        running = Some(handler(notification));
                    }
                    match running.as_mut() {
                        Some(running) => running.as_mut().poll(cx),
                        None => Poll::Ready(()),
                    }
                })
                .await;
                hook.on_response(state, &Ok(None));
            })
        })
    }
}

impl<H: Hook> Layered for Alone<H> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn reads_top_level(&self, _: TraceContextPlacement) -> bool {
        false
    }

    fn watcher(&self) -> Option<&Arc<dyn Watcher>> {
        Some(&self.watcher)
    }

    fn wrap(&self, router: Router, peer: Arc<PeerInfo>, _: TraceContextPlacement) -> Router {
        // Requests are not wrapped: the connection's dispatcher runs the hook around them
        // itself (`Layered::watcher`), its state held while it polls the handler.
        let router = Stack::with_fallback(router);
        let hook = self.hook.clone();
        router.map_notifications(move |handler| Self::wrap_notification(hook.clone(), peer.clone(), handler))
    }

    fn call<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        call: EncodedCall,
        options: &'a CallOptions,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>> {
        // `Handle` runs the hook itself (see `Layered::watcher`); this is for a caller that
        // does not, the same way.
        Box::pin(async move { handle.call_watched(&*self.watcher, method, call, options).await.map(Some) })
    }

    fn notify<'a>(
        &'a self,
        handle: &'a Handle,
        method: &'a str,
        body: Vec<u8>,
    ) -> LayeredFuture<'a, Result<Option<Box<RawValue>>, Error>> {
        let info = CallInfo {
            direction: Direction::Outgoing,
            kind: Kind::Notification,
            method,
            id: None,
            peer: handle.peer_ref(),
            params: Params::Encoded(&body, None),
            extensions: &crate::handler::EMPTY_EXTENSIONS,
        };
        let state = self.hook.on_request(&info);
        let hook = &*self.hook;
        Box::pin(async move {
            let mut sending = std::pin::pin!(handle.send_notification(body));
            let (outcome, state) = scoped(hook, state, move |cx| sending.as_mut().poll(cx)).await;
            let outcome = outcome.map(|()| None);
            hook.on_response(state, &outcome);
            outcome
        })
    }
}

#[doc(hidden)]
pub use self::kinds::{AsHook, AsMiddleware};

mod kinds {
    /// [`IntoLayer`](super::IntoLayer)'s kind for a [`Middleware`](super::Middleware).
    #[derive(Debug)]
    pub enum AsMiddleware {}
    /// [`IntoLayer`](super::IntoLayer)'s kind for a [`Hook`](super::Hook).
    #[derive(Debug)]
    pub enum AsHook {}
}

/// What [`Builder::layer`](crate::Builder::layer) takes: a [`Middleware`] or a [`Hook`]
/// (`Kind` is found by the compiler; a type cannot be both).
pub trait IntoLayer<Kind>: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_layer(self) -> Installed;
}

/// A layer ready to install (see [`IntoLayer`]).
#[doc(hidden)]
pub struct Installed {
    /// The layer in the chain.
    pub(crate) layer: Arc<dyn Middleware>,
    /// The same as a connection's only layer, when it can run without the chain.
    pub(crate) alone: Option<Arc<dyn Layered>>,
    /// Its trace-context placement, when it reads or writes trace context.
    pub(crate) propagate: Option<Option<TraceContextPlacement>>,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed").finish_non_exhaustive()
    }
}

impl<M: Middleware> IntoLayer<AsMiddleware> for M {
    fn into_layer(self) -> Installed {
        let any = &self as &dyn std::any::Any;
        let mut propagate = None;
        if let Some(p) = any.downcast_ref::<super::context::PropagateLayer>() {
            propagate = Some(p.placement());
        }
        #[cfg(feature = "otel")]
        if let Some(o) = any.downcast_ref::<super::otel::OtelLayer>() {
            propagate = Some(o.given_placement());
        }
        Installed { layer: Arc::new(self), alone: None, propagate }
    }
}

impl<H: Hook> IntoLayer<AsHook> for H {
    fn into_layer(self) -> Installed {
        let hook = Arc::new(self);
        Installed { layer: Arc::new(InChain(hook.clone())), alone: Some(Arc::new(Alone::new(hook))), propagate: None }
    }
}
