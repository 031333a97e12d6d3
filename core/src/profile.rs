//! Protocol profiles: the wire conventions of LSP, ACP, MCP and plain JSON-RPC in one call. A
//! profile spans layers (framing and cancellation are the connection's, progress is a feature's),
//! so it lives at the top, where the layers are put together.

use std::borrow::Cow;

use jsonrpc_duplex_names as names;

use crate::connection::{Builder, CancelProtocol, TraceContextPlacement};
use crate::framing::Framing;
use crate::progress::ProgressProtocol;
use crate::stream::EnumeratorProtocol;

/// The wire conventions of one protocol, set with one call: [`Builder::profile`](crate::Builder::profile).
///
/// A profile is data: a framing plus the spellings of the features it turns on (cancellation,
/// progress and a request's own progress token, the enumerator protocol of streams). The presets
/// below are built from the names in [`names`](crate::names); [`Profile::new`] starts one of
/// your own.
///
/// | profile | framing | cancellation | progress | a request's own progress token | trace context |
/// |---|---|---|---|---|---|
/// | [`Profile::lsp`] | `Content-Length` | `$/cancelRequest {"id"}` | `$/progress {"token", "value"}` | `workDoneToken` in the params | off |
/// | [`Profile::acp`] | newline | `$/cancel_request {"requestId"}` | `$/progress {"token", "value"}` | none | `params._meta` |
/// | [`Profile::mcp`] | newline | `notifications/cancelled {"requestId", "reason"}`, never answered | `notifications/progress {"progressToken", ...value}` | `_meta.progressToken` in the params | `params._meta` |
/// | [`Profile::json_rpc`] (the defaults) | `Content-Length` | `$/cancelRequest {"id"}` | `$/progress {"token", "value"}` | none (a progress argument travels as a param of its own) | top-level members |
///
/// The trace context column is where a
/// [`PropagateLayer::from_profile`](crate::middleware::context::PropagateLayer::from_profile)
/// reads and writes `traceparent` / `tracestate`.
///
/// Every preset streams with StreamJsonRpc's `$/enumerator/next` and `$/enumerator/abort`.
///
/// The plain JSON-RPC profile is what StreamJsonRpc and vscode-jsonrpc speak, and what a
/// connection speaks without a profile. A single setting ([`Builder::framing`](crate::Builder::framing),
/// [`Builder::cancel_protocol`](crate::Builder::cancel_protocol),
/// [`Builder::progress_protocol`](crate::Builder::progress_protocol),
/// [`Builder::enumerator_protocol`](crate::Builder::enumerator_protocol)) overrides its part of a
/// profile whether it is given before or after it.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, Framing, Profile};
/// // MCP over stdio: newline framing, `notifications/cancelled`, `notifications/progress`.
/// let mcp = Connection::builder().profile(Profile::mcp());
/// // LSP conventions over a newline-framed pipe.
/// let mixed = Connection::builder().framing(Framing::NewlineDelimited).profile(Profile::lsp());
/// # drop((mcp, mixed));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Profile {
    /// The protocol's name, as messages about it say it (`"MCP"`).
    pub name: Cow<'static, str>,
    /// The framing on byte streams.
    pub framing: Framing,
    /// How cancellation is spelled, and whether a cancelled request is answered.
    pub cancel: CancelProtocol,
    /// How progress is spelled, and where a request carries its own token
    /// ([`ProgressProtocol::request_token`]).
    pub progress: ProgressProtocol,
    /// How the enumerator protocol of streams is spelled.
    pub enumerator: EnumeratorProtocol,
    /// Where W3C trace context travels, for a
    /// [`PropagateLayer::from_profile`](crate::middleware::context::PropagateLayer::from_profile):
    /// top-level members (plain JSON-RPC, as StreamJsonRpc sends them), `params._meta` (MCP,
    /// ACP: both forbid members of their own at a message's top level), or off (LSP, which
    /// names no place for it).
    pub trace_context: TraceContextPlacement,
}

impl Profile {
    /// A protocol of your own, named `name` for the messages that mention it: plain JSON-RPC's
    /// conventions (the table above) until you change them, with the `with_` methods or the
    /// public fields. Every spelling the presets use is in [`names`](crate::names).
    ///
    /// ```
    /// use jsonrpc_duplex_core::{CancelProtocol, Connection, Framing, Profile, ProgressProtocol};
    /// // A protocol that frames by lines, cancels with `acme/cancel {"call": id}` and never
    /// // answers a cancelled request, and reports progress the LSP way with a request's own
    /// // token in its `progress` member.
    /// let mut cancel = CancelProtocol::new("acme/cancel", "call");
    /// cancel.answers_cancelled = false;
    /// let acme = Profile::new("ACME")
    ///     .with_framing(Framing::NewlineDelimited)
    ///     .with_cancel(cancel)
    ///     .with_progress(ProgressProtocol::lsp().with_request_token("progress"));
    /// assert_eq!(acme.name(), "ACME");
    /// assert_eq!(acme.cancel.method, "acme/cancel");
    /// let builder = Connection::builder().profile(acme);
    /// # drop(builder);
    /// ```
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        Profile { name: name.into(), ..Self::json_rpc() }
    }

    /// The Language Server Protocol: `Content-Length` framing, `$/cancelRequest`, `$/progress`,
    /// a request's work-done token in its `workDoneToken` member.
    pub fn lsp() -> Self {
        Profile {
            name: "LSP".into(),
            framing: Framing::ContentLength,
            cancel: CancelProtocol::lsp(),
            progress: ProgressProtocol::lsp().with_request_token(names::progress::LSP_WORK_DONE_TOKEN),
            enumerator: EnumeratorProtocol::stream_json_rpc(),
            trace_context: TraceContextPlacement::Off,
        }
    }

    /// The Agent Client Protocol: newline framing and `$/cancel_request {"requestId"}`.
    pub fn acp() -> Self {
        Profile {
            name: "ACP".into(),
            framing: Framing::NewlineDelimited,
            cancel: CancelProtocol::acp(),
            progress: ProgressProtocol::lsp(),
            enumerator: EnumeratorProtocol::stream_json_rpc(),
            trace_context: TraceContextPlacement::McpMeta,
        }
    }

    /// The Model Context Protocol over stdio: newline framing, `notifications/cancelled` (a
    /// cancelled request is not answered), `notifications/progress` with the token in a request's
    /// `_meta.progressToken`.
    pub fn mcp() -> Self {
        Profile {
            name: "MCP".into(),
            framing: Framing::NewlineDelimited,
            cancel: CancelProtocol::mcp(),
            progress: ProgressProtocol::mcp(),
            enumerator: EnumeratorProtocol::stream_json_rpc(),
            trace_context: TraceContextPlacement::McpMeta,
        }
    }

    /// Plain JSON-RPC 2.0 as StreamJsonRpc and vscode-jsonrpc speak it (the defaults):
    /// `Content-Length` framing, `$/cancelRequest`, `$/progress`.
    pub fn json_rpc() -> Self {
        Profile {
            name: "JSON-RPC".into(),
            framing: Framing::ContentLength,
            cancel: CancelProtocol::lsp(),
            progress: ProgressProtocol::lsp(),
            enumerator: EnumeratorProtocol::stream_json_rpc(),
            trace_context: TraceContextPlacement::TopLevel,
        }
    }

    /// The profiles this crate knows: LSP, ACP, MCP and plain JSON-RPC (to recognise a protocol
    /// by its spellings, say in recorded traffic).
    pub fn presets() -> [Profile; 4] {
        [Self::lsp(), Self::acp(), Self::mcp(), Self::json_rpc()]
    }

    /// The same, with `framing`.
    #[must_use]
    pub fn with_framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// The same, with `cancel`.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancelProtocol) -> Self {
        self.cancel = cancel;
        self
    }

    /// The same, with `progress`.
    #[must_use]
    pub fn with_progress(mut self, progress: ProgressProtocol) -> Self {
        self.progress = progress;
        self
    }

    /// The same, with `enumerator`.
    #[must_use]
    pub fn with_enumerator(mut self, enumerator: EnumeratorProtocol) -> Self {
        self.enumerator = enumerator;
        self
    }

    /// The protocol's name, as messages about it say it (`"MCP"`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The framing this profile uses on byte streams.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// How this profile spells cancellation.
    pub fn cancel_protocol(&self) -> &CancelProtocol {
        &self.cancel
    }

    /// How this profile spells progress.
    pub fn progress_protocol(&self) -> &ProgressProtocol {
        &self.progress
    }

    /// The same, with trace context carried at `placement`.
    #[must_use]
    pub fn with_trace_context(mut self, placement: TraceContextPlacement) -> Self {
        self.trace_context = placement;
        self
    }

    /// Where this profile carries W3C trace context.
    pub fn trace_context(&self) -> TraceContextPlacement {
        self.trace_context
    }

    /// How this profile spells the enumerator protocol of streams.
    pub fn enumerator_protocol(&self) -> &EnumeratorProtocol {
        &self.enumerator
    }
}

impl Default for Profile {
    fn default() -> Self {
        Self::json_rpc()
    }
}

impl Builder {
    /// Speak a protocol: its framing, cancellation and progress conventions in one call (see
    /// [`Profile`]). Settings given one by one override their part of it, before or after.
    pub fn profile(self, profile: Profile) -> Self {
        let Profile { name, framing, cancel, progress, enumerator, trace_context } = profile;
        self.apply_profile(name, framing, cancel)
            .with_profile_progress(progress)
            .with_profile_enumerator(enumerator)
            .set_trace_context(trace_context)
    }
}
