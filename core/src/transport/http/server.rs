//! Plain JSON-RPC over HTTP, the server side: [`HttpService`], a `tower` service that answers
//! `POST`s carrying one JSON-RPC message or a batch with whatever a [`Builder`] serves (an
//! `#[rpc]` dispatcher, a [`Router`]), unchanged.
//!
//! A body that is one request or one notification is served **directly**: parsed once, handed
//! to the router's handler in the HTTP request's own task, and the answer, encoded once, is the
//! response body (no connection, no task, no channel in between; a handler still running after
//! its first poll is polled by the same task). Whatever needs a connection goes over one: a
//! batch, a message a feature of the builder takes (`$/cancelRequest`, `$/enumerator/next`, …),
//! an unknown notification, and every body when the builder has middleware layers. Such a body
//! is served as one short connection over the message-level seam
//! ([`Builder::connect_messages`]): the body is its one inbound message, its answers are the
//! HTTP response. Under the server loop ([`HttpService::bind`],
//! [`ServerBuilder::bind_http`](crate::server::ServerBuilder::bind_http)) a single request on
//! that path goes instead to a connection kept for its HTTP connection, whose requests come one
//! at a time (no connection to start and end per request). Either way the limits, the batch
//! handling and the dispatch are a connection's own:
//!
//! | the request | the answer |
//! |---|---|
//! | a method other than `POST` | `405 Method Not Allowed`, `Allow: POST` |
//! | `Host` or `Origin` not on the [`AllowList`] | `403 Forbidden` |
//! | refused by the [`Authenticate`] hook | its [`Refusal`] (say `401` with `WWW-Authenticate`) |
//! | `Content-Type` not `application/json` | `415 Unsupported Media Type` |
//! | a body over [`Builder::max_message_size`] | `413 Payload Too Large`, before it is read (`Content-Length`) or as soon as it passes the limit (chunked) |
//! | a body that does not arrive within the body read timeout | `408 Request Timeout` |
//! | a request, or a batch with requests | `200 OK`, `application/json`: the answer (a batch: the array of answers) |
//! | notifications only | `202 Accepted`, no body (once their handlers have run) |
//! | not JSON / not a request (`-32700` / `-32600` with `"id": null`) | `400 Bad Request` with that error object |
//!
//! | the bodies held across the service would pass [`HttpService::max_held_bytes`] | `503 Service Unavailable`, `Retry-After: 1`, `Connection: close` |
//!
//! **The byte budget.** Bodies read and not yet answered (waiting for a dispatch slot, or their
//! handlers running) are counted against one budget for the whole service,
//! [`HttpService::max_held_bytes`] ([`DEFAULT_MAX_HELD_BYTES`], 256 MiB). A body with a
//! `Content-Length` is counted in full before a byte of it is read; a chunked one as its bytes
//! arrive. A body that does not fit is answered `503` with `Retry-After: 1` (the rest of it
//! unread, the connection closed): the refusal is the server's state, not the request's fault,
//! so it is neither `413` (the same body is served once others are answered, and a client must
//! not give it up) nor `429` (the budget is shared, the sender may have sent nothing else). When
//! nothing is held, one body is always taken whatever its size (so a budget below the message
//! size cannot refuse a body for ever).
//!
//! A batch longer than the connection's batch length is one `-32600` (`400`); its members run
//! as over a byte stream (notifications in order, requests concurrently up to
//! [`Builder::max_concurrent_requests`]). At most [`HttpService::max_concurrent_requests`] bodies
//! are dispatched at once across the service; later ones wait their turn. A handler that runs
//! longer than the [request timeout](HttpService::request_timeout) is cancelled (`-32800`).
//!
//! **Calls back to the client.** Plain HTTP has no way to carry a request from the server to the
//! client: a handler's call to its peer (a generated client built from the request context,
//! [`Handle::request`](crate::Handle::request)) fails at once with an error that says so
//! ([`NO_CALLS_BACK`]: [`Error::ConnectionLost`](crate::Error::ConnectionLost) when served
//! directly or on a short connection, the error object `-32000` on a kept one); a notification to the client is dropped
//! (logged at DEBUG).
//!
//! **Streams.** A stream's items are pulled by the client's calls to the connection that offered
//! it, which over plain HTTP is gone once its POST is answered: a method that returns a stream
//! (`impl Stream`, [`Handle::offer_stream`](crate::Handle::offer_stream)) is answered `-32603`
//! with [`NO_STREAMS`] in its message. Progress reports are notifications to the client: they
//! are dropped, and the call is answered as usual.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::{FutureExt, Sink};
use http::request::Parts;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::Body;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::auth::{AuthHook, Authenticate, Authenticated};
use super::body::{DEFAULT_BODY_READ_TIMEOUT, read_body};
use super::budget::{ByteBudget, Charged, OverBudget};
use super::guard::AllowList;
use super::{BoxError, FullBody, Refusal};
use crate::Builder;
use crate::connection::{DEFAULT_MAX_CONCURRENT_REQUESTS, Direct, Served};
use crate::framing::Frame;
use crate::handler::Router;

/// Default for [`HttpService::request_timeout`].
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Default for [`HttpService::max_held_bytes`]: 256 MiB.
pub const DEFAULT_MAX_HELD_BYTES: usize = 256 * 1024 * 1024;

/// Why a handler's call to its client fails over plain HTTP.
pub const NO_CALLS_BACK: &str = "plain JSON-RPC over HTTP cannot carry a request from the server to the client (an HTTP \
     response answers one POST and nothing else); serve over a WebSocket, a socket or MCP's Streamable HTTP for calls \
     back";

/// Why a stream (a method returning `impl Stream`, [`Handle::offer_stream`](crate::Handle::offer_stream))
/// cannot be offered over plain HTTP: its answer is a `-32603` saying so.
pub const NO_STREAMS: &str = "plain HTTP carries no server-to-client calls: a stream's items are pulled by      `$/enumerator/next` calls that only the connection that offered it can answer, and each POST is served on its      own; use MCP Streamable HTTP, a WebSocket or a byte stream";

/// What the code building a request's handlers knows about the HTTP request
/// ([`HttpService::serve_with`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpRequest {
    /// The method, URI, headers and extensions (the body is the JSON-RPC message).
    pub parts: Parts,
    /// What the [`Authenticate`] hook said about the caller (anonymous without a hook).
    pub auth: Authenticated,
    /// The peer's address, when the server loop knows it ([`ServerBuilder::bind_http`](crate::server::ServerBuilder::bind_http)).
    pub remote_addr: Option<SocketAddr>,
}

type RequestFactory = Arc<dyn Fn(&HttpRequest) -> Router + Send + Sync>;

struct Inner {
    builder: Builder,
    factory: Option<RequestFactory>,
    allow: AllowList,
    auth: Option<AuthHook>,
    body_read_timeout: Option<Duration>,
    request_timeout: Duration,
    permits: Semaphore,
    max_message_size: usize,
    budget: Arc<ByteBudget>,
    /// The direct path (`connection::Direct`), made at the first request (it needs the
    /// runtime); `None` inside when the builder has none (middleware layers).
    direct: std::sync::OnceLock<Option<Direct>>,
}

/// The budget is spent: the answer at the limit (see the module docs).
fn over_budget_refusal(limit: usize) -> Refusal {
    Refusal::new(StatusCode::SERVICE_UNAVAILABLE, OverBudget(limit).to_string())
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
        .closing()
}

/// Plain JSON-RPC over HTTP as a `tower` service (see the [module docs](self) for every answer).
///
/// ```
/// use jsonrpc_duplex_core::{Connection, ErrorObject, Router};
/// use jsonrpc_duplex_core::transport::http::{FullBody, server::HttpService};
/// use tower_service::Service;
/// use http_body_util::BodyExt;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
/// let mut service = HttpService::new(Connection::builder().serve(router));
///
/// let request = http::Request::post("/")
///     .header("host", "localhost")
///     .header("content-type", "application/json")
///     .body(FullBody::from(r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[40,2]}"#))
///     .unwrap();
/// let response = service.call(request).await.unwrap();
/// assert_eq!(response.status(), 200);
/// let body = response.into_body().collect().await.unwrap().to_bytes();
/// assert_eq!(&body[..], br#"{"jsonrpc":"2.0","id":1,"result":42}"#);
/// # }
/// ```
#[derive(Clone)]
#[must_use = "a service does nothing until it is mounted"]
pub struct HttpService {
    inner: Arc<Inner>,
    remote_addr: Option<SocketAddr>,
    /// The connection kept for one HTTP connection's requests (under the server loop only).
    kept: Option<Arc<Kept>>,
}

impl std::fmt::Debug for HttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpService")
            .field("builder", &self.inner.builder)
            .field("allow", &self.inner.allow)
            .field("auth", &self.inner.auth.is_some())
            .field("request_timeout", &self.inner.request_timeout)
            .finish()
    }
}

impl Builder {
    /// Serve what this builder serves over plain HTTP: [`HttpService::new`].
    pub fn into_http_service(self) -> HttpService {
        HttpService::new(self)
    }
}

impl HttpService {
    /// Serve what `builder` serves (its routers, `#[rpc]` dispatchers and `serve_with`
    /// factories, its limits and profile), each `POST` served directly or over a short connection (see the [module docs](self)).
    pub fn new(builder: Builder) -> Self {
        let max_message_size = builder.frame_limits().max_message_size;
        HttpService {
            inner: Arc::new(Inner {
                builder: builder.without_streams(NO_STREAMS),
                factory: None,
                allow: AllowList::loopback(),
                auth: None,
                body_read_timeout: Some(DEFAULT_BODY_READ_TIMEOUT),
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                permits: Semaphore::new(DEFAULT_MAX_CONCURRENT_REQUESTS),
                max_message_size,
                budget: ByteBudget::new(DEFAULT_MAX_HELD_BYTES),
                direct: std::sync::OnceLock::new(),
            }),
            remote_addr: None,
            kept: None,
        }
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::get_mut(&mut self.inner).expect("HttpService is configured before it is cloned")
    }

    /// Which `Host` and `Origin` values are served ([`AllowList::loopback`] by default).
    ///
    /// # Panics
    /// If the service was cloned already (configure it first).
    pub fn allow(mut self, allow: AllowList) -> Self {
        self.inner_mut().allow = allow;
        self
    }

    /// Authenticate every request before its body is read; the result reaches the handlers
    /// through [`HttpService::serve_with`].
    ///
    /// # Panics
    /// If the service was cloned already (configure it first).
    pub fn authenticate(mut self, hook: impl Authenticate) -> Self {
        self.inner_mut().auth = Some(Arc::new(hook));
        self
    }

    /// Serve, for each request, the router `factory` builds from what is known about it (the
    /// caller the [`Authenticate`] hook found, the headers), next to what the builder serves.
    ///
    /// # Panics
    /// If the service was cloned already (configure it first).
    pub fn serve_with<F, S>(mut self, factory: F) -> Self
    where
        F: Fn(&HttpRequest) -> S + Send + Sync + 'static,
        S: Into<Router>,
    {
        self.inner_mut().factory = Some(Arc::new(move |request| factory(request).into()));
        self
    }

    /// How long a body may take to arrive in full (30 s by default; `None`: unbounded).
    ///
    /// # Panics
    /// If the service was cloned already (configure it first).
    pub fn body_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.inner_mut().body_read_timeout = timeout.into();
        self
    }

    /// How long the handlers of one body may run before they are cancelled and answered
    /// `-32800` ([`DEFAULT_REQUEST_TIMEOUT`], 60 s).
    ///
    /// # Panics
    /// If the service was cloned already (configure it first).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.inner_mut().request_timeout = timeout;
        self
    }

    /// How many bodies are dispatched at once across the service (1024 by default, the
    /// connection's limit of requests running at once); later ones wait their turn.
    ///
    /// # Panics
    /// If the service was cloned already (configure it first).
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.inner_mut().permits = Semaphore::new(n.max(1));
        self
    }

    /// How many bytes of request bodies the service holds at once, read and not yet answered
    /// ([`DEFAULT_MAX_HELD_BYTES`], 256 MiB); a body that does not fit is answered `503` with
    /// `Retry-After: 1` (see the module docs). One body is always taken when nothing is held.
    ///
    /// ```
    /// use jsonrpc_duplex_core::{Connection, Router};
    /// let service = Connection::builder().serve(Router::new()).into_http_service().max_held_bytes(64 << 20);
    /// # drop(service);
    /// ```
    ///
    /// # Panics
    /// If the service was cloned already (configure it first).
    pub fn max_held_bytes(mut self, bytes: usize) -> Self {
        self.inner_mut().budget = ByteBudget::new(bytes);
        self
    }

    /// Bind a TCP listener on `addr` and serve this service on it with the server loop
    /// ([`serve`](super::serve::serve)).
    pub async fn bind(
        self,
        addr: impl tokio::net::ToSocketAddrs,
        config: super::serve::ServeConfig,
    ) -> std::io::Result<super::serve::HttpServer> {
        let listener = crate::transport::bind_tcp(addr).await?;
        super::serve::serve(listener, config, move |peer| {
            let mut service = self.clone().with_remote_addr(peer);
            service.kept = Some(Arc::default());
            service
        })
    }

    /// The same service, telling its factories where the peer connected from.
    pub fn with_remote_addr(mut self, addr: SocketAddr) -> Self {
        self.remote_addr = Some(addr);
        self
    }
}

impl<B> tower_service::Service<Request<B>> for HttpService
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<FullBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<FullBody>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        let remote_addr = self.remote_addr;
        let kept = self.kept.clone();
        async move {
            Ok(match answer(&inner, remote_addr, kept.as_deref(), request).await {
                Ok(response) | Err(response) => response,
            })
        }
        .boxed()
    }
}

fn is_json(parts: &Parts) -> bool {
    let Some(value) = parts.headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    // What clients send, compared at once; anything else (parameters, case) the long way.
    if value.as_bytes() == b"application/json" {
        return true;
    }
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

async fn answer<B>(
    inner: &Inner,
    remote_addr: Option<SocketAddr>,
    kept: Option<&Kept>,
    request: Request<B>,
) -> Result<Response<FullBody>, Response<FullBody>>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let refuse = |r: Refusal| r.into_response::<FullBody>();
    if request.method() != Method::POST {
        let refusal = Refusal::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} is not served here: POST a JSON-RPC message", request.method()),
        )
        .with_header(header::ALLOW, HeaderValue::from_static("POST"));
        return Err(refuse(refusal));
    }
    let (mut parts, body) = request.into_parts();
    inner.allow.check(&parts).map_err(refuse)?;
    let auth = match &inner.auth {
        Some(hook) => hook.authenticate(&parts).await.map_err(refuse)?,
        None => Authenticated::anonymous(),
    };
    if !is_json(&parts) {
        let got = parts.headers.get(header::CONTENT_TYPE).map_or("none".to_owned(), |v| format!("{v:?}"));
        let refusal = Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("the body must be JSON (Content-Type: application/json); the request says {got}"),
        )
        .closing();
        return Err(refuse(refusal));
    }
    let over_budget = || refuse(over_budget_refusal(inner.budget.limit()));
    // Counted before it is read when its length is known (an over-size one is refused by
    // `read_body` without reading, and never counted), else as it arrives.
    let hint = body.size_hint();
    let (bytes, _held) = match hint.exact() {
        Some(len) if len <= inner.max_message_size as u64 => {
            let held = inner.budget.charge(len as usize).ok_or_else(over_budget)?;
            let bytes = read_body(body, inner.max_message_size, inner.body_read_timeout)
                .await
                .map_err(|e| refuse(e.refusal()))?;
            (bytes, held)
        }
        Some(_) => {
            return Err(refuse(read_body(body, inner.max_message_size, None).await.err().map_or_else(
                || Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, "the body exceeds the limit").closing(),
                |e| e.refusal(),
            )));
        }
        None => {
            let mut held = inner.budget.charge(0).ok_or_else(over_budget)?;
            let charged = Charged { body: Box::pin(body), charge: &mut held };
            let bytes = match read_body(charged, inner.max_message_size, inner.body_read_timeout).await {
                Ok(bytes) => bytes,
                Err(super::body::BodyError::Read(e)) if e.is::<OverBudget>() => return Err(over_budget()),
                Err(e) => return Err(refuse(e.refusal())),
            };
            (bytes, held)
        }
    };
    let _permit =
        inner.permits.acquire().await.map_err(|_| refuse(Refusal::new(StatusCode::SERVICE_UNAVAILABLE, "closed")))?;
    // One request or notification: parsed once, dispatched in this task, answered straight
    // into the response (see `connection::Direct`); anything else over a connection below.
    if inner.factory.is_none()
        && let Some(direct) = inner.direct.get_or_init(|| inner.builder.direct(NO_CALLS_BACK))
    {
        match direct.serve(&bytes, inner.request_timeout).await {
            Served::Answer(body) => return Ok(json_response(StatusCode::OK, body)),
            Served::Done => return Ok(accepted()),
            Served::Elsewhere => {}
        }
    }
    if inner.factory.is_none()
        && let Some(kept) = kept
        && let Some(id) = single_request_id(&bytes)
        && let Some(response) = kept.call(inner, id, bytes.clone()).await
    {
        return Ok(response);
    }
    parts.extensions.insert(auth.clone());
    let mut builder =
        inner.builder.clone().eof_grace(inner.request_timeout).idle_timeout(None).message_read_timeout(None);
    if let Some(factory) = &inner.factory {
        let request = HttpRequest { parts, auth, remote_addr };
        builder = builder.try_serve(factory(&request)).map_err(|clash| {
            refuse(Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{clash} (in HttpService::serve_with)")))
        })?;
    }
    let answers = dispatch(builder, bytes).await;
    Ok(respond(answers))
}

/// The id of a body that is one request (not a batch, not a notification), as spelled.
fn single_request_id(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<serde::de::IgnoredAny>,
    }
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    match serde_json::from_slice::<Probe<'_>>(body) {
        Ok(Probe { id: Some(id), method: Some(_) }) => Some(id.get().to_owned()),
        _ => None,
    }
}

/// The connection an HTTP connection's requests share while they come one at a time (HTTP/1.1
/// serves one request at a time per connection; concurrent HTTP/2 streams beyond the first
/// take the short-connection path). One request in, one answer out: no end of a connection to
/// wait for per request. Its reader is polled by the request's own task (no reader task of its
/// own), so a handler that finishes at once is dispatched and answered without a task hop. Batches and notifications take the short-connection path, whose end
/// says when all of their handlers are done.
#[derive(Default)]
struct Kept {
    slot: tokio::sync::Mutex<Option<KeptConnection>>,
}

struct KeptConnection {
    connection: crate::Connection,
    frames: mpsc::UnboundedSender<Result<Frame, crate::framing::FrameError>>,
    answer: Arc<std::sync::Mutex<Option<oneshot::Sender<Vec<u8>>>>>,
    /// The connection's reader, polled by the HTTP request's own task: the request is
    /// dispatched there, and a handler that finishes at once answers there (no hop to a reader
    /// task and back).
    reader: BoxFuture<'static, ()>,
    reader_done: bool,
}

impl KeptConnection {
    fn start(builder: Builder) -> Self {
        let (frames, mut rx) = mpsc::unbounded_channel();
        let answer = Arc::new(std::sync::Mutex::new(None));
        let sink = Route { answer: answer.clone(), frames: frames.clone() };
        let incoming = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let (connection, reader) =
            builder.idle_timeout(None).message_read_timeout(None).start_messages_driven(incoming, sink);
        KeptConnection { connection, frames, answer, reader, reader_done: false }
    }
}

/// A kept connection whose request was not answered (timed out, or the HTTP request was
/// dropped while it waited) is ended, so that its late answer cannot reach the next request.
struct Unanswered<'a> {
    slot: &'a mut Option<KeptConnection>,
    answered: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.answered {
            *self.slot = None;
        }
    }
}

impl Kept {
    /// Serve the request `id` on the kept connection; `None` if it is busy (the caller takes
    /// the short-connection path).
    async fn call(&self, inner: &Inner, id: String, bytes: Bytes) -> Option<Response<FullBody>> {
        let mut slot = self.slot.try_lock().ok()?;
        if slot.as_ref().is_none_or(|kept| kept.reader_done || kept.connection.is_closed()) {
            *slot = Some(KeptConnection::start(inner.builder.clone()));
        }
        let kept = slot.as_mut()?;
        let (tx, mut rx) = oneshot::channel();
        *kept.answer.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        if kept.frames.send(Ok(Frame::Message(BytesMut::from(&bytes[..])))).is_err() {
            *slot = None;
            return None;
        }
        let mut waiting = Unanswered { slot: &mut slot, answered: false };
        let answered = std::future::poll_fn(|cx| {
            let Some(kept) = waiting.slot.as_mut() else { return Poll::Ready(None) };
            // The reader takes the request here, in this task; most handlers answer in it.
            if !kept.reader_done && kept.reader.as_mut().poll(cx).is_ready() {
                kept.reader_done = true;
            }
            rx.poll_unpin(cx).map(Result::ok)
        });
        let message = match tokio::time::timeout(inner.request_timeout, answered).await {
            Ok(Some(answer)) => {
                waiting.answered = true;
                return Some(respond(Some(vec![answer])));
            }
            Err(_) => format!("the handler did not answer within {:?}", inner.request_timeout),
            Ok(None) => "the request's connection ended without answering".to_owned(),
        };
        // Timed out, or the connection ended: dropping it cancels the handler.
        drop(waiting);
        let id = RawValue::from_string(id).ok()?;
        Some(respond(Some(vec![error_answer(&id, crate::codes::REQUEST_CANCELLED, &message)])))
    }
}

/// An error answer to the request `id`, made here.
fn error_answer(id: &RawValue, code: i64, message: &str) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Object<'a> {
        code: i64,
        message: &'a str,
    }
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        error: Object<'a>,
    }
    serde_json::to_vec(&Answer { jsonrpc: "2.0", id, error: Object { code, message } }).unwrap_or_default()
}

/// The outbound side of a kept connection: the answer goes to the request waiting for it; a
/// request of the server's own to the client is answered at once with an error saying that HTTP
/// cannot carry it; a notification to the client is dropped.
struct Route {
    answer: Arc<std::sync::Mutex<Option<oneshot::Sender<Vec<u8>>>>>,
    frames: mpsc::UnboundedSender<Result<Frame, crate::framing::FrameError>>,
}

impl Sink<Vec<u8>> for Route {
    type Error = std::io::Error;

    fn poll_ready(self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: std::pin::Pin<&mut Self>, body: Vec<u8>) -> std::io::Result<()> {
        #[derive(serde::Deserialize)]
        struct Probe<'a> {
            #[serde(borrow)]
            id: Option<&'a RawValue>,
            method: Option<serde::de::IgnoredAny>,
        }
        let probe = serde_json::from_slice::<Probe<'_>>(&body).ok();
        match probe {
            Some(Probe { method: Some(_), id: Some(id) }) => {
                let refusal = error_answer(id, crate::codes::SERVER_ERROR, NO_CALLS_BACK);
                let _ = self.frames.send(Ok(Frame::Message(BytesMut::from(&refusal[..]))));
            }
            Some(Probe { method: Some(_), id: None }) => {
                tracing::debug!(target: crate::LOG_TARGET, "dropped a notification to the client: {NO_CALLS_BACK}");
            }
            _ => {
                let waiting = self.answer.lock().unwrap_or_else(|p| p.into_inner()).take();
                match waiting {
                    Some(waiting) => {
                        let _ = waiting.send(body);
                    }
                    None => tracing::debug!(target: crate::LOG_TARGET, "an answer nobody waits for was dropped"),
                }
            }
        }
        Ok(())
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Serve one body as a connection of its own; its answers once it has ended.
pub(crate) async fn dispatch(builder: Builder, bytes: Bytes) -> Option<Vec<Vec<u8>>> {
    let (done, answers) = oneshot::channel();
    let incoming = futures::stream::iter([Ok(Frame::Message(BytesMut::from(&bytes[..])))]);
    let eof_reason = async { Some(NO_CALLS_BACK.to_owned()) }.boxed();
    let (connection, _shared) =
        builder.start_messages(incoming, |_| Collect { answers: Vec::new(), done: Some(done) }, Some(eof_reason), None);
    let answers = answers.await.ok();
    drop(connection);
    answers
}

fn respond(answers: Option<Vec<Vec<u8>>>) -> Response<FullBody> {
    let Some(mut answers) = answers else {
        return Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, "the request's connection ended without answering")
            .into_response();
    };
    let body = match answers.len() {
        0 => return accepted(),
        1 => answers.pop().unwrap_or_default(),
        // One body is one message: a connection answers it with one message (a batch: one
        // array). Were there more, they are joined into an array rather than lost.
        _ => {
            let mut joined = b"[".to_vec();
            for (i, answer) in answers.iter().enumerate() {
                if i > 0 {
                    joined.push(b',');
                }
                joined.extend_from_slice(answer);
            }
            joined.push(b']');
            joined
        }
    };
    let status = if is_bad_request(&body) { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    json_response(status, body)
}

/// `202 Accepted`, no body: notifications only.
fn accepted() -> Response<FullBody> {
    let mut response = Response::new(FullBody::default());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// A JSON answer.
fn json_response(status: StatusCode, body: Vec<u8>) -> Response<FullBody> {
    let mut response = Response::new(FullBody::from(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An answer that says the body was not JSON or not a request at all: one error object with
/// `"id": null` and code `-32700` or `-32600`.
fn is_bad_request(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<serde::de::IgnoredAny>,
        error: Option<Code>,
    }
    if body.first() != Some(&b'{') || !body.windows(8).any(|w| w == b"\"error\":") {
        return false;
    }
    match serde_json::from_slice::<Probe>(body) {
        Ok(Probe { id: None, error: Some(Code { code }) }) => {
            code == crate::codes::PARSE_ERROR || code == crate::codes::INVALID_REQUEST
        }
        _ => false,
    }
}

/// Whether an outbound body is an answer (or a batch of answers), not a message of the server's
/// own to the client.
fn is_answer(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        method: Option<serde::de::IgnoredAny>,
    }
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => true,
        _ => serde_json::from_slice::<Probe>(body).map(|p| p.method.is_none()).unwrap_or(true),
    }
}

/// The outbound side of a body's connection: keeps its answers, drops what else the server sends
/// the client (plain HTTP cannot carry it), hands the answers over when the connection ends.
struct Collect {
    answers: Vec<Vec<u8>>,
    done: Option<oneshot::Sender<Vec<Vec<u8>>>>,
}

impl Sink<Vec<u8>> for Collect {
    type Error = std::io::Error;

    fn poll_ready(self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(mut self: std::pin::Pin<&mut Self>, body: Vec<u8>) -> std::io::Result<()> {
        if is_answer(&body) {
            self.answers.push(body);
        } else {
            tracing::debug!(
                target: crate::LOG_TARGET,
                "dropped a message from the server to the client: {NO_CALLS_BACK}"
            );
        }
        Ok(())
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if let Some(done) = self.done.take() {
            let _ = done.send(std::mem::take(&mut self.answers));
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_told_from_the_servers_own_messages() {
        assert!(is_answer(br#"{"jsonrpc":"2.0","id":1,"result":{"method":1}}"#));
        assert!(is_answer(br#"[{"jsonrpc":"2.0","id":1,"result":2}]"#));
        assert!(!is_answer(br#"{"jsonrpc":"2.0","id":0,"method":"roots/list"}"#));
        assert!(!is_answer(br#"{"jsonrpc":"2.0","method":"$/progress","params":{}}"#));
    }

    #[test]
    fn only_unaddressed_parse_and_request_errors_are_bad_requests() {
        assert!(is_bad_request(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#));
        assert!(is_bad_request(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#));
        assert!(!is_bad_request(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}"#));
        assert!(!is_bad_request(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"x"}}"#));
        assert!(!is_bad_request(br#"{"jsonrpc":"2.0","id":1,"result":"\"error\":"}"#));
    }
}
