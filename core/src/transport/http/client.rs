//! Plain JSON-RPC over HTTP, the client side: a [`Connection`] whose calls are `POST`s
//! ([`Builder::connect_http`]), so any `#[rpc]` client works over it unchanged.
//!
//! - Every outbound message is one `POST` with `Content-Type: application/json`, on hyper-util's
//!   pooled client: connections are reused (keep-alive), and several calls are in flight at
//!   once (each on a connection of the pool, up to [`HttpTarget::max_in_flight`]; a further
//!   message waits for one to finish). Notifications are `POST`s too, answered `202`.
//! - A `POST` costs no task of its own: the exchanges in flight are polled by the connection's
//!   reader as its inbound stream (hyper's connection tasks, one per pooled connection, do the
//!   I/O), so an answer goes from hyper to its call with one wake-up.
//! - **Order.** Over HTTP nothing orders two requests on different connections, so the client
//!   orders what needs it: a notification (or a batch) is a fence. It is posted once every
//!   notification sent before it has been answered, and every message sent after it (calls
//!   too) is posted once it has been answered; calls between two fences are in flight
//!   together. So two notifications, or a notification and a later call, reach the server in
//!   the order they were sent (our server answers a notification once its handler has run, so
//!   its effect is visible to what follows). A notification does not wait for the calls sent
//!   before it (their answers can take as long as their handlers): it may overtake them.
//! - A `2xx` JSON answer is read within the connection's message size limit and delivered as
//!   the peer's answer.
//! - An HTTP error, a network failure or an answer that is not JSON fails the call with
//!   [`Error::Remote`](crate::Error::Remote) carrying an error object of code
//!   [`TRANSPORT_ERROR`] whose message says what happened (`the server answered HTTP 415
//!   Unsupported Media Type: …`) and whose `data` holds `{"status", "body"}` (the first 4 KiB of
//!   the body) when there was an HTTP answer.
//! - Timeouts and cancellation work as on any connection ([`CallOptions`](crate::CallOptions)):
//!   cancelling a call (its token, its timeout, dropping its future) abandons its `POST` rather
//!   than sending a cancellation, which over HTTP would reach a request that is not there.
//! - The server cannot call us: nothing arrives but answers.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::Sink;
use futures::future::{AbortHandle, Abortable, Aborted, BoxFuture, FutureExt, Shared, abortable};
use futures::stream::{FuturesUnordered, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Request, StatusCode, Uri, header};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::PollSemaphore;

use super::FullBody;
use super::body::read_body;
use crate::framing::{Frame, FrameError};
use crate::{Builder, CancelProtocol, Connection};

/// The error code of a call that failed in the HTTP transport (an HTTP error status, a network
/// failure, an answer that is not JSON), not in the server's JSON-RPC.
pub const TRANSPORT_ERROR: i64 = -32099;

/// Default for [`HttpTarget::max_in_flight`].
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;

/// How much of an HTTP error's body is kept for the error.
const ERROR_BODY_LIMIT: usize = 4096;

/// A URL that is not an `http://` URL.
#[derive(Debug, thiserror::Error)]
#[error("not an http:// URL: {0}")]
pub struct InvalidUrl(String);

/// Where and how to `POST`: the URL, headers for every request (say `Authorization`), how many
/// requests may be in flight at once, and how long an answer may take.
///
/// ```
/// use jsonrpc_duplex_core::transport::http::client::HttpTarget;
///
/// let target = HttpTarget::new("http://127.0.0.1:8080/rpc")?
///     .header(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer s3cret"))
///     .max_in_flight(64);
/// # drop(target);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a target does nothing until it is connected"]
pub struct HttpTarget {
    uri: Uri,
    headers: HeaderMap,
    max_in_flight: usize,
    response_timeout: Option<Duration>,
    http2: bool,
}

impl HttpTarget {
    /// `POST` to `url` (`http://host:port/path`; `https://` needs a TLS connector, which this
    /// crate does not bring).
    pub fn new(url: &str) -> Result<Self, InvalidUrl> {
        let uri: Uri = url.parse().map_err(|e| InvalidUrl(format!("{url}: {e}")))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(InvalidUrl(url.to_owned()));
        }
        Ok(HttpTarget {
            uri,
            headers: HeaderMap::new(),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            response_timeout: None,
            http2: false,
        })
    }

    /// Send `name: value` with every request.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// How many requests may be in flight at once ([`DEFAULT_MAX_IN_FLIGHT`]); each may use a
    /// connection of its own.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Speak HTTP/2 over cleartext with prior knowledge (h2c, no upgrade dance): every call is
    /// a stream of one connection, multiplexed, instead of a request on a pooled HTTP/1.1
    /// connection. For a server known to speak it (ours does, as do most behind a gRPC-style
    /// proxy); a server that speaks HTTP/1.1 only fails every call. Off by default.
    ///
    /// ```
    /// use jsonrpc_duplex_core::transport::http::client::HttpTarget;
    /// let target = HttpTarget::new("http://127.0.0.1:8080/rpc")?.http2_prior_knowledge(true);
    /// # drop(target);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn http2_prior_knowledge(mut self, on: bool) -> Self {
        self.http2 = on;
        self
    }

    /// How long reading an answer's body may take once its headers have arrived (none by
    /// default; a call's own timeout bounds the whole exchange).
    pub fn response_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.response_timeout = timeout.into();
        self
    }
}

impl Builder {
    /// A connection to a JSON-RPC server over HTTP at `url`: every call is a `POST` (see
    /// [`transport::http::client`](crate::transport::http::client)). Must be called inside a
    /// tokio runtime; nothing is connected until the first call.
    ///
    /// ```no_run
    /// use jsonrpc_duplex_core::Connection;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Connection::builder().connect_http("http://127.0.0.1:8080/")?;
    /// let sum: i64 = client.handle().request("add", (40, 2)).await?;
    /// # Ok(()) }
    /// ```
    pub fn connect_http(self, url: &str) -> Result<Connection, InvalidUrl> {
        Ok(self.connect_http_with(HttpTarget::new(url)?))
    }

    /// [`Builder::connect_http`] with headers and limits of your own.
    pub fn connect_http_with(self, target: HttpTarget) -> Connection {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let mut client = Client::builder(TokioExecutor::new());
        if target.http2 {
            client.http2_only(true).timer(hyper_util::rt::TokioTimer::new());
        }
        let client = client.build(connector);
        let (tx, rx) = mpsc::unbounded_channel();
        let permits = Arc::new(Semaphore::new(target.max_in_flight));
        let shared = Arc::new(ClientShared {
            client,
            limit: self.frame_limits().max_message_size,
            cancel: self.config.cancel.clone(),
            target,
            tasks: Mutex::default(),
        });
        let sink = PostSink { shared, tx: Some(tx), permits: PollSemaphore::new(permits), permit: None, fence: None };
        let incoming = Exchanges { new: rx, running: FuturesUnordered::new(), closed: false };
        self.connect_messages(incoming, sink)
    }
}

/// One exchange in flight: what it hands the connection when it is over (an answer, an error
/// answer made here, or nothing: a notification's `202`, an abandoned `POST`).
type Exchange = Abortable<BoxFuture<'static, Option<Frame>>>;

/// Where the sink hands its exchanges to [`Exchanges`].
type Frames = mpsc::UnboundedSender<Exchange>;

/// The inbound side: the `POST`s in flight, polled by the connection's reader as its stream of
/// inbound messages, so an exchange costs no task of its own (hyper's connection tasks do the
/// I/O; the reader wakes when an answer is in and takes it as it takes any inbound message).
/// Over plain HTTP nothing but answers arrive, which the reader routes straight to their
/// calls, so it never pauses on the read-ahead limits while exchanges wait to be polled. The
/// stream ends once the sink is closed or dropped, abandoning the `POST`s in flight (as it is
/// dropped, with them, when the connection ends).
struct Exchanges {
    new: mpsc::UnboundedReceiver<Exchange>,
    running: FuturesUnordered<Exchange>,
    /// The sink is gone: no exchange will be added, and those in flight were dropped.
    closed: bool,
}

impl futures::Stream for Exchanges {
    type Item = Result<Frame, FrameError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        while !this.closed {
            match this.new.poll_recv(cx) {
                Poll::Ready(Some(exchange)) => this.running.push(exchange),
                Poll::Ready(None) => {
                    // The sink closed (the connection is ending): every `POST` is abandoned.
                    this.closed = true;
                    this.running.clear();
                }
                Poll::Pending => break,
            }
        }
        loop {
            match ready!(this.running.poll_next_unpin(cx)) {
                Some(Ok(Some(frame))) => return Poll::Ready(Some(Ok(frame))),
                // A notification's answer, or an exchange abandoned by its call's cancellation.
                Some(Ok(None) | Err(Aborted)) => continue,
                None if this.closed => return Poll::Ready(None),
                // Empty, and the sink may add more: its send wakes us through `new`.
                None => return Poll::Pending,
            }
        }
    }
}

struct ClientShared {
    client: Client<HttpConnector, FullBody>,
    target: HttpTarget,
    limit: usize,
    cancel: CancelProtocol,
    tasks: Mutex<Tasks>,
}

/// The calls' `POST`s in flight, to abandon one when its call is cancelled. (All of them, and
/// the notifications', are abandoned when the sink closes: [`Exchanges`] drops them.)
#[derive(Default)]
struct Tasks {
    next: u64,
    /// A request's id (as spelled) → its exchange's number and abort handle.
    by_id: HashMap<String, (u64, AbortHandle)>,
}

impl ClientShared {
    fn tasks(&self) -> std::sync::MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the connection sends: one `POST` per message.
struct PostSink {
    shared: Arc<ClientShared>,
    tx: Option<Frames>,
    permits: PollSemaphore,
    permit: Option<OwnedSemaphorePermit>,
    /// Resolves once the last notification (or batch) sent has been answered: what a later
    /// message waits for before its `POST` goes out (see the module docs, **Order**).
    fence: Option<Fence>,
}

/// The end of a fence's `POST` (answered, failed or abandoned: the sender is dropped either way).
type Fence = Shared<oneshot::Receiver<()>>;

/// The members of an outbound message the transport needs.
#[derive(serde::Deserialize)]
struct Outbound<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

impl PostSink {
    /// A cancellation of a call in flight: abandon its `POST` and, if the protocol answers
    /// cancelled requests, answer it `-32800` ourselves. `true` if `body` was one.
    fn cancels(&self, message: &Outbound<'_>) -> bool {
        let (None, Some(method), Some(params)) = (message.id, &message.method, message.params) else {
            return false;
        };
        if *method != self.shared.cancel.method {
            return false;
        }
        let Ok(params) = serde_json::from_str::<HashMap<&str, &RawValue>>(params.get()) else {
            return false;
        };
        let Some(id) = params.get(&*self.shared.cancel.id_member) else {
            return false;
        };
        let mut tasks = self.shared.tasks();
        if let Some((_, task)) = tasks.by_id.remove(id.get()) {
            task.abort();
            drop(tasks);
            if self.shared.cancel.answers_cancelled
                && let Some(tx) = &self.tx
            {
                let answer = error_answer(
                    id,
                    crate::codes::REQUEST_CANCELLED,
                    "the call was cancelled: its HTTP request was abandoned",
                    None,
                );
                let (exchange, _) = abortable(futures::future::ready(Some(answer)).boxed());
                let _ = tx.send(exchange);
            }
        }
        true
    }

    /// Abandon every `POST` in flight: closing the channel makes [`Exchanges`] drop them all.
    fn abort_all(&mut self) {
        self.tx = None;
        self.shared.tasks().by_id.clear();
    }
}

impl Drop for PostSink {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl Sink<Vec<u8>> for PostSink {
    type Error = std::io::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.permit.is_none() {
            match ready!(self.permits.poll_acquire(cx)) {
                Some(permit) => self.permit = Some(permit),
                None => return Poll::Ready(Err(std::io::Error::other("the HTTP client is closed"))),
            }
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(mut self: Pin<&mut Self>, body: Vec<u8>) -> std::io::Result<()> {
        let Some(tx) = self.tx.clone() else {
            return Err(std::io::Error::other("the HTTP client is closed"));
        };
        // A call as our encoder writes it carries its id up front: no need to parse the rest.
        let (id, cancels) = match encoded_id(&body) {
            Some(id) => (Some(id.to_owned()), false),
            None => match serde_json::from_slice::<Outbound<'_>>(&body) {
                Ok(message) => (message.id.map(|id| id.get().to_owned()), self.cancels(&message)),
                Err(_) => (None, false),
            },
        };
        if cancels {
            return Ok(());
        }
        let permit = self.permit.take();
        let shared = self.shared.clone();
        // A message without an id (a notification, a batch) is a fence: it waits for the one
        // before it, and what follows waits for it. A call waits for the fence before it only.
        let after = self.fence.take();
        let done = if id.is_none() {
            let (done, fence) = oneshot::channel();
            self.fence = Some(fence.shared());
            Some(done)
        } else {
            self.fence = after.clone().filter(|fence| fence.peek().is_none());
            None
        };
        let order = Order { after, done };
        let mut tasks = self.shared.tasks();
        let seq = tasks.next;
        tasks.next += 1;
        let (exchange, abort) = abortable(post(shared, seq, id.clone(), body, permit, order).boxed());
        if tx.send(exchange).is_err() {
            return Err(std::io::Error::other("the HTTP client is closed"));
        }
        if let Some(id) = id {
            tasks.by_id.insert(id, (seq, abort));
        }
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.abort_all();
        Poll::Ready(Ok(()))
    }
}

/// The id of a message as the connection's encoder writes a call (`{"jsonrpc":"2.0","id":7,…`),
/// read off its first bytes; `None` for anything else (a notification, a batch), which is parsed.
fn encoded_id(body: &[u8]) -> Option<&str> {
    let rest = body.strip_prefix(br#"{"jsonrpc":"2.0","id":"#)?;
    let end = rest.iter().position(|b| !b.is_ascii_digit())?;
    if end == 0 || rest[end] != b',' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

/// What went wrong with one exchange.
struct Failure {
    message: String,
    status: Option<StatusCode>,
    body: Option<String>,
}

impl Failure {
    fn new(message: String) -> Self {
        Failure { message, status: None, body: None }
    }
}

/// Where a `POST` stands in the order of what was sent: the fence it waits for, and, if it is
/// a fence itself, the signal that it has been answered.
struct Order {
    after: Option<Fence>,
    done: Option<oneshot::Sender<()>>,
}

/// One `POST`: its answer (or what went wrong) becomes an inbound message. The in-flight
/// permit is given back when the exchange is over (its answer is then handed to the reader at
/// once).
async fn post(
    shared: Arc<ClientShared>,
    seq: u64,
    id: Option<String>,
    body: Vec<u8>,
    permit: Option<OwnedSemaphorePermit>,
    order: Order,
) -> Option<Frame> {
    if let Some(after) = order.after {
        // Answered or not (a failed notification is logged, an abandoned one dropped), the
        // fence is over once its `POST` is.
        let _ = after.await;
    }
    let outcome = exchange(&shared, body).await;
    drop(order.done);
    if let Some(id) = &id {
        let mut tasks = shared.tasks();
        // One lookup: the entry is this exchange's unless the id was sent again meanwhile.
        if let Some(entry) = tasks.by_id.remove(id)
            && entry.0 != seq
        {
            tasks.by_id.insert(id.clone(), entry);
        }
    }
    drop(permit);
    match (outcome, id) {
        (Ok(Some(answer)), _) => Some(Frame::Message(BytesMut::from(&answer[..]))),
        (Ok(None), None) => None,
        (Ok(None), Some(id)) => {
            let id = RawValue::from_string(id).ok()?;
            Some(error_answer(
                &id,
                super::client::TRANSPORT_ERROR,
                "the server answered a request with no body (202/204)",
                None,
            ))
        }
        (Err(failure), None) => {
            tracing::warn!(target: crate::LOG_TARGET, "an HTTP notification failed: {}", failure.message);
            None
        }
        (Err(failure), Some(id)) => {
            let id = RawValue::from_string(id).ok()?;
            let data =
                failure.status.map(|status| serde_json::json!({ "status": status.as_u16(), "body": failure.body }));
            Some(error_answer(&id, TRANSPORT_ERROR, &failure.message, data))
        }
    }
}

async fn exchange(shared: &ClientShared, body: Vec<u8>) -> Result<Option<Bytes>, Failure> {
    let target = &shared.target;
    let mut request =
        Request::post(target.uri.clone()).body(FullBody::from(body)).map_err(|e| Failure::new(e.to_string()))?;
    let headers = request.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    for (name, value) in &target.headers {
        headers.append(name, value.clone());
    }
    let response = shared.client.request(request).await.map_err(|e| {
        let mut why = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(inner) = source {
            why = format!("{why}: {inner}");
            source = inner.source();
        }
        Failure::new(format!("the HTTP request to {} failed: {why}", target.uri))
    })?;
    let status = response.status();
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
        return Ok(None);
    }
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"));
    if status.is_success() && json {
        return read_body(response.into_body(), shared.limit, target.response_timeout).await.map(Some).map_err(|e| {
            Failure { message: format!("the server's answer could not be read: {e}"), status: Some(status), body: None }
        });
    }
    let text = match read_body(
        http_body_util::Limited::new(response.into_body(), ERROR_BODY_LIMIT),
        usize::MAX,
        Some(Duration::from_secs(5)),
    )
    .await
    {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim_end().to_owned(),
        Err(_) => String::new(),
    };
    let message = if status.is_success() {
        format!("the server answered HTTP {status} with a body that is not JSON: {text}")
    } else {
        format!("the server answered HTTP {status}: {text}")
    };
    Err(Failure { message, status: Some(status), body: Some(text) })
}

/// An error answer to the call `id`, made on this side.
fn error_answer(id: &RawValue, code: i64, message: &str, data: Option<serde_json::Value>) -> Frame {
    #[derive(serde::Serialize)]
    struct Object<'a> {
        code: i64,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<serde_json::Value>,
    }
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        error: Object<'a>,
    }
    let body =
        serde_json::to_vec(&Answer { jsonrpc: "2.0", id, error: Object { code, message, data } }).unwrap_or_default();
    Frame::Message(BytesMut::from(&body[..]))
}

#[cfg(test)]
mod tests {
    use super::encoded_id;

    #[test]
    fn a_calls_id_is_read_off_its_first_bytes_and_anything_else_is_left_to_the_parser() {
        assert_eq!(encoded_id(br#"{"jsonrpc":"2.0","id":42,"method":"add","params":[1,2]}"#), Some("42"));
        assert_eq!(encoded_id(br#"{"jsonrpc":"2.0","id":0,"method":"shutdown"}"#), Some("0"));
        assert_eq!(encoded_id(br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":4}}"#), None);
        assert_eq!(encoded_id(br#"{"jsonrpc":"2.0","id":"a","method":"m"}"#), None);
        assert_eq!(encoded_id(br#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(encoded_id(br#"{"jsonrpc":"2.0","id":-1,"method":"m"}"#), None);
        assert_eq!(encoded_id(br#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#), None);
        assert_eq!(encoded_id(br#"{ "jsonrpc":"2.0","id":1,"method":"m"}"#), None);
    }
}
