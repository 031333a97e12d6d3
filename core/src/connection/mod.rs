//! The connection: ids, pending calls, dispatch, cancellation and lifecycle over one stream.

mod close;
mod config;
mod dispatch;
mod error;
mod handle;
mod outbound;
mod pending;
mod reader;
pub(crate) mod shared;
mod trace;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use close::{CloseKind, CloseReason};
pub use config::{
    CancelProtocol, DEFAULT_MAX_BUFFERED_INBOUND, DEFAULT_MAX_CONCURRENT_REQUESTS, DEFAULT_MAX_TRACE_LEN,
    DEFAULT_OUTBOUND_BUFFER, DEFAULT_READ_AHEAD, Direction, Limits, TraceRedactor,
};
pub use error::Error;
pub use handle::{CallOptions, Handle};

pub(crate) use outbound::FLUSH_TIMEOUT;
pub(crate) use reader::EofReason;

use self::config::Config;
use self::dispatch::Dispatcher;
use self::outbound::Outbound;
use self::reader::Reader;
use self::shared::Shared;
use crate::framing::Framing;
use crate::handler::{MethodClash, Router};

/// Configures and starts a [`Connection`].
///
/// ```
/// use jsonrpc_duplex_core::{CancelProtocol, Connection, Framing, Router};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (a, _b) = tokio::io::duplex(64 * 1024);
/// let conn = Connection::builder()
///     .framing(Framing::NewlineDelimited)
///     .cancel_protocol(CancelProtocol::acp())
///     .max_message_size(16 * 1024 * 1024)
///     .serve(Router::new())
///     .connect_io(a);
/// # drop(conn);
/// # }
/// ```
#[derive(Default)]
pub struct Builder {
    config: Config,
    router: Router,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("framing", &self.config.framing)
            .field("limits", &self.config.limits)
            .field("cancel", &self.config.cancel)
            .field("router", &self.router)
            .finish()
    }
}

impl Builder {
    /// The framing on byte-stream transports ([`Framing::ContentLength`] by default).
    pub fn framing(mut self, framing: Framing) -> Self {
        self.config.framing = framing;
        self
    }

    /// All limits at once (see [`Limits`] for each default and what happens at it).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config.limits = limits;
        self
    }

    /// The largest message accepted or sent, in bytes (64 MiB by default).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.config.limits.frame.max_message_size = bytes;
        self
    }

    /// How many inbound request handlers may run at once (1024 by default).
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.config.limits.max_concurrent_requests = n.max(1);
        self
    }

    /// How request cancellation is spelled on the wire ([`CancelProtocol::lsp`] by default).
    pub fn cancel_protocol(mut self, cancel: CancelProtocol) -> Self {
        self.config.cancel = cancel;
        self
    }

    /// A timeout for every outbound call that does not set its own (none by default).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.config.default_timeout = Some(timeout);
        self
    }

    /// Rewrite messages before they are logged at TRACE on [`WIRE_TARGET`](crate::WIRE_TARGET)
    /// (by default they are logged whole up to [`Limits::max_trace_len`] bytes).
    pub fn trace_redactor(mut self, redact: impl Fn(Direction, &str) -> String + Send + Sync + 'static) -> Self {
        self.config.redactor = Some(Arc::new(redact));
        self
    }

    /// Serve a router (or a generated dispatcher). May be called several times to merge services.
    ///
    /// # Panics
    /// If two services register the same method name; [`Builder::try_serve`] returns the clash instead.
    pub fn serve(self, service: impl Into<Router>) -> Self {
        match self.try_serve(service) {
            Ok(b) => b,
            Err(clash) => panic!("{clash} (while adding a service to a connection)"),
        }
    }

    /// Serve a router, reporting a method-name clash with what is already served.
    pub fn try_serve(mut self, service: impl Into<Router>) -> Result<Self, MethodClash> {
        self.router = std::mem::take(&mut self.router).try_merge(service)?;
        Ok(self)
    }

    /// Start over a reader and a writer (e.g. the two halves of a pipe or socket).
    ///
    /// Must be called inside a tokio runtime: the connection's tasks are spawned on it.
    pub fn connect<R, W>(self, reader: R, writer: W) -> Connection
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        self.start(reader, writer, None).0
    }

    /// Start over one bidirectional stream (split internally).
    pub fn connect_io<T>(self, io: T) -> Connection
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (r, w) = tokio::io::split(io);
        self.connect(r, w)
    }

    pub(crate) fn start<R, W>(self, reader: R, writer: W, eof_reason: Option<EofReason>) -> (Connection, Arc<Shared>)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let Builder { config, router } = self;
        let (outbound, out_rx) = Outbound::new(config.limits.outbound_buffer);
        let read_codec = config.framing.codec(config.limits.frame);
        let write_codec = config.framing.codec(config.limits.frame);
        let shared = Arc::new(Shared::new(config, outbound));
        let handle = Handle { shared: shared.clone() };
        let tracker = TaskTracker::new();
        let done = CancellationToken::new();
        let (queue_tx, queue_rx) = mpsc::unbounded_channel();

        let frames = FramedRead::with_capacity(reader, read_codec, 16 * 1024);
        let reader = Reader { shared: shared.clone(), queue: queue_tx };
        tracker.spawn(reader.run(frames, eof_reason));
        let dispatcher =
            Dispatcher { shared: shared.clone(), router, handle: handle.clone(), tracker: tracker.clone() };
        tracker.spawn(dispatcher.run(queue_rx));
        tokio::spawn(outbound::run_writer(writer, out_rx, write_codec, shared.clone(), tracker, done.clone()));
        (Connection { handle, done }, shared)
    }
}

/// One JSON-RPC connection: both sides may call, notify and answer.
///
/// The `Connection` owns the connection's life: dropping it (or [`Connection::close`]) ends it,
/// after flushing what was already queued. Use [`Connection::handle`] for cloneable access from
/// other tasks and handlers.
///
/// ```
/// use jsonrpc_duplex_core::{Connection, ErrorObject, Router};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (a, b) = tokio::io::duplex(64 * 1024);
/// let server = Connection::builder()
///     .serve(Router::new().method("greet", |(name,): (String,), _ctx| async move {
///         Ok::<_, ErrorObject>(format!("hello, {name}"))
///     }))
///     .connect_io(a);
/// let client = Connection::builder().connect_io(b);
/// let text: String = client.handle().request("greet", ["world"]).await?;
/// assert_eq!(text, "hello, world");
/// client.close().await;
/// let reason = server.closed().await;
/// assert_eq!(reason.kind, jsonrpc_duplex_core::CloseKind::RemoteClosed);
/// # Ok(()) }
/// ```
pub struct Connection {
    handle: Handle,
    done: CancellationToken,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("handle", &self.handle).finish()
    }
}

impl Connection {
    /// Configure a connection.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A cloneable handle for calls and notifications.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Resolves with the reason once the connection has ended.
    pub fn closed(&self) -> impl Future<Output = CloseReason> + Send + 'static {
        self.handle.closed()
    }

    /// Close from this side and wait until queued messages are flushed and the write side is shut.
    ///
    /// If the connection has ended already (say the peer closed its side), this waits for the
    /// same flush: after the peer's EOF that includes the answers to requests already read.
    pub async fn close(self) -> CloseReason {
        self.handle.close();
        self.done.cancelled().await;
        self.handle.shared.closed().await
    }
}

impl std::ops::Deref for Connection {
    type Target = Handle;
    fn deref(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.handle.shared.close(CloseReason::new(CloseKind::LocallyClosed, "the Connection was dropped"));
    }
}
