//! # jsonrpc-duplex
//!
//! JSON-RPC 2.0 between two programs over a byte stream, in both directions: an editor and a
//! language server (LSP), an editor and a coding agent (ACP), an SDK and a CLI subprocess.
//!
//! This facade re-exports the runtime ([`jsonrpc_duplex_core`]) and the [`#[rpc]`](rpc) macro;
//! depend on this crate (and `serde` for your own types) only.
//!
//! ```
//! use jsonrpc_duplex::{Connection, ErrorObject, Router};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (a, b) = tokio::io::duplex(64 * 1024);
//! let _server = Connection::builder()
//!     .serve(Router::new().method("add", |(x, y): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(x + y) }))
//!     .connect_io(a);
//! let client = Connection::builder().connect_io(b);
//! let sum: i64 = client.handle().request("add", (2, 40)).await?;
//! assert_eq!(sum, 42);
//! # Ok(()) }
//! ```
//!
#![doc = include_str!("rpc.md")]
//!
#![doc = include_str!("errors.md")]

mod context;
mod describe_gate;
mod error;
mod generator;
mod params;
mod rpc_stream;

#[cfg(feature = "openrpc")]
pub mod golang;
#[cfg(feature = "openrpc")]
pub mod openrpc;
#[cfg(feature = "openrpc")]
pub mod python;
#[cfg(feature = "openrpc")]
mod sdk_ir;
#[cfg(feature = "openrpc")]
pub mod typescript;

pub use jsonrpc_duplex_core::*;

/// Typed client proxies and server dispatchers from a trait; see the [crate docs](crate#the-rpc-macro).
pub use jsonrpc_duplex_macros::rpc;

pub use context::{FromNotificationContext, FromRequestContext};
pub use error::{ClientError, RpcError, RpcErrorType};
/// `#[derive(RpcErrorType)]`: an error enum written once (codes, messages, data, OpenRPC errors);
/// see [`RpcErrorType`](trait@RpcErrorType).
pub use jsonrpc_duplex_macros::RpcErrorType;
pub use rpc_stream::RpcStream;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// The README's Rust blocks, compiled and run as this crate's doctests (`cargo test --doc
/// --all-features`): what a user copies from it builds and runs as written. Blocks marked
/// `ignore` are fragments of a larger program: `tests/readme_fragments.rs` compiles each, as
/// written, inside the program around it.
#[cfg(all(doctest, feature = "openrpc", feature = "otel"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
