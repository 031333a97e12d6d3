//! TCP: connect to a server, or accept peers with a [`tokio::net::TcpListener`] (see
//! [`Listener`]).

use std::io;

use tokio::net::{TcpListener, TcpSocket, TcpStream, ToSocketAddrs};

use super::listener::{Accepted, Lingering, Listener, PeerAddr, refuse_stream};
use crate::message::ErrorObject;
use crate::{Builder, Connection};

impl Builder {
    /// Connect to a TCP server and start a connection over the socket.
    ///
    /// ```
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Router};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// tokio::spawn(async move {
    ///     let (socket, _) = listener.accept().await?;
    ///     let router = Router::new().method("echo", |(s,): (String,), _| async move { Ok::<_, ErrorObject>(s) });
    ///     let conn = Connection::builder().serve(router).tcp(socket);
    ///     conn.closed().await;
    ///     std::io::Result::Ok(())
    /// });
    /// let client = Connection::builder().connect_tcp(addr).await?;
    /// let echoed: String = client.handle().request("echo", ["hi"]).await?;
    /// assert_eq!(echoed, "hi");
    /// # Ok(()) }
    /// ```
    pub async fn connect_tcp(self, addr: impl ToSocketAddrs) -> io::Result<Connection> {
        let stream = TcpStream::connect(addr).await?;
        Ok(self.tcp(stream))
    }

    /// Start over a connected TCP socket (accepted or connected by you). Sets `TCP_NODELAY`:
    /// the writer already coalesces what is queued at once, so small answers should leave
    /// without Nagle's delay. When the connection ends, the socket closes once the peer has
    /// closed its side too (within 2 s; meanwhile what it sends is discarded), so that no reset
    /// destroys answers it has not read yet.
    ///
    /// Must be called inside a tokio runtime.
    pub fn tcp(mut self, stream: TcpStream) -> Connection {
        let _ = stream.set_nodelay(true);
        if self.peer.is_none()
            && let Ok(addr) = stream.peer_addr()
        {
            self.peer = Some(std::sync::Arc::new(crate::PeerInfo::new().with_addr(PeerAddr::Tcp(addr))));
        }
        let (r, w) = stream.into_split();
        self.connect(Lingering::new(r), w)
    }
}

/// The listen backlog of the listeners this crate binds (the kernel caps it at
/// `net.core.somaxconn`). Tokio's default of 1024 overflows when a thousand peers connect at
/// once, and a dropped SYN costs its peer a one-second retransmit.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Bind a TCP listener with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR` on unix, as tokio does): the
/// first of `addr`'s addresses that binds.
pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host(addr).await? {
        let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket.bind(addr) {
            Ok(()) => match socket.listen(LISTEN_BACKLOG) {
                Ok(listener) => return Ok(listener),
                Err(e) => last = Some(e),
            },
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the address resolved to nothing")))
}

/// A TCP peer accepted by a [`TcpListener`].
#[derive(Debug)]
pub struct TcpAccepted {
    stream: TcpStream,
    addr: std::net::SocketAddr,
}

impl TcpAccepted {
    /// The accepted socket and the peer's address.
    pub fn into_inner(self) -> (TcpStream, std::net::SocketAddr) {
        (self.stream, self.addr)
    }
}

impl Listener for TcpListener {
    type Accepted = TcpAccepted;

    async fn accept(&mut self) -> io::Result<TcpAccepted> {
        let (stream, addr) = TcpListener::accept(self).await?;
        Ok(TcpAccepted { stream, addr })
    }

    fn listen_addr(&self) -> io::Result<PeerAddr> {
        self.local_addr().map(PeerAddr::Tcp)
    }
}

impl Accepted for TcpAccepted {
    fn peer_addr(&self) -> PeerAddr {
        PeerAddr::Tcp(self.addr)
    }

    async fn start(self, builder: Builder) -> io::Result<Connection> {
        Ok(builder.tcp(self.stream))
    }

    async fn refuse(self, builder: Builder, error: ErrorObject) {
        let _ = self.stream.set_nodelay(true);
        refuse_stream(self.stream, &builder, &error).await;
    }
}
