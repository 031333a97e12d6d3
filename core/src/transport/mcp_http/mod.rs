//! MCP's Streamable HTTP transport (feature `mcp-http`): [`McpHttpServer`], a
//! `tower::Service` and [`McpHttpServer::bind`], and [`McpHttpClient`], a client connection
//! over a URL. Revision 2025-11-25 (sessions) and 2026-07-28 (stateless, the version in each
//! request's `_meta`) are served side by side; the client speaks the one it is told
//! ([`McpHttpClient::stateless`] for 2026-07-28) or finds out
//! ([`McpHttpClient::auto_revision`]).
//!
//! The transport only moves messages: MCP's conventions (newline framing does not apply;
//! `notifications/cancelled`, progress in `_meta`) come from
//! [`Profile::mcp()`](crate::Profile::mcp) on the [`Builder`](crate::Builder) you give it, as
//! over stdio.

mod base64;
mod client;
mod mirror;
mod serve;
mod server;
mod session;
pub mod sse;

pub use super::http::guard::AllowList;
pub use client::{BadUrl, DEFAULT_MAX_RECONNECTS, DEFAULT_RECONNECT_DELAY, MAX_INPUT_ROUNDS, McpHttpClient};
pub use serve::{HEADER_READ_TIMEOUT, MAX_HTTP_CONNECTIONS};
pub use server::{
    AuthRejection, BoundMcpServer, DEFAULT_BODY_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_INPUT_TIMEOUT,
    DEFAULT_MAX_BACKLOG, DEFAULT_MAX_BODY, DEFAULT_MAX_INBOUND, DEFAULT_MAX_PRE_SESSION_BYTES, DEFAULT_MAX_REPLAY,
    DEFAULT_MAX_SESSION_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_RETRY, DEFAULT_SHUTDOWN_GRACE,
    MAX_OPEN_REQUESTS_PER_SESSION, MAX_SERVER_INPUT_ROUNDS, McpBody, McpHttpServer, SessionInfo,
};

/// The header naming a session.
pub const HEADER_SESSION_ID: &str = "mcp-session-id";
/// The header naming the revision a client speaks after `initialize`.
pub const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The revisions whose `MCP-Protocol-Version` the server accepts, newest first.
/// (Revision 2026-07-28 is in [`STATELESS_VERSIONS`].)
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The revisions served without sessions, the version on every request (in `_meta` and
/// `MCP-Protocol-Version`): 2026-07-28.
pub const STATELESS_VERSIONS: &[&str] = &["2026-07-28"];
