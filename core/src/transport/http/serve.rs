//! The hyper server loop: accept TCP connections and serve each with a `tower` service, over
//! HTTP/1.1 (keep-alive) or HTTP/2 (prior knowledge, detected from the first bytes), within
//! bounds:
//!
//! - **header read timeout** ([`ServeConfig::header_read_timeout`], 30 s): a request's headers
//!   must arrive within it; it also runs while an HTTP/1.1 connection waits for its next request,
//!   and for a new connection's first bytes, so a connection that sends nothing is closed after
//!   it (an HTTP/2 connection, once established, is bounded by the connection limit only);
//! - **connections at once** ([`ServeConfig::max_connections`], 10,000): a connection over it is
//!   answered `503 Service Unavailable` (`Connection: close`) and closed, counted in
//!   [`HttpServerStats::refused`]; at most 64 such refusals run at once, beyond that a connection
//!   is closed unanswered;
//! - **graceful shutdown** ([`HttpServer::shutdown`]): the listener closes, idle connections close
//!   at once, requests in progress may finish within the grace period, the rest are dropped
//!   (their handlers cancelled).
//!
//! Bodies are the service's business ([`super::body`] reads them within bounds).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use http_body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{BoxError, Refusal};

/// Default for [`ServeConfig::header_read_timeout`] (hyper's).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for [`ServeConfig::max_connections`] (the byte-stream server's too).
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// At most this many connections over the limit are being answered `503` at once.
const MAX_REFUSING: usize = 64;

/// How long answering a connection over the limit may take.
const REFUSE_TIMEOUT: Duration = Duration::from_secs(1);

/// The settings of the server loop.
#[derive(Clone, Debug)]
#[must_use = "a config does nothing until it is used"]
pub struct ServeConfig {
    header_read_timeout: Option<Duration>,
    keep_alive: bool,
    http2: bool,
    max_connections: usize,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            header_read_timeout: Some(DEFAULT_HEADER_READ_TIMEOUT),
            keep_alive: true,
            http2: true,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl ServeConfig {
    /// The defaults: 30 s header read timeout, keep-alive, HTTP/2 too, 10,000 connections.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a request's headers may take to arrive, and an HTTP/1.1 connection may wait
    /// idle for its next request (`None`: unbounded, not advised).
    pub fn header_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.header_read_timeout = timeout.into();
        self
    }

    /// Keep HTTP/1.1 connections open between requests (on by default).
    pub fn keep_alive(mut self, on: bool) -> Self {
        self.keep_alive = on;
        self
    }

    /// Also speak HTTP/2 with prior knowledge (on by default; HTTP/1.1 is always spoken).
    pub fn http2(mut self, on: bool) -> Self {
        self.http2 = on;
        self
    }

    /// How many connections are served at once (10,000 by default); more are answered `503`.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }
}

/// Counters of a running [`HttpServer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpServerStats {
    /// Connections accepted and served so far.
    pub accepted: u64,
    /// Connections turned away over [`ServeConfig::max_connections`].
    pub refused: u64,
    /// Connections open now.
    pub live: usize,
}

/// What [`HttpServer::shutdown`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpShutdownReport {
    /// Connections still busy when the grace period ended, dropped then.
    pub unfinished: usize,
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    refused: AtomicU64,
    live: AtomicUsize,
}

/// A running HTTP server (see [`serve`]); dropping it leaves it running in the background.
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    stop: CancellationToken,
    grace: Arc<Mutex<Duration>>,
    counters: Arc<Counters>,
    task: tokio::task::JoinHandle<HttpShutdownReport>,
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters").field("live", &self.live.load(Ordering::Relaxed)).finish()
    }
}

impl HttpServer {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Its counters.
    pub fn stats(&self) -> HttpServerStats {
        HttpServerStats {
            accepted: self.counters.accepted.load(Ordering::Relaxed),
            refused: self.counters.refused.load(Ordering::Relaxed),
            live: self.counters.live.load(Ordering::Relaxed),
        }
    }

    /// Stop accepting, let requests in progress finish within `grace`, drop the rest.
    pub async fn shutdown(self, grace: Duration) -> HttpShutdownReport {
        *self.grace.lock().unwrap_or_else(|p| p.into_inner()) = grace;
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

/// Serve one connection. hyper's header read timeout starts once the protocol is known, which
/// takes the connection's first bytes: a connection that sends none is closed after the same
/// timeout here.
async fn serve_one<S, B>(
    builder: &auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    stream: tokio::net::TcpStream,
    service: TowerToHyperService<S>,
    first_bytes: Option<Duration>,
    peer: SocketAddr,
) where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    if let Some(timeout) = first_bytes
        // (`readable` may report a new socket ready before any byte: `peek` waits for one.)
        && tokio::time::timeout(timeout, stream.peek(&mut [0u8; 1])).await.is_err()
    {
        tracing::debug!(target: crate::LOG_TARGET, "HTTP connection from {peer} sent nothing within {timeout:?}");
        return;
    }
    // What hyper writes in one poll of this task leaves in one write at its end (a pipelined
    // burst's answers together), within a bound: see `coalesce`.
    let (io, held) = super::coalesce::split(stream);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    if let Err(e) = super::coalesce::flushing(watcher.watch(connection), held).await {
        tracing::debug!(target: crate::LOG_TARGET, "HTTP connection from {peer} ended: {e}");
    }
}

/// Serve every connection `listener` accepts with the service `make_service` builds for the
/// peer's address (it is cloned per request, as hyper does with tower services).
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use jsonrpc_duplex_core::transport::http::serve::{ServeConfig, serve};
/// use jsonrpc_duplex_core::transport::http::FullBody;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// #[derive(Clone)]
/// struct Hello;
/// impl<B> tower_service::Service<http::Request<B>> for Hello {
///     type Response = http::Response<FullBody>;
///     type Error = Infallible;
///     type Future = std::future::Ready<Result<Self::Response, Infallible>>;
///     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
///         std::task::Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: http::Request<B>) -> Self::Future {
///         std::future::ready(Ok(http::Response::new(FullBody::from("hello"))))
///     }
/// }
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let server = serve(listener, ServeConfig::new(), |_peer| Hello)?;
/// assert_eq!(server.stats().live, 0);
/// server.shutdown(Duration::from_secs(1)).await;
/// # Ok(()) }
/// ```
pub fn serve<M, S, B>(listener: TcpListener, config: ServeConfig, make_service: M) -> std::io::Result<HttpServer>
where
    M: Fn(SocketAddr) -> S + Send + 'static,
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let local_addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let grace = Arc::new(Mutex::new(Duration::ZERO));
    let counters = Arc::new(Counters::default());
    let task = tokio::spawn(accept_loop(listener, config, make_service, stop.clone(), grace.clone(), counters.clone()));
    Ok(HttpServer { local_addr, stop, grace, counters, task })
}

fn connection_builder(config: &ServeConfig) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .keep_alive(config.keep_alive);
    // (Not hyper's `pipeline_flush`: it lifts the bound on the write buffer (`can_buffer` is
    // always true), so a peer that pipelines and never reads would make us hold every answer;
    // `coalesce` batches a pipelined burst's answers within a bound instead.)
    builder.http2().timer(TokioTimer::new());
    if config.http2 { builder } else { builder.http1_only() }
}

async fn accept_loop<M, S, B>(
    listener: TcpListener,
    config: ServeConfig,
    make_service: M,
    stop: CancellationToken,
    grace: Arc<Mutex<Duration>>,
    counters: Arc<Counters>,
) -> HttpShutdownReport
where
    M: Fn(SocketAddr) -> S + Send + 'static,
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let builder = Arc::new(connection_builder(&config));
    let mut refuse_builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    refuse_builder.http1().timer(TokioTimer::new()).header_read_timeout(REFUSE_TIMEOUT).keep_alive(false);
    let slots = Arc::new(Semaphore::new(config.max_connections));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let graceful = GracefulShutdown::new();
    let force = CancellationToken::new();
    let tracker = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Per attempt (out of file descriptors, a connection reset before accept): a
                // short pause so that a persistent error does not spin.
                tracing::warn!(target: crate::LOG_TARGET, "HTTP accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            let Ok(refusal_slot) = refusing.clone().try_acquire_owned() else { continue };
            let refused = refuse_builder
                .serve_connection(
                    TokioIo::new(stream),
                    hyper::service::service_fn(|_request| {
                        let refusal = Refusal::new(
                            http::StatusCode::SERVICE_UNAVAILABLE,
                            "the server is serving as many connections as it may",
                        )
                        .closing();
                        std::future::ready(Ok::<_, std::convert::Infallible>(
                            refusal.into_response::<super::FullBody>(),
                        ))
                    }),
                )
                .into_owned();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REFUSE_TIMEOUT, refused).await;
                drop(refusal_slot);
            });
            continue;
        };
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        counters.live.fetch_add(1, Ordering::Relaxed);
        let service = TowerToHyperService::new(make_service(peer));
        let (builder, watcher, force, counters) =
            (builder.clone(), graceful.watcher(), force.clone(), counters.clone());
        let first_bytes = config.header_read_timeout;
        tracker.spawn(async move {
            tokio::select! {
                () = serve_one(&builder, watcher, stream, service, first_bytes, peer) => {}
                () = force.cancelled() => {}
            }
            counters.live.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
    drop(listener);
    tracker.close();
    let grace = *grace.lock().unwrap_or_else(|p| p.into_inner());
    let mut report = HttpShutdownReport::default();
    if tokio::time::timeout(grace, graceful.shutdown()).await.is_err() {
        report.unfinished = counters.live.load(Ordering::Relaxed);
        force.cancel();
    }
    tracker.wait().await;
    report
}
