//! Transports: in-memory pairs, this process's stdio, a spawned child process, TCP (feature
//! `tcp`), Unix domain sockets (feature `unix`), WebSocket (feature `websocket`), HTTP (feature
//! `http`), MCP's Streamable HTTP (feature `mcp-http`, [`mcp_http`]), and the
//! [`Listener`] seam that accepts peers for a [`Server`](crate::server::Server).
//!
//! Any `AsyncRead + AsyncWrite` works through [`Builder::connect`](crate::Builder::connect) or
//! [`Builder::connect_io`](crate::Builder::connect_io), any message-oriented transport through
//! [`Builder::connect_messages`](crate::Builder::connect_messages); this module adds the ones
//! that need more than a stream.

#[cfg(feature = "process")]
mod child;
#[cfg(all(feature = "stdio", feature = "tcp"))]
mod cli;
#[cfg(feature = "http")]
pub mod http;
mod listener;
#[cfg(feature = "mcp-http")]
pub mod mcp_http;
pub mod memory;
#[cfg(feature = "stdio")]
mod stdio;
#[cfg(feature = "tcp")]
mod tcp;
#[cfg(all(unix, feature = "unix"))]
mod unix;
#[cfg(feature = "websocket")]
pub mod websocket;

#[cfg(feature = "process")]
pub use child::ChildOptions;
#[cfg(all(feature = "stdio", feature = "tcp"))]
pub use cli::{ADDRESS_LINE_PREFIX, CliTransport};
pub use listener::{Accepted, Listener, PeerAddr};
#[cfg(feature = "tcp")]
pub use tcp::{LISTEN_BACKLOG, TcpAccepted, bind as bind_tcp};
#[cfg(all(unix, feature = "unix"))]
pub use unix::UnixAccepted;
