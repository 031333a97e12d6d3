//! W3C trace context across the wire: `traceparent` / `tracestate` read from inbound calls and
//! written on outbound ones, where each protocol puts them.
//!
//! - [`Placement::TopLevel`]: StreamJsonRpc's spelling, members beside `method`
//!   (`{"jsonrpc":"2.0","id":1,"method":"m","traceparent":"00-…"}`); written on outbound calls
//!   and notifications, read from inbound requests and notifications. The reader keeps the two
//!   members only on a connection with a layer that reads them (a connection without pays
//!   nothing: a frame that has them already takes the general parse, which borrows them; they
//!   are copied only then, and count against the read-ahead while the message waits).
//! - [`Placement::McpMeta`]: MCP's and ACP's, inside `params._meta`
//!   (`{"_meta":{"traceparent":"00-…"}}`), read and written (params that are not an object carry
//!   nothing). Both protocols forbid members of their own at a message's top level.
//! - [`Placement::Off`]: for protocols that define no place for it (LSP: its messages are the
//!   base protocol's closed set of members, and it names no carrier).
//!
//! [`PropagateLayer::from_profile`] (the default) takes the placement from the connection's
//! [`Profile`](crate::Profile); [`PropagateLayer::new`] fixes it.
//!
//! The context of an inbound call is in its extensions (a [`TraceContext`], for the handler:
//! `ctx.extensions().get::<TraceContext>()`) and current while its handler runs, so the calls
//! the handler makes (to the peer, or onward through another connection with this layer) carry
//! it by themselves. Where an OpenTelemetry SDK is in use, [`PropagateLayer::current_from`]
//! gives the context of the current span instead (its own span id as the parent), so each
//! server span is the child of the client span that called it; without one the context is
//! forwarded as it came (the trace stays one; this hop is not a span of it).

use std::fmt;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::{Body, BoxFuture, Call, Middleware, Next, Outcome};

tokio::task_local! {
    /// The trace context of the inbound call whose handler is running.
    static CURRENT: TraceContext;
}

/// The longest `tracestate` kept (W3C: 32 members of at most 256 bytes; 512 is what
/// implementations are asked to propagate at least).
pub const MAX_TRACESTATE: usize = 512;

/// A W3C trace context: `traceparent` and, if any, `tracestate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace's id (16 bytes; never all zero).
    pub trace_id: [u8; 16],
    /// The calling span's id (8 bytes; never all zero).
    pub parent_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// The vendors' `tracestate`, as it came (at most [`MAX_TRACESTATE`] bytes).
    pub tracestate: Option<String>,
}

fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl TraceContext {
    /// Parse a `traceparent` (version `00`; lowercase hex; ids not all zero) and an optional
    /// `tracestate` (dropped when longer than [`MAX_TRACESTATE`]).
    ///
    /// ```
    /// use jsonrpc_duplex_core::middleware::context::TraceContext;
    /// let ctx = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Some("k=v")).unwrap();
    /// assert!(ctx.sampled());
    /// assert_eq!(ctx.traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    /// assert!(TraceContext::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None).is_none());
    /// ```
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let mut parts = traceparent.split('-');
        let (version, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version != "00" || parts.next().is_some() {
            return None;
        }
        let trace_id = hex::<16>(trace).filter(|t| t.iter().any(|b| *b != 0))?;
        let parent_id = hex::<8>(parent).filter(|p| p.iter().any(|b| *b != 0))?;
        let [flags] = hex::<1>(flags)?;
        let tracestate = tracestate.filter(|s| s.len() <= MAX_TRACESTATE && !s.is_empty()).map(str::to_owned);
        Some(TraceContext { trace_id, parent_id, flags, tracestate })
    }

    /// The `traceparent` text.
    pub fn traceparent(&self) -> String {
        let mut out = String::with_capacity(55);
        out.push_str("00-");
        for b in self.trace_id {
            out.push_str(&format!("{b:02x}"));
        }
        out.push('-');
        for b in self.parent_id {
            out.push_str(&format!("{b:02x}"));
        }
        out.push_str(&format!("-{:02x}", self.flags));
        out
    }

    /// Whether the caller sampled the trace.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The context of the inbound call whose handler is running on this task, if it came with
    /// one (and [`PropagateLayer`] read it).
    pub fn current() -> Option<TraceContext> {
        CURRENT.try_with(Clone::clone).ok()
    }
}

/// Where a protocol carries the trace context (see the [module docs](self)); the same type as
/// [`TraceContextPlacement`](crate::connection::TraceContextPlacement), which a
/// [`Profile`](crate::Profile) picks.
pub use crate::connection::TraceContextPlacement as Placement;

type Source = Arc<dyn Fn() -> Option<TraceContext> + Send + Sync>;

/// Reads and writes W3C trace context (see the [module docs](self)).
///
/// ```
/// use jsonrpc_duplex_core::{Connection, middleware::context::{Placement, PropagateLayer}};
/// // StreamJsonRpc's top-level members:
/// let builder = Connection::builder().layer(PropagateLayer::new(Placement::TopLevel));
/// // MCP's `params._meta`:
/// let mcp = Connection::builder().layer(PropagateLayer::new(Placement::McpMeta));
/// # drop((builder, mcp));
/// ```
#[derive(Clone)]
pub struct PropagateLayer {
    /// `None`: the connection's profile's.
    placement: Option<Placement>,
    current: Option<Source>,
}

impl Default for PropagateLayer {
    fn default() -> Self {
        Self::from_profile()
    }
}

impl fmt::Debug for PropagateLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PropagateLayer")
            .field("placement", &self.placement)
            .field("current_from", &self.current.is_some())
            .finish()
    }
}

impl PropagateLayer {
    /// Carry the context at `placement`, whatever the connection's profile.
    pub fn new(placement: Placement) -> Self {
        PropagateLayer { placement: Some(placement), current: None }
    }

    /// Carry the context where the connection's [`Profile`](crate::Profile) puts it (also
    /// [`PropagateLayer::default`]): top-level members for plain JSON-RPC (StreamJsonRpc),
    /// `params._meta` under [`Profile::mcp`](crate::Profile::mcp) and
    /// [`Profile::acp`](crate::Profile::acp), nothing under [`Profile::lsp`](crate::Profile::lsp)
    /// (see [`Profile::trace_context`](crate::Profile::trace_context)).
    ///
    /// ```
    /// use jsonrpc_duplex_core::{Connection, Profile, middleware::context::PropagateLayer};
    /// // `params._meta.traceparent`, as MCP's SDKs send it:
    /// let mcp = Connection::builder().profile(Profile::mcp()).layer(PropagateLayer::from_profile());
    /// # drop(mcp);
    /// ```
    pub fn from_profile() -> Self {
        PropagateLayer { placement: None, current: None }
    }

    /// The placement it was given (`None`: the profile's).
    pub(crate) fn placement(&self) -> Option<Placement> {
        self.placement
    }

    /// Where outbound calls take their context from first (say the current OpenTelemetry
    /// span's, through `tracing-opentelemetry`); when it gives none, the inbound call's.
    pub fn current_from(mut self, source: impl Fn() -> Option<TraceContext> + Send + Sync + 'static) -> Self {
        self.current = Some(Arc::new(source));
        self
    }

    /// Where it carries the context on this call's connection.
    pub(crate) fn effective(&self, profile: Placement) -> Placement {
        self.placement.unwrap_or(profile)
    }

    pub(crate) fn read(&self, call: &Call, placement: Placement) -> Option<TraceContext> {
        if placement == Placement::TopLevel {
            let members = call.trace_members()?;
            return TraceContext::parse(&members.traceparent, members.tracestate.as_deref());
        }
        if placement != Placement::McpMeta {
            return None;
        }
        let meta = crate::message::member(call.params()?, "_meta")?;
        let text =
            |name| crate::message::member(meta, name).and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
        TraceContext::parse(&text("traceparent")?, text("tracestate").as_deref())
    }

    pub(crate) fn write(&self, call: &mut Call, placement: Placement, context: &TraceContext) {
        let string = |s: &str| serde_json::to_string(s).unwrap_or_default();
        match placement {
            Placement::Off => {}
            Placement::TopLevel => {
                call.add_member("traceparent", &string(&context.traceparent()));
                if let Some(state) = &context.tracestate {
                    call.add_member("tracestate", &string(state));
                }
            }
            Placement::McpMeta => {
                let mut members = format!("\"traceparent\":{}", string(&context.traceparent()));
                if let Some(state) = &context.tracestate {
                    members.push_str(&format!(",\"tracestate\":{}", string(state)));
                }
                insert_meta(call, &members);
            }
        }
    }
}

/// Put `members` into the params' `_meta` object (made if missing); params that are not an
/// object, or a `_meta` that is not one or already has a `traceparent`, are left alone.
fn insert_meta(call: &mut Call, members: &str) {
    let Body::Out(out) = &mut call.body else { return };
    let Some(at) = out.params_at else { return };
    let Ok(params) = std::str::from_utf8(&out.body[at..out.body.len() - 1]) else { return };
    if !params.starts_with('{') {
        return;
    }
    let Ok(params_raw) = serde_json::from_str::<&RawValue>(params) else { return };
    let (offset, text) = match crate::message::member(params_raw, "_meta") {
        None => {
            let empty = params[1..].trim_start().starts_with('}');
            (1, format!("\"_meta\":{{{members}}}{}", if empty { "" } else { "," }))
        }
        Some(meta) if meta.get().starts_with('{') => {
            if crate::message::member(meta, "traceparent").is_some() {
                return;
            }
            // Where `_meta`'s text starts inside the params (it is a slice of them).
            let start = meta.get().as_ptr() as usize - params.as_ptr() as usize;
            let empty = meta.get()[1..].trim_start().starts_with('}');
            (start + 1, format!("{members}{}", if empty { "" } else { "," }))
        }
        Some(_) => return,
    };
    let at = at + offset;
    out.body.splice(at..at, text.bytes());
}

impl Middleware for PropagateLayer {
    fn call(&self, mut call: Call, next: Next) -> BoxFuture<Outcome> {
        let placement = self.effective(call.placement);
        if placement == Placement::Off {
            return next.run(call);
        }
        if call.is_inbound() {
            let Some(context) = self.read(&call, placement) else { return next.run(call) };
            call.extensions_mut().insert(context.clone());
            let running = CURRENT.sync_scope(context.clone(), || next.run(call));
            return Box::pin(CURRENT.scope(context, running));
        }
        let context = self.current.as_ref().and_then(|source| source()).or_else(TraceContext::current);
        if let Some(context) = context {
            self.write(&mut call, placement, &context);
        }
        next.run(call)
    }
}
