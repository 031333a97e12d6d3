//! Connection settings: limits, per-protocol method names, and the profiles that set a
//! protocol's conventions in one call.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use jsonrpc_duplex_names as names;

use crate::framing::{FrameLimits, Framing};

/// How a protocol spells request cancellation.
///
/// | preset | method | params | does the peer answer a cancelled request? | never cancelled |
/// |---|---|---|---|---|
/// | [`CancelProtocol::lsp`] (default; also StreamJsonRpc) | `$/cancelRequest` | `{"id": X}` | yes (`-32800` or a result) | — |
/// | [`CancelProtocol::acp`] | `$/cancel_request` | `{"requestId": X}` | yes (`-32800`) | — |
/// | [`CancelProtocol::mcp`] | `notifications/cancelled` | `{"requestId": X, "reason": …}` | no | `initialize` |
///
/// Inbound, the params may also be positional (`[X]`); a `"reason"` member, if any, is what a
/// handler reads from [`RequestContext::cancel_reason`](crate::RequestContext::cancel_reason).
/// Outbound, the reason is [`CallOptions::cancel_reason`](super::CallOptions::cancel_reason).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CancelProtocol {
    /// The notification's method name.
    pub method: Cow<'static, str>,
    /// The member of the params object that carries the request id.
    pub id_member: Cow<'static, str>,
    /// Whether a cancelled request is still answered. When `false` (MCP), a cancelled outbound
    /// call is released at once and a late answer absorbed; a cancelled inbound request gets no
    /// answer at all.
    pub answers_cancelled: bool,
    /// Whether to add `"reason"` to the params (MCP).
    pub send_reason: bool,
    /// Methods whose requests are never cancelled on the wire, in either direction. MCP's
    /// `initialize` ("The `initialize` request MUST NOT be cancelled by clients"): a call to it
    /// that times out, is cancelled by its token or is dropped stops waiting here, but no
    /// cancellation is sent; a cancellation the peer sends for one is ignored (logged at WARN)
    /// and the handler runs on.
    pub never_cancelled: Vec<Cow<'static, str>>,
}

impl CancelProtocol {
    /// A protocol of your own: cancellation is the notification `method` with the request's id
    /// in the params member `id_member`; a cancelled request is still answered, no reason is
    /// sent, every method may be cancelled (change the public fields for the rest).
    ///
    /// ```
    /// use jsonrpc_duplex_core::CancelProtocol;
    /// let mut cancel = CancelProtocol::new("custom/cancel", "which");
    /// cancel.answers_cancelled = false;
    /// # drop(cancel);
    /// ```
    pub fn new(method: impl Into<Cow<'static, str>>, id_member: impl Into<Cow<'static, str>>) -> Self {
        CancelProtocol {
            method: method.into(),
            id_member: id_member.into(),
            answers_cancelled: true,
            send_reason: false,
            never_cancelled: Vec::new(),
        }
    }
    /// LSP / StreamJsonRpc / vscode-jsonrpc: `$/cancelRequest {"id"}`.
    pub fn lsp() -> Self {
        CancelProtocol {
            method: names::cancel::LSP.into(),
            id_member: names::cancel::LSP_ID.into(),
            answers_cancelled: true,
            send_reason: false,
            never_cancelled: Vec::new(),
        }
    }
    /// ACP: `$/cancel_request {"requestId"}`.
    pub fn acp() -> Self {
        CancelProtocol {
            method: names::cancel::ACP.into(),
            id_member: names::cancel::ACP_ID.into(),
            answers_cancelled: true,
            send_reason: false,
            never_cancelled: Vec::new(),
        }
    }
    /// MCP: `notifications/cancelled {"requestId", "reason"}`; cancelled requests are not
    /// answered, and `initialize` is never cancelled.
    pub fn mcp() -> Self {
        CancelProtocol {
            method: names::cancel::MCP.into(),
            id_member: names::cancel::MCP_ID.into(),
            answers_cancelled: false,
            send_reason: true,
            never_cancelled: names::cancel::MCP_NEVER_CANCELLED.iter().map(|m| Cow::Borrowed(*m)).collect(),
        }
    }

    /// Whether a request for `method` may be cancelled on the wire.
    pub(crate) fn may_cancel(&self, method: &str) -> bool {
        self.never_cancelled.is_empty() || !self.never_cancelled.iter().any(|m| m == method)
    }
}

impl Default for CancelProtocol {
    fn default() -> Self {
        Self::lsp()
    }
}

/// Which settings were given one by one, so that a profile leaves them alone.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Explicit {
    pub(crate) framing: bool,
    pub(crate) cancel: bool,
}

/// Direction of a traced message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Read from the peer.
    Incoming,
    /// Written to the peer.
    Outgoing,
}

/// Rewrites a message before it is logged at TRACE (to redact tokens or truncate file contents).
pub type TraceRedactor = Arc<dyn Fn(Direction, &str) -> String + Send + Sync>;

/// Default for [`Limits::max_concurrent_requests`].
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 1024;
/// Default for [`Limits::read_ahead`].
pub const DEFAULT_READ_AHEAD: usize = 1024;
/// Default for [`Limits::max_buffered_inbound`].
pub const DEFAULT_MAX_BUFFERED_INBOUND: usize = 65_536;
/// Default for [`Limits::outbound_buffer`].
pub const DEFAULT_OUTBOUND_BUFFER: usize = 8 * 1024 * 1024;
/// Default for [`Limits::max_pending_calls`].
pub const DEFAULT_MAX_PENDING_CALLS: usize = 65_536;
/// Default for [`Limits::max_trace_len`].
pub const DEFAULT_MAX_TRACE_LEN: usize = 4096;
/// Default for [`Builder::eof_grace`](super::Builder::eof_grace).
pub const DEFAULT_EOF_GRACE: Duration = Duration::from_secs(1);
/// Default for [`Builder::flush_timeout`](super::Builder::flush_timeout).
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// Default for [`Limits::max_batch_len`] (geth's batch limit).
pub const DEFAULT_MAX_BATCH_LEN: usize = 1000;
/// Default for [`Limits::max_concurrent_request_bytes`].
pub const DEFAULT_MAX_CONCURRENT_REQUEST_BYTES: usize = 32 * 1024 * 1024;
/// Default for [`Limits::read_ahead_bytes`].
pub const DEFAULT_READ_AHEAD_BYTES: usize = 4 * 1024 * 1024;
/// Default for [`Limits::max_buffered_inbound_bytes`].
pub const DEFAULT_MAX_BUFFERED_INBOUND_BYTES: usize = 32 * 1024 * 1024;
/// Default for [`Limits::max_offered_streams`] (jsonrpsee's subscriptions per connection).
pub const DEFAULT_MAX_OFFERED_STREAMS: usize = 1024;

/// Every limit a connection enforces, with its default.
///
/// Memory a peer can make a connection hold is bounded in bytes: one message (`max_message_size`),
/// the messages read ahead of dispatch and the progress reports not taken yet
/// (`read_ahead_bytes`, then `max_buffered_inbound_bytes` while one of our calls waits), the
/// answers not written yet (`outbound_buffer`), a batch and its answer (`max_batch_len`,
/// `max_message_size`), the streams offered to it (`max_offered_streams`), the requests whose
/// handlers run (`max_concurrent_request_bytes`, counted by the size of their params). Each of
/// these lets one message through however large it is (up to `max_message_size`), so that a
/// large message is never refused by a bound meant for many small ones.
///
/// | limit | default | at the limit |
/// |---|---|---|
/// | `frame.max_message_size` | 64 MiB | inbound: `Content-Length` refused before allocating, connection closed (`RemoteProtocolViolation`); newline: line discarded, `-32600` sent, stream goes on. Outbound: the call fails with [`Error::MessageTooLarge`](super::Error::MessageTooLarge); an answer over it is replaced by `-32603` naming its size; in a batch's answer, a member's answer that would take the array over it is replaced by that error, and if even that does not fit, the whole batch is answered by one `-32603` with `"id": null` |
/// | `frame.max_header_size` | 8 KiB | connection closed (`RemoteProtocolViolation`) |
/// | message shape (not a setting) | JSON objects only | an array or a scalar where a message belongs is `-32600` (each batch member on its own, even `["2.0",1,"echo",[5]]`); where an error object belongs (`"error":[-32050,"x"]`), the call fails with `-32603` "malformed" |
/// | `max_batch_len` | 1000 messages | a longer batch is answered by one `-32600` with `"id": null` (the spec's answer to a batch it cannot take), refused as soon as the count is passed without keeping any of it; the connection goes on |
/// | `max_concurrent_requests` | 1024 | further requests wait in arrival order (the reader keeps reading) |
/// | `max_concurrent_request_bytes` | 32 MiB | the same, counted in the bytes of the running requests' params (as read, at least 1 KiB each; one request may always run) |
/// | `read_ahead` | 1024 messages (at least 1) | the reader stops reading until dispatch catches up, unless an outbound call is pending (then it reads on, so that answers are never stuck behind a flood) |
/// | `read_ahead_bytes` | 4 MiB | the same as `read_ahead`, counted in bytes of the messages waiting for dispatch and of progress reports for our tokens not taken yet (one message always gets in) |
/// | `max_buffered_inbound` | 65,536 messages | reading on past `read_ahead` for a pending call: connection closed (`RemoteProtocolViolation`) |
/// | `max_buffered_inbound_bytes` | 32 MiB | reading on past `read_ahead_bytes` for a pending call (or for progress reports nobody takes): connection closed (`RemoteProtocolViolation`) |
/// | a request the peer cancels while it waits (not a setting) | – | answered `-32800` (under MCP rules, not at all) when the cancellation is read, not when it would have started |
/// | JSON nesting depth (not a setting) | none while framing and routing; 128 when decoding into a type | the frame parser keeps params, results, ids and unknown members as raw text and skips them without recursion, so any depth is read without touching the stack; decoding deeper than serde_json's limit of 128 fails: params are answered `-32602` (`recursion limit exceeded`), a result fails the call with [`Error::Deserialize`](super::Error::Deserialize) |
/// | `max_pending_calls` | 65,536 | a further outbound call waits (before it is numbered or sent) until one of ours is answered or given up |
/// | `outbound_buffer` | 8 MiB | `request`/`notify` wait until the writer drains; responses never wait, but while more than this many bytes of them are unwritten no new inbound request is started and no error answer is queued (so a peer that does not read its answers is paused, through `read_ahead`) |
/// | broadcast backlog ([`ServerBuilder::broadcast_timeout`](crate::server::ServerBuilder::broadcast_timeout)) | `outbound_buffer` for 10 s; twice it at once | a peer whose queue (with what its writer holds unwritten) is over `outbound_buffer` must catch up within the broadcast timeout; a broadcast that would take it past twice that disconnects it at once. One body is shared by every peer's queue |
/// | [`Builder::idle_timeout`](super::Builder::idle_timeout) | off; 5 min on a [`Server`](crate::server::Server)'s connections | nothing read for this long with nothing in flight: connection closed ([`CloseKind::LocallyClosed`](super::CloseKind::LocallyClosed)) |
/// | [`Builder::message_read_timeout`](super::Builder::message_read_timeout) | off; 30 s on a [`Server`](crate::server::Server)'s connections | a message not complete this long after its first bytes: connection closed ([`CloseKind::RemoteProtocolViolation`](super::CloseKind::RemoteProtocolViolation)) |
/// | `max_offered_streams` | 1024 | a stream offered beyond it is refused: sending it fails to serialize, naming the limit (a result becomes a `-32603` answer saying so); it is counted from the offer until the stream ends, is aborted or its call is answered |
/// | request ids (not a setting) | kept as spelled | a number comes back exactly as sent ([`IdNumber`](crate::IdNumber)); two ids are the same only when spelled the same |
/// | maps keyed by the peer's ids (not a setting) | std's `RandomState` | keyed SipHash: a peer cannot aim its ids at one bucket (our own ids keep a cheaper hash) |
/// | `max_trace_len` | 4 KiB | a traced message, and peer input quoted in any log line (ids, method names, params, errors), is cut there and noted with the bytes left out; quoted input also passes the [trace redactor](super::Builder::trace_redactor) |
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
#[must_use = "a builder does nothing until it is used"]
pub struct Limits {
    /// Framing limits.
    pub frame: FrameLimits,
    /// Messages a batch may hold.
    pub max_batch_len: usize,
    /// Inbound requests whose handlers may run at once.
    pub max_concurrent_requests: usize,
    /// Bytes of params the inbound requests whose handlers run may hold at once.
    pub max_concurrent_request_bytes: usize,
    /// Messages read ahead of dispatch before the reader pauses.
    pub read_ahead: usize,
    /// Bytes read ahead of dispatch (and of progress reports not taken yet) before the reader
    /// pauses.
    pub read_ahead_bytes: usize,
    /// Messages read ahead of dispatch (while reading on for a pending call) before the
    /// connection is closed.
    pub max_buffered_inbound: usize,
    /// Bytes read ahead of dispatch and not yet taken by a progress receiver (while reading on
    /// for a pending call) before the connection is closed.
    pub max_buffered_inbound_bytes: usize,
    /// Bytes queued for the writer before senders wait (requests, notifications) or new work
    /// waits (responses).
    pub outbound_buffer: usize,
    /// Outbound calls awaiting their answers at once; a further call waits for a slot.
    pub max_pending_calls: usize,
    /// Streams this side offers that may be live at once.
    pub max_offered_streams: usize,
    /// Longest message text logged at TRACE before truncation, and longest peer input quoted in
    /// any log line.
    pub max_trace_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            frame: FrameLimits::default(),
            max_batch_len: DEFAULT_MAX_BATCH_LEN,
            max_concurrent_requests: DEFAULT_MAX_CONCURRENT_REQUESTS,
            max_concurrent_request_bytes: DEFAULT_MAX_CONCURRENT_REQUEST_BYTES,
            read_ahead: DEFAULT_READ_AHEAD,
            read_ahead_bytes: DEFAULT_READ_AHEAD_BYTES,
            max_buffered_inbound: DEFAULT_MAX_BUFFERED_INBOUND,
            max_buffered_inbound_bytes: DEFAULT_MAX_BUFFERED_INBOUND_BYTES,
            outbound_buffer: DEFAULT_OUTBOUND_BUFFER,
            max_pending_calls: DEFAULT_MAX_PENDING_CALLS,
            max_offered_streams: DEFAULT_MAX_OFFERED_STREAMS,
            max_trace_len: DEFAULT_MAX_TRACE_LEN,
        }
    }
}

/// Each limit can be set on its own, starting from the defaults:
///
/// ```
/// use jsonrpc_duplex_core::{Connection, Limits};
/// let limits = Limits::new().read_ahead(16).max_batch_len(100).max_message_size(1 << 20);
/// assert_eq!((limits.read_ahead, limits.frame.max_message_size), (16, 1 << 20));
/// let builder = Connection::builder().limits(limits);
/// # drop(builder);
/// ```
impl Limits {
    /// Every limit at its default (the table above).
    pub fn new() -> Self {
        Limits::default()
    }
    /// Set the framing limits ([`Limits::frame`]).
    pub fn frame(mut self, frame: FrameLimits) -> Self {
        self.frame = frame;
        self
    }
    /// Set the largest message accepted or sent ([`FrameLimits::max_message_size`]).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.frame.max_message_size = bytes;
        self
    }
    /// Set the largest `Content-Length` header block ([`FrameLimits::max_header_size`]).
    pub fn max_header_size(mut self, bytes: usize) -> Self {
        self.frame.max_header_size = bytes;
        self
    }
    /// Set [`Limits::max_batch_len`].
    pub fn max_batch_len(mut self, messages: usize) -> Self {
        self.max_batch_len = messages;
        self
    }
    /// Set [`Limits::max_concurrent_requests`].
    pub fn max_concurrent_requests(mut self, requests: usize) -> Self {
        self.max_concurrent_requests = requests;
        self
    }
    /// Set [`Limits::max_concurrent_request_bytes`].
    pub fn max_concurrent_request_bytes(mut self, bytes: usize) -> Self {
        self.max_concurrent_request_bytes = bytes;
        self
    }
    /// Set [`Limits::read_ahead`].
    pub fn read_ahead(mut self, messages: usize) -> Self {
        self.read_ahead = messages;
        self
    }
    /// Set [`Limits::read_ahead_bytes`].
    pub fn read_ahead_bytes(mut self, bytes: usize) -> Self {
        self.read_ahead_bytes = bytes;
        self
    }
    /// Set [`Limits::max_buffered_inbound`].
    pub fn max_buffered_inbound(mut self, messages: usize) -> Self {
        self.max_buffered_inbound = messages;
        self
    }
    /// Set [`Limits::max_buffered_inbound_bytes`].
    pub fn max_buffered_inbound_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_inbound_bytes = bytes;
        self
    }
    /// Set [`Limits::outbound_buffer`].
    pub fn outbound_buffer(mut self, bytes: usize) -> Self {
        self.outbound_buffer = bytes;
        self
    }
    /// Set [`Limits::max_pending_calls`].
    pub fn max_pending_calls(mut self, calls: usize) -> Self {
        self.max_pending_calls = calls;
        self
    }
    /// Set [`Limits::max_offered_streams`].
    pub fn max_offered_streams(mut self, streams: usize) -> Self {
        self.max_offered_streams = streams;
        self
    }
    /// Set [`Limits::max_trace_len`].
    pub fn max_trace_len(mut self, bytes: usize) -> Self {
        self.max_trace_len = bytes;
        self
    }
}

/// Where a protocol carries W3C trace context (`traceparent`, `tracestate`); what
/// [`PropagateLayer`](crate::middleware::context::PropagateLayer) reads and writes, and what a
/// [`Profile`](crate::Profile) picks for it (see
/// [`middleware::context`](crate::middleware::context)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TraceContextPlacement {
    /// Top-level `traceparent` / `tracestate` members beside `method` (StreamJsonRpc's; the
    /// plain JSON-RPC profile's).
    #[default]
    TopLevel,
    /// `params._meta.traceparent` / `tracestate` (MCP's and ACP's).
    McpMeta,
    /// Not carried (a protocol that defines no place for it).
    Off,
}

/// Everything a connection is configured with.
#[derive(Clone)]
pub(crate) struct Config {
    /// The name of the profile in force, for messages (`"JSON-RPC"` without one).
    pub(crate) profile: Option<Cow<'static, str>>,
    pub(crate) framing: Framing,
    pub(crate) limits: Limits,
    pub(crate) cancel: CancelProtocol,
    pub(crate) default_timeout: Option<Duration>,
    /// Close when the peer sends nothing for this long with nothing in flight (see
    /// [`super::watchdog`]).
    pub(crate) idle_timeout: Option<Duration>,
    /// Close when a message takes longer than this to arrive once it has begun.
    pub(crate) message_read_timeout: Option<Duration>,
    pub(crate) redactor: Option<TraceRedactor>,
    /// After the peer's EOF, how long handlers still running may take before they are cancelled.
    pub(crate) eof_grace: Duration,
    /// Once the handlers are done (or cancelled), how long the peer may take to read what is
    /// queued before the write side is shut regardless.
    pub(crate) flush_timeout: Duration,
    /// The middleware layers (`crate::middleware`); `None`: none, and nothing is paid.
    pub(crate) layered: Option<Arc<dyn super::Layered>>,
    /// `layered`'s lone hook ([`Layered::watcher`](super::Layered::watcher)), kept here: a call
    /// asks for it without a dynamic call.
    pub(crate) watcher: Option<Arc<dyn super::Watcher>>,
    /// Where the profile carries trace context.
    pub(crate) trace_context: TraceContextPlacement,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            profile: None,
            framing: Framing::default(),
            limits: Limits::default(),
            cancel: CancelProtocol::default(),
            default_timeout: None,
            idle_timeout: None,
            message_read_timeout: None,
            redactor: None,
            eof_grace: DEFAULT_EOF_GRACE,
            flush_timeout: DEFAULT_FLUSH_TIMEOUT,
            layered: None,
            watcher: None,
            trace_context: TraceContextPlacement::TopLevel,
        }
    }
}

impl Config {
    /// Take a profile's conventions, except those set one by one.
    pub(crate) fn apply_profile(
        &mut self,
        name: Cow<'static, str>,
        framing: Framing,
        cancel: CancelProtocol,
        explicit: Explicit,
    ) {
        self.profile = Some(name);
        if !explicit.framing {
            self.framing = framing;
        }
        if !explicit.cancel {
            self.cancel = cancel;
        }
    }

    /// Whether the reader keeps a call's top-level `traceparent` / `tracestate` (a layer reads
    /// them): never without layers.
    pub(crate) fn keeps_trace_members(&self) -> bool {
        self.layered.as_ref().is_some_and(|layered| layered.reads_top_level(self.trace_context))
    }

    /// The profile's name, for messages.
    pub(crate) fn profile_name(&self) -> &str {
        self.profile.as_deref().unwrap_or("JSON-RPC")
    }
}
