//! The core of [`jsonrpc-duplex`](https://docs.rs/jsonrpc-duplex): JSON-RPC 2.0 wire types,
//! framing, the bidirectional [`Connection`] and its transports.
//!
//! Layers, each usable alone:
//! - [`message`]: ids, error objects, parsing and encoding of messages;
//! - [`framing`]: `Content-Length` and newline-delimited frames behind one seam;
//! - [`handler`]: inbound requests, their answer-once [`Responder`], the [`Router`];
//! - [`Connection`] / [`Handle`]: outbound calls, dispatch, cancellation, lifecycle;
//! - [`stream`] and [`progress`]: streams both ways (StreamJsonRpc's enumerator protocol) and
//!   `$/progress` reports, over the same connection;
//! - [`transport`]: in-memory pairs, stdio, child processes, TCP, Unix domain sockets,
//!   WebSocket (feature `websocket`), MCP's Streamable HTTP (feature `mcp-http`), and the
//!   [`Listener`](transport::Listener) seam;
//! - [`server`]: one connection per accepted peer, with a connection limit, broadcast and
//!   graceful shutdown.
//!
//! Errors: a call that produced no result says why with an [`Error`] (the peer's error object,
//! a lost connection with its [`CloseReason`], a cancellation, a timeout, a message this side
//! could not encode or decode); an [`ErrorObject`] is the JSON-RPC error object itself, what a
//! handler answers with. The facade's crate docs have the table of every error type.
//!
//! Raw traffic is logged at TRACE on the target [`WIRE_TARGET`]; protocol problems at WARN/DEBUG
//! on [`LOG_TARGET`].

pub mod connection;
mod features;
pub mod framing;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
pub mod handler;
pub mod message;
pub mod middleware;
mod profile;
pub mod progress;
mod quote;
pub mod server;
pub mod stream;
mod sync;
pub mod transport;
mod util;

pub use connection::seam;
pub use connection::{
    Builder, CallOptions, CancelProtocol, ChildExit, CloseKind, CloseReason, Connection, Direction, Error, Handle,
    Limits, PeerCredentials, PeerInfo, WeakHandle,
};
pub use framing::Framing;
pub use handler::{
    Extensions, MethodClash, Notification, NotificationContext, Request, RequestContext, Responder, Router,
};
/// Every protocol spelling this crate speaks, in one place (the presets of [`Profile`],
/// [`CancelProtocol`], [`ProgressProtocol`] and [`EnumeratorProtocol`] are built from them).
pub use jsonrpc_duplex_names as names;
pub use message::{ErrorObject, Id, IdNumber, codes};
pub use profile::Profile;
pub use progress::{Progress, ProgressProtocol, ProgressReceiver, ProgressToken, TokenInParams};
pub use stream::{Enumerable, EnumeratorProtocol, OfferedStream, RemoteStream, StreamSettings};
pub use tokio_util::sync::CancellationToken;
#[cfg(all(feature = "stdio", feature = "tcp"))]
pub use transport::{ADDRESS_LINE_PREFIX, CliTransport};

/// The tracing target of every raw message in and out (TRACE).
pub const WIRE_TARGET: &str = "jsonrpc_duplex::wire";
/// The tracing target of protocol events (WARN/DEBUG).
pub const LOG_TARGET: &str = "jsonrpc_duplex";
