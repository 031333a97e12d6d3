//! A `tracing` span per call, in both directions, with OpenTelemetry's attribute names for
//! JSON-RPC: exported by `tracing-opentelemetry` as a collector expects.

#[cfg(feature = "otel")]
use std::future::Future;
#[cfg(feature = "otel")]
use std::pin::Pin;
#[cfg(feature = "otel")]
use std::task::{Context, Poll};

use tracing::field::Empty;

use super::names::MethodNames;
use super::state::HookState;
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
/// another connection with this layer) get spans that are its children. The span ends when the
/// call is answered: its duration is the span's own (what `tracing-opentelemetry` exports as
/// its start and end, and `tracing-subscriber`'s `FmtSpan::CLOSE` prints), not a field of it.
/// An outbound call's span is made and ended, not entered: nothing runs inside it but the
/// connection's sending and waiting.
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
    pub(crate) fn span(&self, call: &CallInfo<'_>) -> tracing::Span {
        // The span's own macro checks this too, but only after the name's lookup below: with
        // INFO off (no subscriber at all, most often), nothing is looked up.
        use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
        if tracing::Level::INFO > STATIC_MAX_LEVEL || tracing::Level::INFO > LevelFilter::current() {
            return tracing::Span::none();
        }
        let method = self.names.report(call.method());
        let kind = match call.direction() {
            Direction::Incoming => "server",
            Direction::Outgoing => "client",
        };
        match call.id().filter(|_| call.kind() == Kind::Request) {
            Some(id) => tracing::info_span!(
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
            ),
            None => tracing::info_span!(
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
            ),
        }
    }
}

/// Run the rest of the chain inside `span`, recording the answer's error on it (for
/// `OtelLayer`, a middleware: it writes the span's context into outbound messages).
#[cfg(feature = "otel")]
pub(crate) fn run_in(span: tracing::Span, call: Call, next: Next) -> BoxFuture<Outcome> {
    if span.is_disabled() {
        return next.run(call);
    }
    Box::pin(InSpan { span, start: Some((call, next)), running: None })
}

/// The rest of the chain, run and polled inside its span (so the handler's own spans and
/// events, and the calls it makes, are the span's children). What `tracing::Instrument` does,
/// without looking the span up again to record on it when done, and without entering it once
/// more to drop what already finished: the span is entered once per poll, and the rest of the
/// chain is started in the first (not in one entry of its own before it).
#[cfg(feature = "otel")]
struct InSpan {
    span: tracing::Span,
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
        record_end(&this.span, &outcome);
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
        let span = self.span(call);
        let enter = call.is_inbound() && !span.is_disabled();
        InCall { span, enter }
    }

    #[inline(always)]
    fn on_request_held(&self, call: &CallInfo<'_>) -> HookState {
        HookState::Trace(self.on_request(call))
    }

    fn on_response(&self, state: InCall, outcome: &Outcome) {
        self.on_response_ref(&state, outcome);
    }

    const TOLD_BY_REF: bool = true;
    fn on_response_ref(&self, state: &InCall, outcome: &Outcome) {
        record_end(&state.span, outcome);
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

/// Record a call's error on its span (nothing for a result: the span ends as it is dropped).
fn record_end(span: &tracing::Span, outcome: &Outcome) {
    if let Err(error) = outcome
        && !span.is_disabled()
    {
        let code = error_code(error);
        span.record("rpc.response.status_code", tracing::field::display(code));
        span.record("error.type", tracing::field::display(code));
        span.record("otel.status_code", "ERROR");
    }
}
