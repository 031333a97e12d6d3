//! WebSocket (feature `websocket`, on [`tokio-tungstenite`](tokio_tungstenite)): one JSON-RPC
//! message (or batch) per text frame, client and server.
//!
//! - Inbound text frames are messages; binary frames are accepted too (as UTF-8 JSON); pings are
//!   answered with pongs by tungstenite as frames are read or written; pongs are ignored.
//! - The peer's close frame ends the connection with [`CloseKind::RemoteClosed`] and a message
//!   naming its code and reason; a TCP close without a closing handshake says so.
//! - When the connection ends, a close frame says why: `1000` after a local close, `1002` for a
//!   peer's protocol violation, `1009` for an over-long message, `1011` for an internal error,
//!   with the reason's text (cut to the 123 bytes a close frame allows).
//! - Messages larger than [`Builder::max_message_size`] are refused in both directions.
//!
//! `wss://` works when `tokio-tungstenite`'s TLS features are enabled in your own `Cargo.toml`
//! (say `tokio-tungstenite = { version = "0.30", features = ["rustls-tls-webpki-roots"] }`):
//! [`Builder::connect_websocket`] then connects over TLS; a TLS server hands its accepted
//! stream to [`Builder::accept_websocket`].

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::{SplitSink, SplitStream};
use futures::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::listener::{Accepted, LINGER, Listener, PeerAddr, REFUSE_TIMEOUT};
use crate::connection::shared::Shared;
use crate::framing::{Frame, FrameError};
use crate::message::{ErrorObject, Id, encode_response};
use crate::{Builder, CloseKind, CloseReason, Connection};

pub use tokio_tungstenite;
pub use tokio_tungstenite::tungstenite::Error as WebSocketError;
pub use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Default bound of a server-side WebSocket handshake ([`WebSocketListener::handshake_timeout`]).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest reason text a close frame carries (125 bytes of payload less the 2-byte code).
const MAX_CLOSE_REASON: usize = 123;

impl Builder {
    /// Connect to a WebSocket server (`ws://host:port/path`, or a request with headers) and start
    /// a connection over it.
    ///
    /// ```
    /// use jsonrpc_duplex_core::transport::websocket::WebSocketListener;
    /// use jsonrpc_duplex_core::{Connection, ErrorObject, Router, server::Server};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
    /// let server = Server::builder().serve(router).listen(WebSocketListener::bind("127.0.0.1:0").await?);
    /// let url = format!("ws://{}/rpc", server.local_addr().expect("bound"));
    /// let client = Connection::builder().connect_websocket(url).await?;
    /// assert_eq!(client.handle().request::<i64>("add", (40, 2)).await?, 42);
    /// # Ok(()) }
    /// ```
    pub async fn connect_websocket<R>(self, request: R) -> Result<Connection, WebSocketError>
    where
        R: IntoClientRequest + Unpin,
    {
        let config = websocket_config(&self);
        let (ws, _response) = tokio_tungstenite::connect_async_with_config(request, Some(config), true).await?;
        Ok(self.websocket(ws))
    }

    /// Run the server side of the WebSocket handshake on an accepted stream (TCP, TLS, …) and
    /// start a connection over it. Unbounded in time: wrap it in a timeout, or let a
    /// [`WebSocketListener`] do it.
    pub async fn accept_websocket<S>(self, stream: S) -> Result<Connection, WebSocketError>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let config = websocket_config(&self);
        let read = Arc::new(AtomicU64::new(0));
        let stream = Counted { inner: stream, read: read.clone() };
        let ws = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await?;
        Ok(self.websocket_with(ws, Some(read)))
    }

    /// Start over an established WebSocket (either role; the handshake is done). Its
    /// configured size limits stay as they are: [`Builder::connect_websocket`] and
    /// [`Builder::accept_websocket`] set them from [`Builder::max_message_size`].
    ///
    /// Must be called inside a tokio runtime.
    pub fn websocket<S>(self, ws: WebSocketStream<S>) -> Connection
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        self.websocket_with(ws, None)
    }

    /// [`Builder::websocket`], with the count of bytes read from the socket when it is known
    /// (an accepted stream): then the message read timeout can tell a message in progress.
    fn websocket_with<S>(self, ws: WebSocketStream<S>, read: Option<Arc<AtomicU64>>) -> Connection
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let (sink, stream) = ws.split();
        let state = Arc::new(WsState { read, ..WsState::default() });
        let frames = WsFrames { inner: Some(stream), state: state.clone(), ended: false };
        let eof_state = state.clone();
        let eof_reason = async move { eof_state.peer_close.lock().unwrap_or_else(|p| p.into_inner()).take() }.boxed();
        let in_message = state.read.is_some().then(|| {
            let state = state.clone();
            Box::new(move || state.in_message()) as crate::connection::InMessage
        });
        self.start_messages(
            frames,
            |shared| WsSink { inner: sink, shared: shared.clone(), state, closing: false },
            Some(eof_reason),
            in_message,
        )
        .0
    }
}

/// The WebSocket configuration a builder implies: its message size limit for messages and
/// frames, and 16 KiB read buffers (tungstenite allocates them eagerly, per connection).
fn websocket_config(builder: &Builder) -> WebSocketConfig {
    let max = builder.frame_limits().max_message_size;
    WebSocketConfig::default()
        .read_buffer_size(16 * 1024)
        .write_buffer_size(64 * 1024)
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
}

/// What the read side learned that the write side and the close reason need.
#[derive(Default)]
struct WsState {
    /// Why the peer went away, when it said so (a close frame) or did not (a bare TCP close).
    peer_close: Mutex<Option<String>>,
    /// The peer sent a message over the size limit (close with 1009).
    too_big: AtomicBool,
    /// The peer's close frame arrived: tungstenite has queued the reply, and takes nothing more.
    peer_closed: AtomicBool,
    /// Bytes read from the socket so far, when known.
    read: Option<Arc<AtomicU64>>,
    /// `read` when the last message (or control frame) was taken.
    read_at_message: AtomicU64,
}

impl WsState {
    /// Bytes have arrived since the last message: part of one is in tungstenite's buffer.
    fn in_message(&self) -> bool {
        self.read
            .as_ref()
            .is_some_and(|read| read.load(Ordering::Relaxed) != self.read_at_message.load(Ordering::Relaxed))
    }

    /// A message or a control frame was taken: what was read so far is accounted for.
    fn took_message(&self) {
        if let Some(read) = &self.read {
            self.read_at_message.store(read.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    fn record(&self, why: String) {
        let mut slot = self.peer_close.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(why);
    }
}

/// The read half as a stream of frames. When the connection drops it, it goes on reading (and
/// discarding) until the closing handshake completes (at most [`LINGER`]), so that the socket
/// is not closed with unread bytes, which would reset it.
struct WsFrames<S: AsyncRead + AsyncWrite + Send + Unpin + 'static> {
    inner: Option<SplitStream<WebSocketStream<S>>>,
    state: Arc<WsState>,
    ended: bool,
}

fn message_frame(bytes: Bytes) -> Frame {
    Frame::Message(bytes.try_into_mut().unwrap_or_else(|shared| BytesMut::from(&shared[..])))
}

impl<S: AsyncRead + AsyncWrite + Send + Unpin + 'static> Drop for WsFrames<S> {
    fn drop(&mut self) {
        let (Some(mut inner), Ok(runtime)) = (self.inner.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(LINGER, async { while let Some(Ok(_)) = inner.next().await {} }).await;
        });
    }
}

impl<S: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for WsFrames<S> {
    type Item = Result<Frame, FrameError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            let Some(inner) = self.inner.as_mut() else {
                return Poll::Ready(None);
            };
            let item = ready!(inner.poll_next_unpin(cx));
            self.state.took_message();
            let out = match item {
                Some(Ok(Message::Text(text))) => Some(Ok(message_frame(Bytes::from(text)))),
                Some(Ok(Message::Binary(bytes))) => Some(Ok(message_frame(bytes))),
                // tungstenite queues the pong itself; it leaves with the next read or write.
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Close(frame))) => {
                    let why = match frame {
                        Some(CloseFrame { code, reason }) if reason.is_empty() => {
                            format!("the peer closed the WebSocket (code {code}, {code:?})")
                        }
                        Some(CloseFrame { code, reason }) => {
                            format!("the peer closed the WebSocket (code {code}, {code:?}): {reason}")
                        }
                        None => "the peer closed the WebSocket (no status code)".to_owned(),
                    };
                    self.state.record(why);
                    self.state.peer_closed.store(true, Ordering::Release);
                    None
                }
                None | Some(Err(WebSocketError::ConnectionClosed | WebSocketError::AlreadyClosed)) => None,
                Some(Err(WebSocketError::Protocol(ProtocolError::ResetWithoutClosingHandshake))) => {
                    self.state.record("the peer closed the TCP stream without a WebSocket closing handshake".into());
                    None
                }
                Some(Err(WebSocketError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                    self.state.too_big.store(true, Ordering::Release);
                    Some(Err(FrameError::TooLarge { size: size as u64, limit: max_size }))
                }
                Some(Err(WebSocketError::Io(e))) => Some(Err(FrameError::Io(e))),
                Some(Err(e)) => Some(Err(FrameError::Protocol(format!("WebSocket protocol error: {e}")))),
            };
            if !matches!(out, Some(Ok(_))) {
                self.ended = true;
            }
            return Poll::Ready(out);
        }
    }
}

/// A socket that counts the bytes read from it (for the message read timeout).
struct Counted<S> {
    inner: S,
    read: Arc<AtomicU64>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        self.read.fetch_add((buf.filled().len() - before) as u64, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The write half as a sink of message bodies; closing sends a close frame that says why.
struct WsSink<S> {
    inner: SplitSink<WebSocketStream<S>, Message>,
    shared: Arc<Shared>,
    state: Arc<WsState>,
    closing: bool,
}

fn to_io(e: WebSocketError) -> io::Error {
    match e {
        WebSocketError::Io(e) => e,
        WebSocketError::ConnectionClosed | WebSocketError::AlreadyClosed => {
            io::Error::new(io::ErrorKind::BrokenPipe, "the WebSocket is closed")
        }
        other => io::Error::other(other),
    }
}

/// The close frame that tells the peer why this side ends the connection.
fn close_frame(reason: Option<CloseReason>, too_big: bool) -> CloseFrame {
    let Some(reason) = reason else {
        return CloseFrame { code: CloseCode::Normal, reason: Utf8Bytes::from_static("") };
    };
    let code = match reason.kind {
        CloseKind::LocallyClosed | CloseKind::RemoteClosed => CloseCode::Normal,
        CloseKind::RemoteProtocolViolation if too_big => CloseCode::Size,
        CloseKind::RemoteProtocolViolation => CloseCode::Protocol,
        CloseKind::ParseError => CloseCode::Invalid,
        CloseKind::StreamError | CloseKind::FatalError | CloseKind::LocalContractViolation => CloseCode::Error,
    };
    let mut text = reason.message;
    if text.len() > MAX_CLOSE_REASON {
        let mut cut = MAX_CLOSE_REASON;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    CloseFrame { code, reason: Utf8Bytes::from(text) }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Sink<Vec<u8>> for WsSink<S> {
    type Error = io::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.state.peer_closed.load(Ordering::Acquire) {
            // A WebSocket carries nothing after the peer's close frame.
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "the peer closed the WebSocket")));
        }
        self.inner.poll_ready_unpin(cx).map_err(to_io)
    }

    fn start_send(mut self: Pin<&mut Self>, body: Vec<u8>) -> io::Result<()> {
        // Bodies are serde_json's output: UTF-8, so text frames. Just in case, anything else
        // goes as a binary frame rather than being refused.
        let message = match String::from_utf8(body) {
            Ok(text) => Message::Text(Utf8Bytes::from(text)),
            Err(e) => Message::Binary(Bytes::from(e.into_bytes())),
        };
        self.inner.start_send_unpin(message).map_err(to_io)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_flush_unpin(cx).map_err(to_io)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // After the peer's close frame, closing only flushes the reply tungstenite has queued.
        if !self.closing && !self.state.peer_closed.load(Ordering::Acquire) {
            ready!(self.inner.poll_ready_unpin(cx)).map_err(to_io)?;
            let frame = close_frame(self.shared.close_reason(), self.state.too_big.load(Ordering::Acquire));
            self.closing = true;
            self.inner.start_send_unpin(Message::Close(Some(frame))).map_err(to_io)?;
        }
        self.inner.poll_close_unpin(cx).map_err(to_io)
    }
}

/// Accepts WebSocket peers on a TCP listener: the handshake runs in [`Accepted::start`] (so a
/// [`Server`](crate::server::Server) runs it in the peer's own task, bounded by
/// [`WebSocketListener::handshake_timeout`]). Any path is accepted.
#[derive(Debug)]
#[must_use = "a builder does nothing until it is used"]
pub struct WebSocketListener {
    tcp: TcpListener,
    config: Option<WebSocketConfig>,
    handshake_timeout: Duration,
}

impl WebSocketListener {
    /// Bind a TCP listener for WebSocket peers (with a backlog of
    /// [`LISTEN_BACKLOG`](crate::transport::LISTEN_BACKLOG)).
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<Self> {
        Ok(Self::from_tcp(crate::transport::bind_tcp(addr).await?))
    }

    /// Accept WebSocket peers on a bound TCP listener.
    pub fn from_tcp(tcp: TcpListener) -> Self {
        WebSocketListener { tcp, config: None, handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT }
    }

    /// How long a peer may take to complete its handshake ([`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Use this tungstenite configuration (buffer sizes, limits) instead of the one derived
    /// from the connection builder (its message size limit, 16 KiB read buffers).
    pub fn config(mut self, config: WebSocketConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

/// A TCP peer of a [`WebSocketListener`] whose handshake has not run yet.
#[derive(Debug)]
pub struct WebSocketAccepted {
    stream: TcpStream,
    addr: SocketAddr,
    config: Option<WebSocketConfig>,
    handshake_timeout: Duration,
}

impl Listener for WebSocketListener {
    type Accepted = WebSocketAccepted;

    async fn accept(&mut self) -> io::Result<WebSocketAccepted> {
        let (stream, addr) = self.tcp.accept().await?;
        let _ = stream.set_nodelay(true);
        Ok(WebSocketAccepted { stream, addr, config: self.config, handshake_timeout: self.handshake_timeout })
    }

    fn listen_addr(&self) -> io::Result<PeerAddr> {
        self.tcp.local_addr().map(PeerAddr::Tcp)
    }
}

impl Accepted for WebSocketAccepted {
    fn peer_addr(&self) -> PeerAddr {
        PeerAddr::Tcp(self.addr)
    }

    async fn start(self, builder: Builder) -> io::Result<Connection> {
        let config = self.config.unwrap_or_else(|| websocket_config(&builder));
        let read = Arc::new(AtomicU64::new(0));
        let stream = Counted { inner: self.stream, read: read.clone() };
        let handshake = tokio_tungstenite::accept_async_with_config(stream, Some(config));
        match tokio::time::timeout(self.handshake_timeout, handshake).await {
            Ok(Ok(ws)) => Ok(builder.websocket_with(ws, Some(read))),
            Ok(Err(e)) => Err(to_io(e)),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the WebSocket handshake took longer than {:?}", self.handshake_timeout),
            )),
        }
    }

    /// Answers the handshake with HTTP 503 and the JSON-RPC error response (id `null`) as body.
    #[allow(clippy::result_large_err)] // the callback's type is tungstenite's
    async fn refuse(self, _builder: Builder, error: ErrorObject) {
        let mut body = Vec::with_capacity(128);
        encode_response::<()>(&mut body, &Id::Null, Err(&error), crate::message::bind::UNBOUND);
        let body = String::from_utf8(body).ok();
        let callback = move |_request: &Request, _response: Response| -> Result<Response, ErrorResponse> {
            let mut refusal = http::Response::new(body);
            *refusal.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            refusal
                .headers_mut()
                .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            Err(refusal)
        };
        let _ = tokio::time::timeout(REFUSE_TIMEOUT, tokio_tungstenite::accept_hdr_async(self.stream, callback)).await;
    }
}
