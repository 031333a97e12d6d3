//! Unix domain sockets: connect to a server's socket file, or accept peers with a
//! [`tokio::net::UnixListener`] (see [`Listener`]).

use std::io;
use std::path::Path;

use tokio::net::{UnixListener, UnixStream};

use super::listener::{Accepted, Lingering, Listener, PeerAddr, refuse_stream};
use crate::message::ErrorObject;
use crate::{Builder, Connection};

impl Builder {
    /// Connect to the Unix domain socket at `path` and start a connection over it.
    ///
    /// ```
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Router, transport::Listener};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = std::env::temp_dir().join(format!("jsonrpc-duplex-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("unix-doc.sock");
    /// let _ = std::fs::remove_file(&path);
    /// let mut listener = tokio::net::UnixListener::bind(&path)?;
    /// tokio::spawn(async move {
    ///     let router = Router::new().method("ping", |(): (), _| async { Ok::<_, ErrorObject>("pong") });
    ///     let (conn, _peer) = listener.accept_connection(Connection::builder().serve(router)).await?;
    ///     conn.closed().await;
    ///     std::io::Result::Ok(())
    /// });
    /// let client = Connection::builder().connect_unix(&path).await?;
    /// assert_eq!(client.handle().request::<String>("ping", ()).await?, "pong");
    /// # std::fs::remove_file(&path)?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_unix(self, path: impl AsRef<Path>) -> io::Result<Connection> {
        let stream = UnixStream::connect(path).await?;
        Ok(self.unix(stream))
    }

    /// Start over a connected Unix domain socket (accepted or connected by you). When the
    /// connection ends, the socket closes once the peer has closed its side too (within 2 s;
    /// meanwhile what it sends is discarded).
    ///
    /// Must be called inside a tokio runtime.
    pub fn unix(mut self, stream: UnixStream) -> Connection {
        if self.peer.is_none() {
            let path = stream.peer_addr().ok().and_then(|a| a.as_pathname().map(Path::to_path_buf));
            let mut peer = crate::PeerInfo::new().with_addr(PeerAddr::Unix(path));
            if let Ok(cred) = stream.peer_cred() {
                peer = peer.with_credentials(crate::PeerCredentials::new(cred.uid(), cred.gid(), cred.pid()));
            }
            self.peer = Some(std::sync::Arc::new(peer));
        }
        let (r, w) = stream.into_split();
        self.connect(Lingering::new(r), w)
    }
}

/// A Unix domain socket peer accepted by a [`UnixListener`].
#[derive(Debug)]
pub struct UnixAccepted {
    stream: UnixStream,
    addr: Option<std::path::PathBuf>,
}

impl UnixAccepted {
    /// The accepted socket.
    pub fn into_inner(self) -> UnixStream {
        self.stream
    }
}

impl Listener for UnixListener {
    type Accepted = UnixAccepted;

    async fn accept(&mut self) -> io::Result<UnixAccepted> {
        let (stream, addr) = UnixListener::accept(self).await?;
        Ok(UnixAccepted { stream, addr: addr.as_pathname().map(Path::to_path_buf) })
    }

    fn listen_addr(&self) -> io::Result<PeerAddr> {
        self.local_addr().map(|a| PeerAddr::Unix(a.as_pathname().map(Path::to_path_buf)))
    }
}

impl Accepted for UnixAccepted {
    fn peer_addr(&self) -> PeerAddr {
        PeerAddr::Unix(self.addr.clone())
    }

    async fn start(self, builder: Builder) -> io::Result<Connection> {
        Ok(builder.unix(self.stream))
    }

    async fn refuse(self, builder: Builder, error: ErrorObject) {
        refuse_stream(self.stream, &builder, &error).await;
    }
}
