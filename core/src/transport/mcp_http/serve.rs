//! The bounds of [`McpHttpServer::bind`](super::McpHttpServer::bind)'s connections: it runs on
//! the `http` feature's server loop ([`serve`](crate::transport::http::serve::serve)), which
//! has the connection bound (`503` past it), hyper's header read timeout, HTTP/2, and the
//! graceful shutdown the MCP side drives (its GET streams end first, as they never would).

use std::time::Duration;

/// Most HTTP connections served at once by a bound server; more are answered `503`.
pub const MAX_HTTP_CONNECTIONS: usize = 1024;
/// hyper's bound on the time a request's headers take to arrive (and a keep-alive connection
/// may wait idle for its next request).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
