//! Who the peer of a connection is: its transport address, its Unix credentials, and what the
//! transport attaches (the request headers of an HTTP connection, say). Middleware reads it
//! (an auth layer refuses a call by it); the connection only carries it.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::handler::Extensions;

/// Where a peer connected from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PeerAddr {
    /// A TCP peer (also under WebSocket).
    Tcp(SocketAddr),
    /// A Unix domain socket peer: the path it bound, if any (clients are usually unnamed).
    Unix(Option<PathBuf>),
    /// Any other transport, described for people.
    Other(String),
}

impl PeerAddr {
    /// The socket address of a TCP (or WebSocket) peer.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        match self {
            PeerAddr::Tcp(addr) => Some(*addr),
            _ => None,
        }
    }
}

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerAddr::Tcp(addr) => write!(f, "{addr}"),
            PeerAddr::Unix(Some(path)) => write!(f, "unix:{}", path.display()),
            PeerAddr::Unix(None) => f.write_str("unix:(unnamed)"),
            PeerAddr::Other(text) => f.write_str(text),
        }
    }
}

/// The credentials of a Unix domain socket peer, as the kernel reports them (`SO_PEERCRED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PeerCredentials {
    /// The peer process's user id.
    pub uid: u32,
    /// The peer process's group id.
    pub gid: u32,
    /// The peer process's id, where the platform reports it.
    pub pid: Option<i32>,
}

impl PeerCredentials {
    /// Credentials from their parts.
    pub fn new(uid: u32, gid: u32, pid: Option<i32>) -> Self {
        PeerCredentials { uid, gid, pid }
    }
}

/// What a connection knows of its peer: filled by the transport (TCP: the address; Unix: the
/// path and the peer's credentials), read by middleware through
/// [`Call::peer`](crate::middleware::Call::peer).
///
/// ```
/// use jsonrpc_duplex_core::{PeerInfo, transport::PeerAddr};
/// let peer = PeerInfo::new().with_addr(PeerAddr::Tcp("127.0.0.1:9000".parse().unwrap()));
/// assert!(peer.addr().and_then(PeerAddr::socket_addr).is_some_and(|a| a.ip().is_loopback()));
/// assert!(peer.credentials().is_none());
/// ```
#[derive(Debug, Default)]
pub struct PeerInfo {
    addr: Option<PeerAddr>,
    credentials: Option<PeerCredentials>,
    extensions: Extensions,
}

impl PeerInfo {
    /// Nothing known.
    pub fn new() -> Self {
        PeerInfo::default()
    }
    /// With the peer's transport address.
    pub fn with_addr(mut self, addr: PeerAddr) -> Self {
        self.addr = Some(addr);
        self
    }
    /// With the peer's Unix credentials.
    pub fn with_credentials(mut self, credentials: PeerCredentials) -> Self {
        self.credentials = Some(credentials);
        self
    }
    /// With a value of the transport's own (one per type).
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }
    /// The peer's transport address, if the transport knows one.
    pub fn addr(&self) -> Option<&PeerAddr> {
        self.addr.as_ref()
    }
    /// The peer's Unix credentials (Unix domain sockets only).
    pub fn credentials(&self) -> Option<&PeerCredentials> {
        self.credentials.as_ref()
    }
    /// What the transport attached.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }
}

/// The peer of a connection whose transport said nothing.
pub(crate) static UNKNOWN: PeerInfo = PeerInfo { addr: None, credentials: None, extensions: Extensions::new() };
