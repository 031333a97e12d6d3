//! Serving many peers: one [`Connection`] per accepted peer of a [`Listener`], each served the
//! same router (or its own, built per connection), with a connection limit, broadcast and
//! graceful shutdown.
//!
//! ```
//! use std::time::Duration;
//! use jsonrpc_duplex_core::{Connection, ErrorObject, Router, server::Server};
//! # #[cfg(not(feature = "tcp"))] fn main() {} // the example needs the `tcp` feature
//! # #[cfg(feature = "tcp")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder()
//!     .max_connections(100)
//!     .serve_with(|peer| {
//!         // Per-connection state; `peer.handle()` calls this client back.
//!         let id = peer.id();
//!         Router::new().method("whoami", move |(): (), _| async move { Ok::<_, ErrorObject>(id) })
//!     })
//!     .bind_tcp("127.0.0.1:0")
//!     .await?;
//! let addr = server.local_addr().and_then(|a| a.socket_addr()).expect("a TCP address");
//!
//! let client = Connection::builder()
//!     .serve(Router::new().notification("news", |(text,): (String,), _| async move { println!("{text}") }))
//!     .connect_tcp(addr)
//!     .await?;
//! let id: u64 = client.handle().request("whoami", ()).await?;
//! assert_eq!(id, 0);
//!
//! let sent = server.broadcast("news", ["the server says hello"])?;
//! assert_eq!(sent.queued, 1);
//! let report = server.shutdown(Duration::from_secs(5)).await;
//! assert_eq!(report.unfinished, 0);
//! # Ok(()) }
//! ```
//!
//! Isolation: every peer has its own tasks and its own bounded queues (see
//! [`Limits`](crate::Limits)); the accept loop never waits on a peer (handshakes and refusals
//! run in tasks of their own, bounded in time, and a connection runs in its own tasks: once it
//! runs, the server keeps no task per peer); a peer that
//! sends garbage, stops reading or dies affects its own connection only, and
//! [`Server::broadcast`] never waits for a peer that does not read: it shares one body between
//! every peer's queue, and a peer that lags by its outbound buffer for the broadcast timeout (or
//! by twice it at all) is disconnected. A peer that trickles a message, or sends nothing with
//! nothing in flight, is cut by the message read timeout and the idle timeout
//! ([`ServerBuilder::message_read_timeout`], [`ServerBuilder::idle_timeout`]).

mod gate;
mod peer;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use peer::{Broadcast, Peer, ServerHandle, ServerStats};

use self::gate::Gate;
use self::peer::Inner;
use crate::message::{ErrorObject, codes};
use crate::transport::{Accepted, Listener, PeerAddr};
use crate::{Builder, CloseKind, CloseReason, Connection, Router};

/// Default for [`ServerBuilder::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// Default for [`ServerBuilder::broadcast_timeout`].
pub const DEFAULT_BROADCAST_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`ServerBuilder::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Default for [`ServerBuilder::message_read_timeout`] (hyper's header read timeout).
pub const DEFAULT_MESSAGE_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds a router for one connection.
type PeerFactory = Arc<dyn Fn(&Peer) -> Router + Send + Sync>;

/// Configures a [`Server`]; start it with [`ServerBuilder::listen`] or a `bind_*` method.
#[must_use = "a builder does nothing until it is used"]
pub struct ServerBuilder {
    connection: Builder,
    factory: Option<PeerFactory>,
    max_connections: usize,
    broadcast_timeout: Duration,
    idle_timeout: Option<Duration>,
    message_read_timeout: Option<Duration>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("connection", &self.connection)
            .field("per_connection_factory", &self.factory.is_some())
            .field("max_connections", &self.max_connections)
            .field("broadcast_timeout", &self.broadcast_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("message_read_timeout", &self.message_read_timeout)
            .finish()
    }
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder::new(Connection::builder())
    }
}

impl ServerBuilder {
    /// Every connection starts from a clone of `connection`: its framing, limits, cancel
    /// protocol and the services it serves.
    pub fn new(connection: Builder) -> Self {
        ServerBuilder {
            connection,
            factory: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            broadcast_timeout: DEFAULT_BROADCAST_TIMEOUT,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            message_read_timeout: Some(DEFAULT_MESSAGE_READ_TIMEOUT),
        }
    }

    /// Serve a router (or a generated dispatcher) on every connection; shared by all of them.
    ///
    /// # Panics
    /// If it registers a method already served (see [`Builder::serve`]).
    pub fn serve(mut self, service: impl Into<Router>) -> Self {
        self.connection = self.connection.serve(service);
        self
    }

    /// Serve a router built for each connection as it starts: per-connection state, which may
    /// keep [`Peer::handle`] to call that client back (and [`Peer::server`] to reach the
    /// others). Runs before the connection reads its first message. Combines with
    /// [`ServerBuilder::serve`]; a method both register closes each connection at its start
    /// ([`CloseKind::FatalError`] naming the method). Calling it again replaces the factory.
    pub fn serve_with<F, S>(mut self, factory: F) -> Self
    where
        F: Fn(&Peer) -> S + Send + Sync + 'static,
        S: Into<Router>,
    {
        self.factory = Some(Arc::new(move |peer| factory(peer).into()));
        self
    }

    /// How many connections may be open at once, handshakes included ([`DEFAULT_MAX_CONNECTIONS`]).
    /// A peer beyond it is accepted and turned away at once (counted in
    /// [`ServerStats::refused`]) with a `-32005` error response with id `null` (an HTTP 503 on
    /// a WebSocket handshake). Mind the process's file descriptor limit (`ulimit -n`): each
    /// connection holds one.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// How long a peer may lag behind the broadcasts queued for it by more than its outbound
    /// buffer ([`DEFAULT_BROADCAST_TIMEOUT`]): one that has not caught up by then is
    /// disconnected rather than silently missing messages (one that would lag by twice its
    /// buffer is disconnected at once; see [`ServerHandle::broadcast`]).
    pub fn broadcast_timeout(mut self, timeout: Duration) -> Self {
        self.broadcast_timeout = timeout;
        self
    }

    /// Close a connection whose peer has sent nothing for `timeout` while nothing is in flight
    /// ([`DEFAULT_IDLE_TIMEOUT`]; `None` keeps quiet peers forever, as a server whose clients
    /// only listen for broadcasts may want). See [`Builder::idle_timeout`]; this setting
    /// replaces the connection builder's.
    pub fn idle_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.idle_timeout = timeout.into();
        self
    }

    /// Close a connection whose peer takes longer than `timeout` to send a message once its
    /// first bytes have arrived ([`DEFAULT_MESSAGE_READ_TIMEOUT`]; `None` for no limit): a peer
    /// trickling bytes cannot hold a connection slot. Mind the time your largest messages take
    /// on your slowest link. See [`Builder::message_read_timeout`]; this setting replaces the
    /// connection builder's.
    pub fn message_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.message_read_timeout = timeout.into();
        self
    }

    /// Bind a TCP listener (with a backlog of
    /// [`LISTEN_BACKLOG`](crate::transport::LISTEN_BACKLOG)) and serve it.
    #[cfg(feature = "tcp")]
    pub async fn bind_tcp(self, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<Server> {
        Ok(self.listen(crate::transport::bind_tcp(addr).await?))
    }

    /// Bind a Unix domain socket at `path` and serve it. The socket file is not removed when
    /// the server stops.
    #[cfg(all(unix, feature = "unix"))]
    pub fn bind_unix(self, path: impl AsRef<std::path::Path>) -> std::io::Result<Server> {
        Ok(self.listen(tokio::net::UnixListener::bind(path)?))
    }

    /// Bind a TCP listener for WebSocket peers (see [`ServerBuilder::bind_tcp`]) and serve it.
    #[cfg(feature = "websocket")]
    pub async fn bind_websocket(self, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<Server> {
        Ok(self.listen(crate::transport::websocket::WebSocketListener::bind(addr).await?))
    }

    /// Serve plain JSON-RPC over HTTP on `addr` (see
    /// [`transport::http::server`](crate::transport::http::server)): the services given to
    /// [`ServerBuilder::serve`], the connection builder's limits, [`ServerBuilder::max_connections`]
    /// TCP connections (more are answered `503`), and [`ServerBuilder::message_read_timeout`] as
    /// the header and body read timeouts. Loopback `Host`/`Origin` only:
    /// [`ServerBuilder::bind_http_with`] changes that and the other HTTP settings.
    ///
    /// A [`ServerBuilder::serve_with`] factory is refused (`InvalidInput`): over HTTP there is no
    /// lasting peer to build state for; [`HttpService::serve_with`](crate::transport::http::server::HttpService::serve_with)
    /// builds handlers per request instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Router, server::Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
    /// let server = Server::builder().serve(router).bind_http("127.0.0.1:0").await?;
    /// let client = Connection::builder().connect_http(&format!("http://{}/", server.local_addr()))?;
    /// assert_eq!(client.handle().request::<i64>("add", (40, 2)).await?, 42);
    /// server.shutdown(Duration::from_secs(1)).await;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http")]
    pub async fn bind_http(
        self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> std::io::Result<crate::transport::http::serve::HttpServer> {
        self.bind_http_with(addr, |service| service).await
    }

    /// [`ServerBuilder::bind_http`], with the HTTP service's own settings (allow-lists, an
    /// authentication hook, timeouts, per-request handlers) set by `configure`.
    #[cfg(feature = "http")]
    pub async fn bind_http_with(
        self,
        addr: impl tokio::net::ToSocketAddrs,
        configure: impl FnOnce(crate::transport::http::server::HttpService) -> crate::transport::http::server::HttpService,
    ) -> std::io::Result<crate::transport::http::serve::HttpServer> {
        use crate::transport::http::{serve::ServeConfig, server::HttpService};
        if self.factory.is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "bind_http: ServerBuilder::serve_with builds state per connection, which HTTP does not have; use \
                 ServerBuilder::serve, or HttpService::serve_with for handlers built per request",
            ));
        }
        let config =
            ServeConfig::new().max_connections(self.max_connections).header_read_timeout(self.message_read_timeout);
        let service = configure(HttpService::new(self.connection).body_read_timeout(self.message_read_timeout));
        service.bind(addr, config).await
    }

    /// Serve every peer `listener` accepts. Must be called inside a tokio runtime.
    pub fn listen<L: Listener>(self, listener: L) -> Server {
        let gate = Arc::new(Gate::default());
        let inner = Arc::new(Inner {
            peers: Mutex::new(Default::default()),
            next_id: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            stats: Default::default(),
            max_connections: self.max_connections,
            broadcast_timeout: self.broadcast_timeout,
            close_bound: self.connection.config.flush_timeout + Duration::from_secs(1),
            lagging: Mutex::new(Default::default()),
            local_addr: listener.listen_addr().ok(),
            stop_accepting: CancellationToken::new(),
            close_all: CancellationToken::new(),
            gate: gate.clone(),
            tasks: TaskTracker::new(),
            accepting: TaskTracker::new(),
        });
        let template = self
            .connection
            .idle_timeout(self.idle_timeout)
            .message_read_timeout(self.message_read_timeout)
            .feature(gate::DrainGate(gate.clone()));
        inner.accepting.spawn(accept_loop(listener, inner.clone(), template, self.factory));
        inner.accepting.close();
        Server { inner }
    }
}

/// Serves every peer of a listener; see the [module docs](self).
///
/// Dropping the `Server` stops accepting and closes every connection without waiting; use
/// [`Server::shutdown`] to let requests in flight finish first.
#[must_use = "dropping a Server stops it and closes its connections"]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.inner.local_addr)
            .field("stats", &self.inner.stats())
            .finish_non_exhaustive()
    }
}

/// What [`Server::shutdown`] did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Request handlers still running at the deadline (then cancelled: their requests were
    /// answered `-32800`).
    pub unfinished: usize,
    /// Connections open when the server stopped accepting (all closed since).
    pub closed_connections: usize,
    /// How long the shutdown took.
    pub elapsed: Duration,
    /// The counters at the end.
    pub stats: ServerStats,
}

impl Server {
    /// Configure a server whose connections start from [`Connection::builder`]; see
    /// [`ServerBuilder::new`] to start from your own builder.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// A cloneable handle for broadcasts, counters and the list of peers (also reachable from
    /// handlers through [`Peer::server`]). It does not keep the server running.
    pub fn handle(&self) -> ServerHandle {
        ServerHandle { inner: Arc::downgrade(&self.inner) }
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> Option<&PeerAddr> {
        self.inner.local_addr.as_ref()
    }

    /// Send a notification to every live connection; see [`ServerHandle::broadcast`].
    pub fn broadcast(&self, method: &str, params: impl serde::Serialize) -> Result<Broadcast, crate::Error> {
        self.inner.broadcast(&self.inner, method, &params)
    }

    /// The live connections.
    pub fn peers(&self) -> Vec<Peer> {
        self.inner.peers()
    }

    /// The counters.
    pub fn stats(&self) -> ServerStats {
        self.inner.stats()
    }

    /// Stop gracefully: stop accepting (new peers are refused by the OS), answer requests that
    /// arrive from now on with `-32000` "the server is shutting down", wait up to `grace` for
    /// the request handlers already running, then close every connection (queued messages are
    /// flushed; handlers still running are cancelled and their requests answered `-32800`).
    /// Every request read is answered; calls the server made to its peers fail with
    /// [`Error::ConnectionLost`](crate::Error::ConnectionLost).
    pub async fn shutdown(self, grace: Duration) -> ShutdownReport {
        let start = Instant::now();
        let inner = &self.inner;
        inner.stop_accepting.cancel();
        inner.gate.drain();
        inner.accepting.wait().await;
        let closed_connections = inner.active.load(Ordering::Acquire);
        tracing::debug!(target: crate::LOG_TARGET, connections = closed_connections, "server draining");
        let _ = tokio::time::timeout(grace, inner.gate.idle()).await;
        let unfinished = inner.gate.running();
        inner.close_every_peer();
        inner.tasks.close();
        // Each connection's close is bounded by its flush timeout; refusals and handshakes by theirs.
        let _ = tokio::time::timeout(inner.close_bound, inner.tasks.wait()).await;
        ShutdownReport { unfinished, closed_connections, elapsed: start.elapsed(), stats: inner.stats() }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.inner.stop_accepting.cancel();
        self.inner.close_every_peer();
    }
}

/// Accept until told to stop; every peer is handed to its own task at once.
async fn accept_loop<L: Listener>(mut listener: L, inner: Arc<Inner>, template: Builder, factory: Option<PeerFactory>) {
    const FIRST_BACKOFF: Duration = Duration::from_millis(5);
    let mut backoff = FIRST_BACKOFF;
    loop {
        let accepted = tokio::select! {
            biased;
            _ = inner.stop_accepting.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let accepted = match accepted {
            Ok(a) => {
                backoff = FIRST_BACKOFF;
                a
            }
            Err(e) => {
                // Out of file descriptors, a peer that reset before accept, …: the listener
                // stays usable; back off so a persistent error does not spin.
                inner.stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: crate::LOG_TARGET, error = %e, ?backoff, "accepting a peer failed");
                tokio::select! {
                    _ = inner.stop_accepting.cancelled() => break,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let addr = accepted.peer_addr();
        if inner.active.fetch_add(1, Ordering::AcqRel) >= inner.max_connections {
            inner.active.fetch_sub(1, Ordering::AcqRel);
            inner.stats.refused.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(target: crate::LOG_TARGET, peer = %addr, max = inner.max_connections, "peer refused: connection limit");
            let error = ErrorObject::new(
                codes::SERVER_BUSY,
                format!("the server is at its limit of {} connections", inner.max_connections),
            );
            inner.tasks.spawn(accepted.refuse(template.clone(), error));
            continue;
        }
        inner.stats.accepted.fetch_add(1, Ordering::Relaxed);
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        // The peer joins the list as its connection starts, before its first message is read:
        // a broadcast made by one of its own handlers (or by a task its factory spawns) reaches
        // it too, and in order with that handler's answer.
        let registry = Arc::downgrade(&inner);
        let listed_addr = addr.clone();
        let mut builder = template.clone().serve_with(move |handle| {
            if let Some(inner) = registry.upgrade() {
                inner.insert(id, listed_addr.clone(), handle);
            }
            Router::new()
        });
        if let Some(factory) = &factory {
            let factory = factory.clone();
            let server = ServerHandle { inner: Arc::downgrade(&inner) };
            let addr = addr.clone();
            builder = builder
                .serve_with(move |handle| factory(&Peer { id, addr: addr.clone(), handle, server: server.clone() }));
        }
        inner.tasks.spawn(serve_peer(Box::new((accepted, builder)), id, addr, inner.clone()));
    }
    tracing::debug!(target: crate::LOG_TARGET, "server stopped accepting");
}

/// Counts a connection as open until dropped, or until [`Running`] takes the count over.
struct Active(Option<Arc<Inner>>);

impl Drop for Active {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            inner.active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What a running connection of the server keeps until it has finished (its writer done, the
/// socket's write side shut): then it leaves the peer list, counts as closed and stops counting
/// against the limit. Held by the connection itself ([`Connection::detach`]), not by a task:
/// an idle peer costs the server no task of its own. It holds the server weakly (the peer list
/// holds the connection).
struct Running {
    id: u64,
    /// (Its address is the peer list's: 32 bytes fewer for every running connection.)
    inner: std::sync::Weak<Inner>,
    /// Keeps [`Inner::tasks`] waiting (a shutdown waits for every connection's end).
    _tracked: tokio_util::task::task_tracker::TaskTrackerToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(inner) = self.inner.upgrade() else { return };
        let addr = inner.remove(self.id);
        inner.stats.closed.fetch_add(1, Ordering::Relaxed);
        inner.active.fetch_sub(1, Ordering::AcqRel);
        let peer = addr.as_ref().map(tracing::field::display);
        tracing::debug!(target: crate::LOG_TARGET, peer, id = self.id, "connection closed");
    }
}

/// One peer's start: the handshake, then the connection runs on by itself (see [`Running`]).
///
/// The task lives only for the handshake: once the connection runs, it is detached from it and
/// ends with it, closed by its own end or by the server's ([`Inner::close_every_peer`]).
async fn serve_peer<A: Accepted>(start: Box<(A, Builder)>, id: u64, addr: PeerAddr, inner: Arc<Inner>) {
    let mut active = Active(Some(inner.clone()));
    let starting = Box::pin(async move {
        let (accepted, builder) = *start;
        accepted.start(builder).await
    });
    let started = tokio::select! {
        biased;
        _ = inner.close_all.cancelled() => {
            inner.remove(id);
            return;
        }
        started = starting => started,
    };
    let conn = match started {
        Ok(conn) => conn,
        Err(e) => {
            inner.remove(id);
            inner.stats.failed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(target: crate::LOG_TARGET, peer = %addr, error = %e, "connection did not start");
            return;
        }
    };
    tracing::debug!(target: crate::LOG_TARGET, peer = %addr, id, "connection open");
    let handle = conn.handle();
    // From here on `Running` counts the connection as active.
    active.0 = None;
    let running = Running { id, inner: Arc::downgrade(&inner), _tracked: inner.tasks.token() };
    conn.detach(Box::new(running));
    // The server began closing its peers before this one was listed or detached: close it
    // here (listed after that, it was missed; listed before, this changes nothing).
    if inner.close_all.is_cancelled() {
        handle.close_with(CloseReason::new(CloseKind::LocallyClosed, "the server is shutting down"));
    }
}
