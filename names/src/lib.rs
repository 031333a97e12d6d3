//! Every protocol spelling [`jsonrpc-duplex`](https://docs.rs/jsonrpc-duplex) speaks, in one
//! place: the method and member names of cancellation, progress and streams in LSP, ACP, MCP and
//! StreamJsonRpc. The core's presets
//! (`CancelProtocol::lsp()`, `ProgressProtocol::mcp()`, `Profile::mcp()`, …) are built from
//! these, the `#[rpc]` macro refuses to declare the names the connection handles itself
//! ([`HANDLED`]), and the `jrpc` tool reads recorded traffic with them.
//!
//! A crate of constants with no dependencies, so that the proc-macro crate can use it without
//! growing its build. Most users want the core's `Profile` instead, which puts these together
//! per protocol (`jsonrpc_duplex_core::names` re-exports this crate).
//!
//! ```
//! use jsonrpc_duplex_names::{cancel, progress};
//! assert_eq!(cancel::MCP, "notifications/cancelled");
//! assert_eq!(progress::MCP_REQUEST_TOKEN, "_meta.progressToken");
//! ```

#![no_std]

/// Request cancellation: a notification naming the request by its id.
pub mod cancel {
    /// LSP's (and StreamJsonRpc's, vscode-jsonrpc's) cancellation: `$/cancelRequest {"id"}`.
    pub const LSP: &str = "$/cancelRequest";
    /// The member of [`LSP`]'s params that carries the request id.
    pub const LSP_ID: &str = "id";
    /// ACP's cancellation: `$/cancel_request {"requestId"}`.
    pub const ACP: &str = "$/cancel_request";
    /// The member of [`ACP`]'s params that carries the request id.
    pub const ACP_ID: &str = "requestId";
    /// MCP's cancellation: `notifications/cancelled {"requestId", "reason"}`; a cancelled
    /// request is not answered.
    pub const MCP: &str = "notifications/cancelled";
    /// The member of [`MCP`]'s params that carries the request id.
    pub const MCP_ID: &str = "requestId";
    /// The member that carries why (MCP sends it; any protocol's may carry it).
    pub const REASON: &str = "reason";
    /// Requests MCP never cancels: "The `initialize` request MUST NOT be cancelled by clients".
    pub const MCP_NEVER_CANCELLED: &[&str] = &[super::lifecycle::INITIALIZE];
}

/// Progress reports: a notification carrying a token the caller chose and a value.
pub mod progress {
    /// LSP's (and StreamJsonRpc's) progress: `$/progress {"token", "value"}`.
    pub const LSP: &str = "$/progress";
    /// The member of [`LSP`]'s params that carries the token.
    pub const LSP_TOKEN: &str = "token";
    /// The member of [`LSP`]'s params that carries the value.
    pub const LSP_VALUE: &str = "value";
    /// Where an LSP request carries its own work-done token in its params.
    pub const LSP_WORK_DONE_TOKEN: &str = "workDoneToken";
    /// Where an LSP request carries its token for partial results.
    pub const LSP_PARTIAL_RESULT_TOKEN: &str = "partialResultToken";
    /// MCP's progress: `notifications/progress {"progressToken", "progress", "total"?, "message"?}`
    /// (the value's members beside the token).
    pub const MCP: &str = "notifications/progress";
    /// The member of [`MCP`]'s params that carries the token.
    pub const MCP_TOKEN: &str = "progressToken";
    /// The object of an MCP request's params that holds its metadata.
    pub const MCP_META: &str = "_meta";
    /// Where an MCP request carries its own progress token: member names separated by `.`.
    pub const MCP_REQUEST_TOKEN: &str = "_meta.progressToken";
}

/// StreamJsonRpc's enumerator protocol: streams pulled in batches.
pub mod enumerator {
    /// The request that pulls the next batch: `$/enumerator/next {"token"}` (or `[token]`).
    pub const NEXT: &str = "$/enumerator/next";
    /// The notification that ends a sequence early: `$/enumerator/abort {"token"}`.
    pub const ABORT: &str = "$/enumerator/abort";
    /// The member that carries the stream's token.
    pub const TOKEN: &str = "token";
}

/// The handshakes and goodbyes of the protocols that have them.
pub mod lifecycle {
    /// The first request of LSP, ACP and MCP.
    pub const INITIALIZE: &str = "initialize";
    /// LSP's notification after `initialize` was answered.
    pub const LSP_INITIALIZED: &str = "initialized";
    /// MCP's notification after `initialize` was answered.
    pub const MCP_INITIALIZED: &str = "notifications/initialized";
    /// LSP's request before `exit`.
    pub const LSP_SHUTDOWN: &str = "shutdown";
    /// LSP's last notification.
    pub const LSP_EXIT: &str = "exit";
}

/// Methods starting with this are optional by LSP's rules ("protocol implementation dependent"):
/// a peer may send them to anyone, and one nobody handles is dropped without a warning.
pub const OPTIONAL_PREFIX: &str = "$/";

/// What the connection does with a name it handles itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// A cancellation (in the profile that spells it so).
    Cancellation,
    /// The pull of a stream's next batch.
    StreamNext,
    /// The early end of a stream.
    StreamAbort,
}

/// The names the connection handles itself, in any profile that uses them: a route or an
/// `#[rpc]` method of one of these names would never be called. (`$/progress` and
/// `notifications/progress` are not here: reports for tokens the peer made go to the router.)
pub const HANDLED: &[(&str, Handled)] = &[
    (cancel::LSP, Handled::Cancellation),
    (cancel::ACP, Handled::Cancellation),
    (cancel::MCP, Handled::Cancellation),
    (enumerator::NEXT, Handled::StreamNext),
    (enumerator::ABORT, Handled::StreamAbort),
];

/// What the connection does with `method`, if it handles it itself (see [`HANDLED`]).
///
/// ```
/// use jsonrpc_duplex_names::{Handled, handled};
/// assert_eq!(handled("notifications/cancelled"), Some(Handled::Cancellation));
/// assert_eq!(handled("$/setTrace"), None);
/// ```
pub fn handled(method: &str) -> Option<Handled> {
    HANDLED.iter().find(|(name, _)| *name == method).map(|(_, what)| *what)
}
