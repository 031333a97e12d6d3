//! A `tracing` span per call, in both directions, with OpenTelemetry's attribute names for
//! JSON-RPC: exported by `tracing-opentelemetry` as a collector expects.

use std::time::Instant;

use tracing::Instrument;
use tracing::field::Empty;

use super::names::MethodNames;
use super::{BoxFuture, Call, Kind, Middleware, Next, Outcome, error_code};
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
/// `duration_ms`, the time until the answer.
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
    /// The span of one call, not entered yet.
    pub(crate) fn span(&self, call: &Call) -> tracing::Span {
        let method = self.names.report(call.method());
        let kind = match call.direction() {
            Direction::Incoming => "server",
            Direction::Outgoing => "client",
        };
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            "rpc",
            otel.name = method,
            otel.kind = kind,
            rpc.system.name = "jsonrpc",
            rpc.method = method,
            jsonrpc.protocol.version = "2.0",
            jsonrpc.request.id = Empty,
            rpc.response.status_code = Empty,
            error.type = Empty,
            otel.status_code = Empty,
            duration_ms = Empty,
        );
        if call.kind() == Kind::Request
            && let Some(id) = call.id()
            && !span.is_disabled()
        {
            span.record("jsonrpc.request.id", tracing::field::display(IdText(id)));
        }
        span
    }
}

/// Run the rest of the chain inside `span`, recording the answer's time and error on it.
pub(crate) fn run_in(span: tracing::Span, call: Call, next: Next) -> BoxFuture<Outcome> {
    let started = Instant::now();
    let running = span.in_scope(|| next.run(call));
    Box::pin(
        async move {
            let outcome = running.await;
            let span = tracing::Span::current();
            span.record("duration_ms", started.elapsed().as_secs_f64() * 1000.0);
            if let Err(error) = &outcome {
                let code = error_code(error).to_string();
                span.record("rpc.response.status_code", code.as_str());
                span.record("error.type", code.as_str());
                span.record("otel.status_code", "ERROR");
            }
            outcome
        }
        .instrument(span),
    )
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

impl Middleware for TraceLayer {
    fn call(&self, call: Call, next: Next) -> BoxFuture<Outcome> {
        run_in(self.span(&call), call, next)
    }
}
