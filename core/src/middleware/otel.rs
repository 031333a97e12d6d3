//! OpenTelemetry spans whose parents cross the wire (feature `otel`).
//!
//! [`OtelLayer`] is [`TraceLayer`]'s span per call (the same fields, OpenTelemetry's names for
//! JSON-RPC) joined to [`PropagateLayer`]'s W3C trace context, through `tracing-opentelemetry`:
//!
//! - an inbound call's span takes the caller's context (`traceparent` where the connection's
//!   profile puts it) as its OpenTelemetry parent, so the server span is the child of the client
//!   span that called it, in the caller's trace;
//! - an outbound call's span (a child of the handler's span when a handler makes it) is written
//!   into the message as its `traceparent`, so the peer's server span is its child in turn.
//!
//! One trace thus spans every hop, in both directions and across processes. With no
//! OpenTelemetry layer in the `tracing` subscriber the spans have no OpenTelemetry context and
//! nothing is written (the spans are plain `tracing` spans, as [`TraceLayer`]'s).
//!
//! ```
//! use jsonrpc_duplex_core::{Connection, middleware::{names::MethodNames, otel::OtelLayer}};
//! use opentelemetry::trace::TracerProvider as _;
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! // An SDK tracer provider with the exporter of your choice (OTLP, stdout, in memory, ...).
//! let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
//! let subscriber = tracing_subscriber::registry()
//!     .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("my-server")));
//! tracing::subscriber::set_global_default(subscriber).unwrap();
//!
//! // Every call in and out gets a span; traceparent crosses the wire where the profile says.
//! let builder = Connection::builder().layer(OtelLayer::new(MethodNames::new(["add", "relay"])));
//! # drop(builder);
//! ```

use std::str::FromStr;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::context::{Placement, PropagateLayer, TraceContext};
use super::names::MethodNames;
use super::trace::{self, TraceLayer};
use super::{BoxFuture, Call, Middleware, Next, Outcome};

/// A span per call whose OpenTelemetry parent crosses the wire (see the [module docs](self)).
///
/// Use it instead of [`TraceLayer`] and [`PropagateLayer`] (not with them).
#[derive(Clone, Debug)]
pub struct OtelLayer {
    trace: TraceLayer,
    propagate: PropagateLayer,
}

impl OtelLayer {
    /// Spans naming these methods (any other is `_OTHER`), the context carried where the
    /// connection's [`Profile`](crate::Profile) puts it.
    pub fn new(names: MethodNames) -> Self {
        OtelLayer { trace: TraceLayer::new(names), propagate: PropagateLayer::from_profile() }
    }

    /// Carry the context at `placement`, whatever the profile.
    #[must_use]
    pub fn placement(mut self, placement: Placement) -> Self {
        self.propagate = PropagateLayer::new(placement);
        self
    }

    /// The placement it was given (`None`: the profile's).
    pub(crate) fn given_placement(&self) -> Option<Placement> {
        self.propagate.placement()
    }
}

/// The W3C trace context of a `tracing` span's OpenTelemetry span (`None` when it has none: no
/// OpenTelemetry layer, or a disabled span). Its `parent_id` is the span's own id: what a
/// callee names as its parent.
pub fn context_of(span: &tracing::Span) -> Option<TraceContext> {
    let context = span.context();
    let span_ref = context.span();
    let span_context = span_ref.span_context();
    if !span_context.is_valid() {
        return None;
    }
    let state = span_context.trace_state().header();
    Some(TraceContext {
        trace_id: span_context.trace_id().to_bytes(),
        parent_id: span_context.span_id().to_bytes(),
        flags: span_context.trace_flags().to_u8(),
        tracestate: (!state.is_empty()).then_some(state),
    })
}

/// [`context_of`] the current span: for
/// [`PropagateLayer::current_from`](super::context::PropagateLayer::current_from).
pub fn current_context() -> Option<TraceContext> {
    context_of(&tracing::Span::current())
}

/// An OpenTelemetry context whose remote parent is `context` (to `set_parent` a span of your
/// own on it).
pub fn remote_parent(context: &TraceContext) -> opentelemetry::Context {
    let state = context.tracestate.as_deref().and_then(|s| TraceState::from_str(s).ok()).unwrap_or_default();
    let span_context = SpanContext::new(
        TraceId::from_bytes(context.trace_id),
        SpanId::from_bytes(context.parent_id),
        TraceFlags::new(context.flags),
        true,
        state,
    );
    opentelemetry::Context::new().with_remote_span_context(span_context)
}

impl Middleware for OtelLayer {
    fn call(&self, mut call: Call, next: Next) -> BoxFuture<Outcome> {
        let span = self.trace.span(&call.info());
        let placement = self.propagate.effective(call.placement);
        if call.is_inbound() {
            // Before the span is first entered: an entered span has started, its parent fixed.
            if let Some(remote) = self.propagate.read(&call, placement) {
                let _ = span.set_parent(remote_parent(&remote));
                call.extensions_mut().insert(remote);
            }
        } else if placement != Placement::Off
            && let Some(own) = context_of(&span)
        {
            self.propagate.write(&mut call, placement, &own);
        }
        trace::run_in(span, call, next)
    }
}
