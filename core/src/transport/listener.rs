//! Listening for peers: one connection per accepted socket.

use std::future::Future;
use std::io;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::message::{ErrorObject, Id, encode_response};
use crate::{Builder, Connection};

/// How long refusing a peer may take (writing the error, shutting the socket) before the
/// socket is simply dropped.
#[cfg_attr(not(any(feature = "tcp", feature = "unix")), allow(dead_code))]
pub(crate) const REFUSE_TIMEOUT: Duration = Duration::from_secs(1);

pub use crate::connection::PeerAddr;

/// A source of peers: a TCP or Unix listener, a WebSocket listener, or your own.
///
/// [`Server`](crate::server::Server) serves every peer a listener accepts; for a hand-written
/// accept loop, [`Listener::accept_connection`] gives one [`Connection`] per accepted peer:
///
/// ```
/// use jsonrpc_duplex_core::{Connection, ErrorObject, Router, transport::Listener};
/// # #[cfg(not(feature = "tcp"))] fn main() {} // the example needs the `tcp` feature
/// # #[cfg(feature = "tcp")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let router = Router::new().method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") });
/// tokio::spawn(async move {
///     while let Ok((conn, _peer)) = listener.accept_connection(Connection::builder().serve(router.clone())).await {
///         tokio::spawn(async move { conn.closed().await });
///     }
/// });
/// let client = Connection::builder().connect_tcp(addr).await?;
/// assert_eq!(client.handle().request::<String>("ping", ()).await?, "pong");
/// # Ok(()) }
/// ```
pub trait Listener: Send + 'static {
    /// An accepted peer, before its connection starts.
    type Accepted: Accepted;

    /// Wait for the next peer. Errors are per attempt (say, out of file descriptors): the
    /// listener stays usable.
    fn accept(&mut self) -> impl Future<Output = io::Result<Self::Accepted>> + Send;

    /// The address this listener is bound to.
    fn listen_addr(&self) -> io::Result<PeerAddr>;

    /// Accept one peer and start a connection on it. A handshake (WebSocket) runs here, before
    /// the next peer is accepted: a server accepts in one task and starts connections in others.
    fn accept_connection(
        &mut self,
        builder: Builder,
    ) -> impl Future<Output = io::Result<(Connection, PeerAddr)>> + Send {
        async move {
            let accepted = self.accept().await?;
            let addr = accepted.peer_addr();
            Ok((accepted.start(builder).await?, addr))
        }
    }
}

/// An accepted peer, not yet a connection.
pub trait Accepted: Send + 'static {
    /// Where the peer connected from.
    fn peer_addr(&self) -> PeerAddr;

    /// Finish any handshake and start the connection.
    fn start(self, builder: Builder) -> impl Future<Output = io::Result<Connection>> + Send;

    /// Turn the peer away with `error`, as well as the transport can say it (a JSON-RPC error
    /// response with id `null` in the builder's framing on a byte stream; an HTTP 503 on a
    /// WebSocket handshake), then close. Bounded in time.
    fn refuse(self, builder: Builder, error: ErrorObject) -> impl Future<Output = ()> + Send;
}

/// How long the read half of a closed socket connection goes on reading (and discarding) before
/// the socket is closed.
pub(crate) const LINGER: Duration = Duration::from_secs(2);

/// The read half of a socket connection with a lingering close: when the connection drops it,
/// it keeps reading and discarding until the peer's EOF (at most [`LINGER`]) before it lets the
/// socket close. Closing a socket with unread bytes resets the connection, and a reset can
/// destroy answers the peer has not read yet (or fail its next write, which ends its connection
/// before it reads them); lingering lets the peer read everything up to our EOF and close.
#[cfg_attr(not(any(feature = "tcp", feature = "unix")), allow(dead_code))]
pub(crate) struct Lingering<R: AsyncRead + Send + Unpin + 'static> {
    inner: Option<R>,
}

#[cfg_attr(not(any(feature = "tcp", feature = "unix")), allow(dead_code))]
impl<R: AsyncRead + Send + Unpin + 'static> Lingering<R> {
    pub(crate) fn new(inner: R) -> Self {
        Lingering { inner: Some(inner) }
    }
}

impl<R: AsyncRead + Send + Unpin + 'static> AsyncRead for Lingering<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.inner.as_mut() {
            Some(inner) => std::pin::Pin::new(inner).poll_read(cx, buf),
            None => std::task::Poll::Ready(Ok(())),
        }
    }
}

impl<R: AsyncRead + Send + Unpin + 'static> Drop for Lingering<R> {
    fn drop(&mut self) {
        let (Some(mut inner), Ok(runtime)) = (self.inner.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        runtime.spawn(async move {
            let mut discard = [0u8; 4096];
            let _ = tokio::time::timeout(LINGER, async {
                while let Ok(n) = inner.read(&mut discard).await {
                    if n == 0 {
                        break;
                    }
                }
            })
            .await;
        });
    }
}

/// Write an error response with id `null` in `builder`'s framing and shut the write side down;
/// then read (and discard) what the peer sends until it closes too, so that closing does not
/// reset the connection before the peer has read the error. All within [`REFUSE_TIMEOUT`].
#[cfg_attr(not(any(feature = "tcp", feature = "unix")), allow(dead_code))]
pub(crate) async fn refuse_stream<S: AsyncRead + AsyncWrite + Unpin>(
    mut io: S,
    builder: &Builder,
    error: &ErrorObject,
) {
    let mut body = Vec::with_capacity(128);
    encode_response::<()>(&mut body, &Id::Null, Err(error), crate::message::bind::UNBOUND);
    let mut framed = BytesMut::with_capacity(body.len() + 32);
    builder.framing_setting().codec(builder.frame_limits()).encode(&body, &mut framed);
    let _ = tokio::time::timeout(REFUSE_TIMEOUT, async {
        io.write_all(&framed).await?;
        io.shutdown().await?;
        let mut sink = [0u8; 4096];
        while io.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}
