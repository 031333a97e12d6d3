//! In-memory transports for tests and embedding.

use tokio::io::DuplexStream;

use crate::{Builder, Connection};

/// Default buffer of each direction of an in-memory pair.
pub const DEFAULT_PAIR_BUFFER: usize = 64 * 1024;

/// Two connected in-memory byte streams (each direction buffers `DEFAULT_PAIR_BUFFER` bytes).
pub fn streams() -> (DuplexStream, DuplexStream) {
    tokio::io::duplex(DEFAULT_PAIR_BUFFER)
}

/// Two connections talking to each other in memory, configured by their own builders.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, ErrorObject, Router, transport::memory};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (client, _server) = memory::pair(
///     Connection::builder(),
///     Connection::builder().serve(Router::new().method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") })),
/// );
/// let answer: String = client.handle().request("ping", ()).await?;
/// assert_eq!(answer, "pong");
/// # Ok(()) }
/// ```
pub fn pair(a: Builder, b: Builder) -> (Connection, Connection) {
    let (x, y) = streams();
    (a.connect_io(x), b.connect_io(y))
}
