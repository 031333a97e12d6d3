//! What the test files share, one module per idea. Every test file takes it the same way:
//!
//! ```ignore
//! mod support;
//! use support::raw_peer::{RawPeer, pair};
//! use support::time::within;
//! ```
//!
//! Each test binary uses a part of it; the rest is not dead, only unused there.
#![allow(dead_code)]

/// A proptest strategy for arbitrary JSON.
pub(crate) mod arb_json;
/// Socket paths, the open-files limit, resident memory.
pub(crate) mod host;
/// Third-party peers installed from committed lockfiles, example binaries, bounded commands.
pub(crate) mod interop;
/// The key-value service (two `#[rpc]` traits) the `net_*` tests serve over real sockets.
pub(crate) mod kv;
/// Log lines captured from `tracing`.
pub(crate) mod logs;
/// The vscode-jsonrpc peers and the `conformance_peer` example.
pub(crate) mod node;
/// A JSON-RPC peer written by hand on raw bytes.
pub(crate) mod raw_peer;
/// The README's code blocks and the copies other files build of them.
pub(crate) mod readme;
/// Bounded waits.
pub(crate) mod time;
