//! Byte transports: in-memory pairs, this process's stdio, a spawned child process.
//!
//! Any `AsyncRead + AsyncWrite` works through [`Builder::connect`](crate::Builder::connect) or
//! [`Builder::connect_io`](crate::Builder::connect_io); this module adds the ones that need more
//! than a stream.

#[cfg(feature = "process")]
mod child;
pub mod memory;
#[cfg(feature = "stdio")]
mod stdio;

#[cfg(feature = "process")]
pub use child::ChildOptions;
