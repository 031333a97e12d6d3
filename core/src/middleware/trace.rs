//! A `tracing` span per call, in both directions, with OpenTelemetry's attribute names for
//! JSON-RPC: exported by `tracing-opentelemetry` as a collector expects.

#[cfg(feature = "otel")]
use std::future::Future;
#[cfg(feature = "otel")]
use std::pin::Pin;
use std::sync::OnceLock;
#[cfg(feature = "otel")]
use std::task::{Context, Poll};
use std::time::Instant;

use tracing::field::Empty;

use super::names::MethodNames;
pub use super::state::InCall;
#[cfg(feature = "otel")]
use super::{BoxFuture, Call, Next};
use super::{CallInfo, Hook, Kind, Outcome, error_code};
use crate::connection::Direction;
use crate::message::Id;

/// The tracing target of the spans ([`TraceLayer`]).
pub const TRACE_TARGET: &str = "jsonrpc_duplex::rpc";

/// A span per call and notification, both directions, at INFO on [`TRACE_TARGET`], named `rpc`
/// for `tracing`, with OpenTelemetry's semantic conventions for JSON-RPC as fields:
///
/// | field | value |
/// |---|---|
/// | `otel.name` | the method (what `tracing-opentelemetry` names the span) |
/// | `otel.kind` | `server` (inbound), `client` (outbound) |
/// | `rpc.system.name` | `jsonrpc` |
/// | `rpc.method` | the method, or `_OTHER` when not listed ([`MethodNames`]) |
/// | `jsonrpc.protocol.version` | `2.0` |
/// | `jsonrpc.request.id` | the id as a string (`""` for `null`); absent for a notification |
/// | `rpc.response.status_code` | the error code as a string, on an error |
/// | `error.type` | the same code, on an error |
/// | `otel.status_code` | `ERROR` on an error |
///
/// The handler runs inside the span, so the calls it makes back to the peer (or onward, through
/// another connection with this layer) get spans that are its children. The span also records
/// `duration_ms`, the time until the answer. An outbound call's span is made and ended, not
/// entered: nothing runs inside it but the connection's sending and waiting.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, middleware::{names::MethodNames, trace::TraceLayer}};
/// // `Server::METHODS` of an #[rpc] trait, or the router's own names:
/// let layer = TraceLayer::new(MethodNames::new(["add", "sub"]));
/// let builder = Connection::builder().layer(layer);
/// # drop(builder);
/// ```
#[derive(Clone, Debug, Default)]
pub struct TraceLayer {
    names: MethodNames,
}

impl TraceLayer {
    /// Spans naming these methods; any other is `_OTHER`.
    pub fn new(names: MethodNames) -> Self {
        TraceLayer { names }
    }
}

impl TraceLayer {
    /// The span of one call, not entered yet. A request's id is given with the span (one
    /// call into the subscriber, not a second to record it).
    #[cfg(feature = "otel")]
    pub(crate) fn span(&self, call: &CallInfo<'_>) -> tracing::Span {
        self.span_at(call).0
    }

    /// The span of one call, not entered yet, with which of its two callsites made it (a
    /// request's, 0, or a notification's, 1; see [`duration_field`]).
    fn span_at(&self, call: &CallInfo<'_>) -> (tracing::Span, usize) {
        // The span's own macro checks this too, but only after the name's lookup below: with
        // INFO off (no subscriber at all, most often), nothing is looked up.
        use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
        if tracing::Level::INFO > STATIC_MAX_LEVEL || tracing::Level::INFO > LevelFilter::current() {
            return (tracing::Span::none(), 0);
        }
        let method = self.names.report(call.method());
        let kind = match call.direction() {
            Direction::Incoming => "server",
            Direction::Outgoing => "client",
        };
        match call.id().filter(|_| call.kind() == Kind::Request) {
            Some(id) => (
                tracing::info_span!(
                    target: TRACE_TARGET,
                    "rpc",
                    otel.name = method,
                    otel.kind = kind,
                    rpc.system.name = "jsonrpc",
                    rpc.method = method,
                    jsonrpc.protocol.version = "2.0",
                    jsonrpc.request.id = tracing::field::display(IdText(id)),
                    rpc.response.status_code = Empty,
                    error.type = Empty,
                    otel.status_code = Empty,
                    duration_ms = Empty,
                ),
                0,
            ),
            None => (
                tracing::info_span!(
                    target: TRACE_TARGET,
                    "rpc",
                    otel.name = method,
                    otel.kind = kind,
                    rpc.system.name = "jsonrpc",
                    rpc.method = method,
                    jsonrpc.protocol.version = "2.0",
                    rpc.response.status_code = Empty,
                    error.type = Empty,
                    otel.status_code = Empty,
                    duration_ms = Empty,
                ),
                1,
            ),
        }
    }
}

/// The `duration_ms` field of the span callsite `at` ([`TraceLayer::span_at`]), looked up by
/// name once (recording by name compares it with each of the span's fields, on every call).
/// `span` is an enabled span of that callsite.
fn duration_field(span: &tracing::Span, at: usize) -> Option<&'static tracing::field::Field> {
    static FIELDS: [OnceLock<Option<tracing::field::Field>>; 2] = [OnceLock::new(), OnceLock::new()];
    FIELDS.get(at)?.get_or_init(|| span.metadata()?.fields().field("duration_ms")).as_ref()
}

/// Run the rest of the chain inside `span`, recording the answer's time and error on it (for
/// `OtelLayer`, a middleware: it writes the span's context into outbound messages).
#[cfg(feature = "otel")]
pub(crate) fn run_in(span: tracing::Span, call: Call, next: Next) -> BoxFuture<Outcome> {
    if span.is_disabled() {
        return next.run(call);
    }
    Box::pin(InSpan { span, started: Instant::now(), start: Some((call, next)), running: None })
}

/// The rest of the chain, run and polled inside its span (so the handler's own spans and
/// events, and the calls it makes, are the span's children). What `tracing::Instrument` does,
/// without looking the span up again to record on it when done, and without entering it once
/// more to drop what already finished: the span is entered once per poll, and the rest of the
/// chain is started in the first (not in one entry of its own before it).
#[cfg(feature = "otel")]
struct InSpan {
    span: tracing::Span,
    started: Instant,
    /// What the first poll starts.
    start: Option<(Call, Next)>,
    /// The rest of the chain, once started; `None` again once it has ended (dropped inside the
    /// span, in the poll that ended it).
    running: Option<BoxFuture<Outcome>>,
}

#[cfg(feature = "otel")]
impl Future for InSpan {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let this = self.get_mut();
        let _entered = this.span.enter();
        if let Some((call, next)) = this.start.take() {
            this.running = Some(next.run(call));
        }
        let Some(running) = this.running.as_mut() else {
            return Poll::Ready(Err(crate::connection::Error::Protocol("polled after it ended".into())));
        };
        let Poll::Ready(outcome) = running.as_mut().poll(cx) else { return Poll::Pending };
        this.running = None;
        record_end(&this.span, this.started, &outcome, None);
        Poll::Ready(outcome)
    }
}

#[cfg(feature = "otel")]
impl Drop for InSpan {
    fn drop(&mut self) {
        // Dropped before it ended (cancelled, the connection gone): inside the span, as it ran.
        if self.start.is_some() || self.running.is_some() {
            let _entered = self.span.enter();
            self.start = None;
            self.running = None;
        }
    }
}

/// The id as OpenTelemetry wants it, a string (`""` for `null`), recorded as a display value
/// (no `String` made).
struct IdText<'a>(&'a Id);

impl std::fmt::Display for IdText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Id::Number(n) => std::fmt::Display::fmt(n, f),
            Id::String(s) => f.write_str(s),
            Id::Null => Ok(()),
        }
    }
}

impl Hook for TraceLayer {
    type State = InCall;

    fn on_request(&self, call: &CallInfo<'_>) -> InCall {
        let (span, at) = self.span_at(call);
        if span.is_disabled() {
            return InCall { span, started: None, duration: None, enter: false };
        }
        let duration = duration_field(&span, at);
        InCall { span, started: Some(Instant::now()), duration, enter: call.is_inbound() }
    }

    fn on_response(&self, state: InCall, outcome: &Outcome) {
        let Some(started) = state.started else { return };
        record_end(&state.span, started, outcome, state.duration);
    }

    fn scoped_for(&self, state: &InCall) -> bool {
        state.enter
    }

    fn in_scope<R>(&self, state: &InCall, f: impl FnOnce() -> R) -> R {
        if !state.enter {
            return f();
        }
        let _entered = state.span.enter();
        f()
    }
}

/// Record a call's time (on `duration`, the span's field, when known) and error on its span.
fn record_end(
    span: &tracing::Span,
    started: Instant,
    outcome: &Outcome,
    duration: Option<&'static tracing::field::Field>,
) {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match duration {
        Some(field) => span.record(field, ms),
        None => span.record("duration_ms", ms),
    };
    if let Err(error) = outcome {
        let code = error_code(error);
        span.record("rpc.response.status_code", tracing::field::display(code));
        span.record("error.type", tracing::field::display(code));
        span.record("otel.status_code", "ERROR");
    }
}
