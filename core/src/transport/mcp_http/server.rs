//! The server side: a `tower::Service` over HTTP requests, and [`McpHttpServer::bind`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::{Body, Frame as BodyFrame, SizeHint};
use serde_json::Value;

use super::mirror::{ToolHeaders, check_params, decode_header_value};
use super::session::{
    Bounds, Inbound, InputContext, Parked, Refused, Reserved, STATE_PREFIX, Session, SessionSink, SseBody,
    new_session_id,
};
use super::{HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID, STATELESS_VERSIONS, SUPPORTED_VERSIONS};
use crate::Builder;
use crate::framing::Frame;
use crate::transport::http::body::{BodyError, read_body};
use crate::transport::http::budget::{ByteBudget, Charge, Charged, OverBudget};
use crate::transport::http::guard::AllowList;

/// Default [`McpHttpServer::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// Default [`McpHttpServer::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default [`McpHttpServer::max_backlog`]: a session's undelivered outbound bytes.
pub const DEFAULT_MAX_BACKLOG: usize = 4 * 1024 * 1024;
/// Default [`McpHttpServer::max_replay`]: a session's delivered bytes kept for `Last-Event-ID`.
pub const DEFAULT_MAX_REPLAY: usize = 1024 * 1024;
/// Default [`McpHttpServer::max_body_size`].
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// Default [`McpHttpServer::body_timeout`].
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`McpHttpServer::retry`]: the `retry:` a priming event tells clients.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Default [`McpHttpServer::max_inbound`]: a session's posted bytes its connection has not
/// taken yet.
pub const DEFAULT_MAX_INBOUND: usize = 8 * 1024 * 1024;
/// Default [`McpHttpServer::max_session_bytes`]: 128 MiB.
pub const DEFAULT_MAX_SESSION_BYTES: usize = 128 * 1024 * 1024;
/// Default [`McpHttpServer::max_pre_session_bytes`]: 64 MiB.
pub const DEFAULT_MAX_PRE_SESSION_BYTES: usize = 64 * 1024 * 1024;
/// Default [`McpHttpServer::input_timeout`]: how long a 2026-07-28 request that asked the
/// client for input waits for the retry carrying the answers.
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(120);
/// Most `InputRequiredResult`s the server sends for one 2026-07-28 request (a handler's
/// input requests past them fail).
pub const MAX_SERVER_INPUT_ROUNDS: usize = 8;
/// Most requests of one session open at once (each has its stream).
pub const MAX_OPEN_REQUESTS_PER_SESSION: usize = 256;
/// Inbound messages queued for a session's connection before a POST waits.
const INBOUND_QUEUE: usize = 32;

/// What the server tells a session's handler factory about the session.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The `MCP-Session-Id`; empty for a stateless (2026-07-28) request, which has a
    /// connection of its own and no session.
    pub id: String,
    /// What [`McpHttpServer::authorize`] returned for the `initialize` POST.
    pub principal: Option<String>,
}

/// A refusal from [`McpHttpServer::authorize`]: the status (`401` or `403`), an optional
/// `WWW-Authenticate` value and a message for the body.
#[derive(Debug, Clone)]
pub struct AuthRejection {
    /// The HTTP status.
    pub status: StatusCode,
    /// The `WWW-Authenticate` header, for a `401`.
    pub www_authenticate: Option<String>,
    /// Said in the JSON-RPC error of the body.
    pub message: String,
}

impl AuthRejection {
    /// `401 Unauthorized` with `WWW-Authenticate: Bearer`.
    pub fn bearer(message: impl Into<String>) -> Self {
        AuthRejection {
            status: StatusCode::UNAUTHORIZED,
            www_authenticate: Some("Bearer".into()),
            message: message.into(),
        }
    }
}

type Factory = dyn Fn(&SessionInfo) -> Builder + Send + Sync;
type Authorize = dyn Fn(&http::request::Parts) -> Result<Option<String>, AuthRejection> + Send + Sync;

/// An MCP server over Streamable HTTP (revisions 2025-11-25 and 2026-07-28; 2025-06-18 and
/// 2025-03-26 clients too): a [`tower_service::Service`] over `http::Request`s that a user
/// mounts at the MCP endpoint (axum, hyper, …), or [`McpHttpServer::bind`] for the common case.
///
/// Every session is a [`Connection`](crate::Connection) of ours, from the factory's
/// [`Builder`] (set [`Profile::mcp()`](crate::Profile::mcp) there: the transport does not), fed
/// through [`Builder::connect_messages`]: server→client requests, notifications, progress and
/// cancellation work as over stdio.
///
/// - `POST` an `initialize` without `MCP-Session-Id` starts a session (its id in the answer's
///   `MCP-Session-Id`); every other POST names its session. A POST carrying a request is
///   answered with an SSE stream: a priming event (id, `retry:`), what the connection sends
///   while the request is open (a handler's notifications and requests to the client), the
///   answer; then it ends. A POST of notifications or answers gets `202`. Batches are refused
///   (`400`), as revision 2025-06-18 and later say.
/// - `GET` opens the session's standalone stream (one at a time, else `409`); with
///   `Last-Event-ID` it resumes the stream that event was on, after it.
/// - `DELETE` ends the session; later requests naming it get `404`, as do unknown ids.
/// - `MCP-Protocol-Version` other than a revision we speak: `400`.
/// - Revision 2026-07-28 (stateless) beside these: a POST with that `MCP-Protocol-Version`
///   (its `_meta` carrying the same version and the client's capabilities, `Mcp-Method` and
///   `Mcp-Name` mirroring the body) is answered by a connection of its own from the factory,
///   with no session: JSON if the answer comes first, else an SSE stream without event ids;
///   closing that stream cancels the request. Refusals: `-32020` (headers), `-32022`
///   (version, with the ones we speak), `-32602` (`_meta`), `404` for `-32601`; `GET` and
///   `DELETE` are `405`.
///
/// Safe by default: `Host` and `Origin` must be loopback names ([`McpHttpServer::allowed_hosts`]
/// for a server behind a proxy), `403` otherwise; bodies are bounded in bytes and time; a
/// session's outbound backlog and its replay buffer are bounded in bytes; sessions are bounded
/// in number and expire when idle.
///
/// ```no_run
/// use jsonrpc_duplex_core::transport::mcp_http::McpHttpServer;
/// use jsonrpc_duplex_core::{Connection, ErrorObject, Profile, Router};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let server = McpHttpServer::new(|_session| {
///     Connection::builder().profile(Profile::mcp()).serve(
///         Router::new().method("ping", |_: serde_json::Value, _| async { Ok::<_, ErrorObject>(serde_json::json!({})) }),
///     )
/// });
/// let bound = server.bind("127.0.0.1:0").await?;
/// println!("MCP at http://{}/mcp", bound.local_addr());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpHttpServer {
    inner: Arc<Inner>,
}

struct Settings {
    guard: AllowList,
    max_sessions: usize,
    idle_timeout: Duration,
    max_backlog: usize,
    max_replay: usize,
    max_body: usize,
    body_timeout: Duration,
    retry: Duration,
    max_inbound: usize,
    input_timeout: Duration,
    /// Revision 2026-07-28 (stateless) is served beside the session revisions.
    modern: bool,
    /// The bodies of POSTs outside a session, read and not answered yet.
    pre_session: Arc<ByteBudget>,
    /// The bodies of sessions' POSTs, read or being read, not taken by their connections yet.
    session_bytes: Arc<ByteBudget>,
    authorize: Option<Arc<Authorize>>,
}

struct Inner {
    settings: Settings,
    factory: Box<Factory>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The tools' arguments mirrored into `Mcp-Param-*` headers (2026-07-28), learnt from the
    /// `tools/list` answers sent and declared.
    tool_headers: Arc<ToolHeaders>,
    /// 2026-07-28 requests waiting for the retry with the client's input, by `requestState`.
    parked: Arc<Parked>,
    /// Stateless (2026-07-28) requests being answered: they count against `max_sessions`.
    stateless_live: AtomicUsize,
    reaper: AtomicBool,
    /// Shutting down: no new sessions or stateless requests.
    draining: AtomicBool,
}

/// A stateless request's place in [`Inner::stateless_live`], given back when it ends.
struct Slot(Weak<Inner>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(inner) = self.0.upgrade() {
            inner.stateless_live.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl std::fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpServer").field("sessions", &self.session_count()).finish_non_exhaustive()
    }
}

impl McpHttpServer {
    /// A server whose sessions are connections from `factory`'s builder (called once per
    /// `initialize`, with the session's id and principal).
    pub fn new<F>(factory: F) -> Self
    where
        F: Fn(&SessionInfo) -> Builder + Send + Sync + 'static,
    {
        McpHttpServer {
            inner: Arc::new(Inner {
                settings: Settings {
                    guard: AllowList::loopback(),
                    max_sessions: DEFAULT_MAX_SESSIONS,
                    idle_timeout: DEFAULT_IDLE_TIMEOUT,
                    max_backlog: DEFAULT_MAX_BACKLOG,
                    max_replay: DEFAULT_MAX_REPLAY,
                    max_body: DEFAULT_MAX_BODY,
                    body_timeout: DEFAULT_BODY_TIMEOUT,
                    retry: DEFAULT_RETRY,
                    max_inbound: DEFAULT_MAX_INBOUND,
                    input_timeout: DEFAULT_INPUT_TIMEOUT,
                    modern: true,
                    pre_session: ByteBudget::new(DEFAULT_MAX_PRE_SESSION_BYTES),
                    session_bytes: ByteBudget::new(DEFAULT_MAX_SESSION_BYTES),
                    authorize: None,
                },
                factory: Box::new(factory),
                sessions: Mutex::new(HashMap::new()),
                tool_headers: Arc::new(ToolHeaders::default()),
                parked: Arc::new(Mutex::new(HashMap::new())),
                stateless_live: AtomicUsize::new(0),
                reaper: AtomicBool::new(false),
                draining: AtomicBool::new(false),
            }),
        }
    }

    fn settings(&mut self) -> &mut Settings {
        &mut Arc::get_mut(&mut self.inner).expect("settings are set before the server is cloned or serves").settings
    }

    /// The `Host` names accepted besides the loopback names (`localhost`, `127.0.0.1`,
    /// `[::1]`, any port): `name` or `name:port`. Set it for a server reached by a public name.
    /// Panics if the server was cloned already (as do all settings).
    pub fn allowed_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        let guard = &mut self.settings().guard;
        *guard = hosts.into_iter().fold(guard.clone(), |g, h| g.allow_host(h));
        self
    }

    /// The `Origin`s accepted (`scheme://host[:port]`) besides loopback origins. A request
    /// without `Origin` (not from a browser) is not refused for it.
    pub fn allowed_origins<I: IntoIterator<Item = S>, S: Into<String>>(mut self, origins: I) -> Self {
        let guard = &mut self.settings().guard;
        *guard = origins.into_iter().fold(guard.clone(), |g, o| g.allow_origin(o));
        self
    }

    /// The whole `Host`/`Origin` allow-list (the `http` feature's [`AllowList`]): say
    /// `AllowList::loopback().any_host()` behind a reverse proxy that checks `Host` itself.
    pub fn allow_list(mut self, guard: AllowList) -> Self {
        self.settings().guard = guard;
        self
    }

    /// Most sessions at once ([`DEFAULT_MAX_SESSIONS`]); an `initialize` past it gets `503`.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.settings().max_sessions = n;
        self
    }

    /// A session with no response open and no request for this long is ended
    /// ([`DEFAULT_IDLE_TIMEOUT`]); its id then gets `404`.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.settings().idle_timeout = timeout;
        self
    }

    /// A session's outbound bytes not yet taken by a reader ([`DEFAULT_MAX_BACKLOG`]); at the
    /// bound its connection waits (its writes stall, as on a full socket).
    pub fn max_backlog(mut self, bytes: usize) -> Self {
        self.settings().max_backlog = bytes;
        self
    }

    /// A session's delivered bytes kept for resumption ([`DEFAULT_MAX_REPLAY`]); past it the
    /// oldest are dropped and a `Last-Event-ID` before them resumes with what is left. A
    /// request's stream stays resumable after its answer went out (written is not read), each
    /// such stream charged 256 bytes for its entry besides its events.
    pub fn max_replay(mut self, bytes: usize) -> Self {
        self.settings().max_replay = bytes;
        self
    }

    /// The largest POST body ([`DEFAULT_MAX_BODY`]): `413` past it, checked as it arrives
    /// (`Content-Length` or chunked) before more is buffered.
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.settings().max_body = bytes;
        self
    }

    /// How long a POST body may take to arrive ([`DEFAULT_BODY_TIMEOUT`]): `408` after it.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.settings().body_timeout = timeout;
        self
    }

    /// A session's posted message bytes its connection has not taken yet
    /// ([`DEFAULT_MAX_INBOUND`]); a POST past it waits (its body read, its message held) until
    /// the connection takes messages. One message always fits.
    pub fn max_inbound(mut self, bytes: usize) -> Self {
        self.settings().max_inbound = bytes;
        self
    }

    /// The bytes of POST bodies outside a session held at once across the server
    /// ([`DEFAULT_MAX_PRE_SESSION_BYTES`]): `initialize`s, stateless (2026-07-28) requests, and
    /// POSTs naming a session we do not know. A body with a `Content-Length` is counted in
    /// full before a byte of it is read, a chunked one as it arrives; its bytes are held until
    /// the POST is answered (a stateless request's answer, or its stream's first event). Past
    /// the budget the POST gets `503` with `Retry-After: 1` and `Connection: close`, the rest of
    /// its body unread. When nothing is held one body is always taken, whatever its size. A
    /// session's own POSTs are bounded by its [`max_inbound`](McpHttpServer::max_inbound) and,
    /// all sessions together, by [`max_session_bytes`](McpHttpServer::max_session_bytes).
    ///
    /// ```
    /// use jsonrpc_duplex_core::transport::mcp_http::McpHttpServer;
    /// use jsonrpc_duplex_core::{Connection, Profile, Router};
    /// let server = McpHttpServer::new(|_| Connection::builder().profile(Profile::mcp()).serve(Router::new()))
    ///     .max_pre_session_bytes(16 << 20);
    /// assert_eq!(server.pre_session_bytes(), 0);
    /// ```
    pub fn max_pre_session_bytes(mut self, bytes: usize) -> Self {
        self.settings().pre_session = ByteBudget::new(bytes);
        self
    }

    /// The bytes of POST bodies outside a session held now (see
    /// [`max_pre_session_bytes`](McpHttpServer::max_pre_session_bytes)).
    pub fn pre_session_bytes(&self) -> usize {
        self.inner.settings.pre_session.held()
    }

    /// Declare tools whose `x-mcp-header` annotations are checked on every 2026-07-28
    /// `tools/call` (their `Mcp-Param-*` headers against the arguments, `400` and `-32020`
    /// `HeaderMismatch` when they differ), before any `tools/list` answer told them: give the
    /// `tools/list` result or its `tools` array. The server also learns them from every
    /// `tools/list` answer its handlers send (the latest definition of a name wins), so
    /// declaring is for a server whose clients may call a tool it has not listed yet (another
    /// instance listed it, the client cached it). A tool not declared and never listed has no
    /// `Mcp-Param-*` checked. At most 4,096 tools are kept.
    ///
    /// # Panics
    ///
    /// If a tool's annotations break the revision's rules (not a header token, given twice,
    /// not on an `integer`/`string`/`boolean` property reached through `properties` alone):
    /// clients would leave that tool out.
    ///
    /// ```
    /// use jsonrpc_duplex_core::transport::mcp_http::McpHttpServer;
    /// use jsonrpc_duplex_core::{Connection, Profile};
    /// let server = McpHttpServer::new(|_| Connection::builder().profile(Profile::mcp())).declare_tools(&serde_json::json!([
    ///     {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
    ///         "region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}}}}
    /// ]));
    /// # drop(server);
    /// ```
    pub fn declare_tools(self, tools: &Value) -> Self {
        let invalid = self.inner.tool_headers.learn(tools);
        if let Some((tool, why)) = invalid.first() {
            panic!("McpHttpServer::declare_tools: the tool {tool:?} has an invalid x-mcp-header: {why}");
        }
        self
    }

    /// How long a 2026-07-28 request whose handler asked the client for input waits for the
    /// client's retry ([`DEFAULT_INPUT_TIMEOUT`]); then it ends, its handler cancelled, and a
    /// retry naming its `requestState` gets `-32602`.
    ///
    /// Under 2026-07-28 a handler asks the client as it does under 2025-11-25 and over stdio
    /// (`ctx.peer().request("elicitation/create", …)`, `sampling/createMessage`,
    /// `roots/list`), while it answers a `tools/call`, `prompts/get` or `resources/read`: the
    /// transport answers the HTTP request with an `InputRequiredResult` of those requests
    /// (those made before it is sent go together) and a `requestState` of its own; the
    /// client's retry carrying it and the `inputResponses` gets a stream of its own, the
    /// answers go to the waiting handler, and what the handler does next answers the retry.
    /// A request the client did not declare the capability of fails at once, as do other
    /// methods and requests made while answering other methods. A parked request holds its
    /// place in [`max_sessions`](McpHttpServer::max_sessions) until it ends; its outstanding
    /// input requests are bounded by [`max_backlog`](McpHttpServer::max_backlog) in bytes and
    /// it gets at most [`MAX_SERVER_INPUT_ROUNDS`] rounds. The retry must reach this server
    /// (the state is the running handler): behind a load balancer, route by `requestState`.
    pub fn input_timeout(mut self, timeout: Duration) -> Self {
        self.settings().input_timeout = timeout;
        self
    }

    /// The bytes of sessions' POST bodies held at once across the server
    /// ([`DEFAULT_MAX_SESSION_BYTES`]): each session's share is bounded by its
    /// [`max_inbound`](McpHttpServer::max_inbound), and this bounds them all together. A body
    /// with a `Content-Length` is counted in full before a byte of it is read, a chunked one
    /// as it arrives; its bytes are held until the session's connection takes the message.
    /// Past the budget the POST gets `503` with `Retry-After: 1` and `Connection: close`, the
    /// rest of its body unread. When nothing is held one body is always taken.
    ///
    /// ```
    /// use jsonrpc_duplex_core::transport::mcp_http::McpHttpServer;
    /// use jsonrpc_duplex_core::{Connection, Profile, Router};
    /// let server = McpHttpServer::new(|_| Connection::builder().profile(Profile::mcp()).serve(Router::new()))
    ///     .max_session_bytes(32 << 20);
    /// assert_eq!(server.session_bytes(), 0);
    /// ```
    pub fn max_session_bytes(mut self, bytes: usize) -> Self {
        self.settings().session_bytes = ByteBudget::new(bytes);
        self
    }

    /// The bytes of sessions' POST bodies held now (see
    /// [`max_session_bytes`](McpHttpServer::max_session_bytes)).
    pub fn session_bytes(&self) -> usize {
        self.inner.settings.session_bytes.held()
    }

    /// Serve revision 2026-07-28 (stateless) beside the session revisions (`true`, the
    /// default). With `false` the server speaks 2025-11-25 and earlier only, as a server of
    /// those revisions would: a POST without a session that is not `initialize` gets `400`
    /// ("no MCP-Session-Id"), whatever its `MCP-Protocol-Version` (a dual-era client then
    /// falls back to `initialize`).
    pub fn stateless(mut self, serve: bool) -> Self {
        self.settings().modern = serve;
        self
    }

    /// The reconnection delay the priming events' `retry:` field tells clients
    /// ([`DEFAULT_RETRY`]).
    pub fn retry(mut self, delay: Duration) -> Self {
        self.settings().retry = delay;
        self
    }

    /// Authenticate every request: `Ok(principal)` lets it through, `Err` answers with the
    /// rejection. The principal of the `initialize` POST is the session's (its factory sees it
    /// in [`SessionInfo::principal`]); a later request of the session with another principal
    /// gets `403`.
    ///
    /// ```
    /// use jsonrpc_duplex_core::transport::mcp_http::{AuthRejection, McpHttpServer};
    /// use jsonrpc_duplex_core::{Connection, Profile};
    /// let server = McpHttpServer::new(|session| {
    ///     tracing::info!(user = ?session.principal, "new session");
    ///     Connection::builder().profile(Profile::mcp())
    /// })
    /// .authorize(|request| {
    ///     match request.headers.get("authorization").and_then(|v| v.to_str().ok()) {
    ///         Some("Bearer s3cret") => Ok(Some("alice".to_owned())),
    ///         _ => Err(AuthRejection::bearer("a valid bearer token is needed")),
    ///     }
    /// });
    /// # drop(server);
    /// ```
    pub fn authorize<F>(mut self, hook: F) -> Self
    where
        F: Fn(&http::request::Parts) -> Result<Option<String>, AuthRejection> + Send + Sync + 'static,
    {
        self.settings().authorize = Some(Arc::new(hook));
        self
    }

    /// Sessions alive now.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Stateless (2026-07-28) requests alive now, those parked for the client's input
    /// included: each holds a place in [`McpHttpServer::max_sessions`] until its connection
    /// lets go of it.
    pub fn stateless_count(&self) -> usize {
        self.inner.stateless_live.load(Ordering::Acquire)
    }

    /// Outbound bytes of all sessions that no reader has taken yet (each session's share is
    /// bounded by [`McpHttpServer::max_backlog`]).
    pub fn backlog_bytes(&self) -> usize {
        let sessions: Vec<Arc<Session>> =
            self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        sessions.iter().map(|s| s.backlog()).sum()
    }

    /// Answer one HTTP request (what the `Service` does).
    pub async fn handle<B>(&self, request: Request<B>) -> Response<McpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.inner.clone().handle(request).await
    }

    /// Listen on `addr` and serve the MCP endpoint at `/mcp` (HTTP/1.1, and HTTP/2 with prior
    /// knowledge); other paths get `404`. The `http` feature's server loop serves it
    /// ([`serve`](crate::transport::http::serve::serve)): a request's headers within
    /// [`HEADER_READ_TIMEOUT`](super::HEADER_READ_TIMEOUT) (10 s), at most
    /// [`MAX_HTTP_CONNECTIONS`](super::MAX_HTTP_CONNECTIONS) (1024) connections at once (more
    /// are answered `503`), and a graceful [`BoundMcpServer::shutdown`].
    pub async fn bind(self, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<BoundMcpServer> {
        self.bind_at(addr, "/mcp").await
    }

    /// [`McpHttpServer::bind`] with the endpoint at `path`.
    pub async fn bind_at(self, addr: impl tokio::net::ToSocketAddrs, path: &str) -> std::io::Result<BoundMcpServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let config = crate::transport::http::serve::ServeConfig::new()
            .header_read_timeout(super::HEADER_READ_TIMEOUT)
            .max_connections(super::MAX_HTTP_CONNECTIONS);
        let endpoint = AtPath { server: self.clone(), path: path.into() };
        let http = crate::transport::http::serve::serve(listener, config, move |_peer| endpoint.clone())?;
        Ok(BoundMcpServer { addr: local, http: Some(http), server: self })
    }

    /// Begin a graceful stop: the GET streams end (they never would), new sessions and
    /// stateless requests are refused (`503`); requests in progress go on.
    fn drain(&self) {
        self.inner.draining.store(true, Ordering::Release);
        let sessions: Vec<Arc<Session>> =
            self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        for session in sessions {
            session.drain();
        }
    }

    /// End every session now (their connections close, their ids then get `404`).
    fn end_sessions(&self) {
        let sessions: Vec<Arc<Session>> =
            self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.terminate();
        }
    }
}

/// The MCP endpoint at a path of [`McpHttpServer::bind_at`]'s server; other paths get `404`.
#[derive(Clone)]
struct AtPath {
    server: McpHttpServer,
    path: Arc<str>,
}

impl tower_service::Service<Request<hyper::body::Incoming>> for AtPath {
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<hyper::body::Incoming>) -> Self::Future {
        let server = self.server.clone();
        let at_path = request.uri().path() == &*self.path;
        Box::pin(async move {
            if !at_path {
                return Ok(full(StatusCode::NOT_FOUND, "text/plain; charset=utf-8", Bytes::from_static(b"Not Found")));
            }
            Ok(server.handle(request).await)
        })
    }
}

/// How long [`BoundMcpServer::shutdown`] lets requests in progress finish.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A server listening ([`McpHttpServer::bind`]); dropping it stops accepting and ends its
/// connections.
#[derive(Debug)]
pub struct BoundMcpServer {
    addr: SocketAddr,
    http: Option<crate::transport::http::serve::HttpServer>,
    server: McpHttpServer,
}

impl BoundMcpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
    /// The server (to count its sessions).
    pub fn server(&self) -> &McpHttpServer {
        &self.server
    }
    /// The HTTP server loop's counters: connections accepted, refused (`503`), open now.
    pub fn http_stats(&self) -> crate::transport::http::serve::HttpServerStats {
        self.http.as_ref().map(|h| h.stats()).unwrap_or_default()
    }
    /// Stop gracefully within [`DEFAULT_SHUTDOWN_GRACE`] (see
    /// [`shutdown_within`](BoundMcpServer::shutdown_within)).
    pub async fn shutdown(self) {
        self.shutdown_within(DEFAULT_SHUTDOWN_GRACE).await;
    }
    /// Stop gracefully: the listener closes, every session's GET stream ends, new sessions and
    /// stateless requests get `503`; requests in progress may finish within `grace` (their
    /// streams end with their answers), then what is left is dropped (its handlers
    /// cancelled) and every session ends. Tells how many connections were still busy.
    pub async fn shutdown_within(mut self, grace: Duration) -> crate::transport::http::serve::HttpShutdownReport {
        self.server.drain();
        let report = match self.http.take() {
            Some(http) => http.shutdown(grace).await,
            None => Default::default(),
        };
        self.server.end_sessions();
        report
    }
}

impl Drop for BoundMcpServer {
    fn drop(&mut self) {
        if let Some(http) = self.http.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(http.shutdown(Duration::ZERO));
        }
    }
}

impl<B> tower_service::Service<Request<B>> for McpHttpServer
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { Ok(inner.handle(request).await) })
    }
}

/// The body of the server's responses: a short JSON or text body, or an SSE stream.
pub struct McpBody(Kind);

enum Kind {
    Full(Option<Bytes>),
    Sse(Box<SseBody>),
}

impl std::fmt::Debug for McpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Kind::Full(_) => "McpBody::Full",
            Kind::Sse(_) => "McpBody::Sse",
        })
    }
}

impl Body for McpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        match &mut self.0 {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(BodyFrame::data(b)))),
            Kind::Sse(sse) => sse.poll_event(cx).map(|event| event.map(|b| Ok(BodyFrame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.0, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Sse(_) => SizeHint::default(),
        }
    }
}

fn full(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<McpBody> {
    let body = body.into();
    let mut response = Response::new(McpBody(Kind::Full((!body.is_empty()).then_some(body))));
    *response.status_mut() = status;
    if !content_type.is_empty() {
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    response
}

/// The answer to a body that could not be read (`413`, `408`, `400`).
fn body_refusal(e: BodyError) -> Response<McpBody> {
    let code = if matches!(e, BodyError::Read(_)) { -32700 } else { -32600 };
    rpc_error(e.refusal().status(), code, &e.to_string())
}

/// The pre-session budget is spent: `503`, `Retry-After: 1`, and the connection closed (the
/// rest of the body is not read).
fn over_budget(limit: usize) -> Response<McpBody> {
    let message = format!(
        "Service Unavailable: the server holds as many bytes of requests outside a session as it may \
         ({limit} bytes); retry shortly"
    );
    let mut refusal = rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, &message);
    refusal.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    refusal.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    refusal
}

/// The budget all sessions' POST bodies share is spent: `503`, `Retry-After: 1`, and the
/// connection closed (the rest of the body is not read).
fn over_session_budget(limit: usize) -> Response<McpBody> {
    let message = format!(
        "Service Unavailable: the server holds as many bytes of sessions' requests as it may ({limit} bytes); \
         retry shortly"
    );
    let mut refusal = rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, &message);
    refusal.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    refusal.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    refusal
}

/// A JSON-RPC error (id `null`) in a response with `status`.
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<McpBody> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    full(status, "application/json", body.to_string())
}

fn sse(body: SseBody, session: &str) -> Response<McpBody> {
    let mut response = Response::new(McpBody(Kind::Sse(Box::new(body))));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if !session.is_empty()
        && let Ok(value) = HeaderValue::from_str(session)
    {
        headers.insert(HEADER_SESSION_ID, value);
    }
    response
}

/// A stateless request's response: its answer as JSON when it is the first message out
/// (`404` for `-32601`, as 2026-07-28 says), else an SSE stream of what comes, the answer
/// last. Dropped before that (the client went away): the request is cancelled.
async fn stateless_answer(mut body: SseBody) -> Response<McpBody> {
    match futures::future::poll_fn(|cx| body.poll_first(cx)).await {
        None => rpc_error(StatusCode::INTERNAL_SERVER_ERROR, -32603, "the server ended before it answered"),
        Some((message, true)) => {
            drop(body);
            let not_found = serde_json::from_slice::<Value>(&message)
                .ok()
                .and_then(|m| m.get("error")?.get("code")?.as_i64())
                .is_some_and(|code| code == -32601);
            let status = if not_found { StatusCode::NOT_FOUND } else { StatusCode::OK };
            full(status, "application/json", message)
        }
        Some((first, false)) => {
            body.stream_from(first);
            sse(body, "")
        }
    }
}

/// Is this POST of revision 2026-07-28 (served without a session)? Its `MCP-Protocol-Version`
/// says so, or one we do not know comes without a session (to be refused as unsupported), or
/// it has no header and no session but the per-request `_meta` version.
fn is_stateless(headers: &HeaderMap, message: &Value) -> bool {
    let session = header_str(headers, HEADER_SESSION_ID).is_some();
    let initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    match header_str(headers, HEADER_PROTOCOL_VERSION) {
        Some(v) if STATELESS_VERSIONS.contains(&v) => true,
        Some(v) => !session && !initialize && !SUPPORTED_VERSIONS.contains(&v),
        None => !session && !initialize && meta_field(message, META_PROTOCOL_VERSION).is_some(),
    }
}

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

fn meta_field<'m>(message: &'m Value, key: &str) -> Option<&'m Value> {
    message.get("params")?.get("_meta")?.get(key)
}

type Refusal = (StatusCode, i64, String, Option<Value>);

/// Revision 2026-07-28's checks of a POST: the version header one we serve
/// (`UnsupportedProtocolVersion`, `-32022`), the required `_meta` fields (`-32602`), and the
/// mirrored headers equal to the body (`HeaderMismatch`, `-32020`); all `400`.
fn check_stateless(headers: &HeaderMap, message: &Value, tools: &ToolHeaders) -> Result<(), Refusal> {
    let mismatch = |why: String| Err((StatusCode::BAD_REQUEST, -32020, format!("Header mismatch: {why}"), None));
    let Some(version) = header_str(headers, HEADER_PROTOCOL_VERSION) else {
        return mismatch("no MCP-Protocol-Version header".into());
    };
    if !STATELESS_VERSIONS.contains(&version) {
        let supported: Vec<&str> = STATELESS_VERSIONS.iter().chain(SUPPORTED_VERSIONS).copied().collect();
        let data = serde_json::json!({"supported": supported, "requested": version});
        return Err((StatusCode::BAD_REQUEST, -32022, "Unsupported protocol version".into(), Some(data)));
    }
    let Some(method) = message.get("method").and_then(Value::as_str) else { return Ok(()) };
    if message.get("id").is_some() {
        let body_version = meta_field(message, META_PROTOCOL_VERSION).and_then(Value::as_str);
        let capabilities = meta_field(message, META_CLIENT_CAPABILITIES).filter(|c| c.is_object());
        let (Some(body_version), Some(_)) = (body_version, capabilities) else {
            let why =
                format!("Invalid params: _meta must carry {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES}");
            return Err((StatusCode::BAD_REQUEST, -32602, why, None));
        };
        if body_version != version {
            return mismatch(format!("MCP-Protocol-Version {version:?} but _meta says {body_version:?}"));
        }
    }
    match header_str(headers, "mcp-method") {
        Some(m) if m == method => {}
        Some(m) => return mismatch(format!("Mcp-Method {m:?} but the body's method is {method:?}")),
        None => return mismatch("no Mcp-Method header".into()),
    }
    if let Some(name) = named(method, message) {
        let Some(header) = headers.get("mcp-name") else { return mismatch("no Mcp-Name header".into()) };
        match decode_header_value(header.as_bytes()) {
            Some(value) if value == name => {}
            Some(value) => return mismatch(format!("Mcp-Name {value:?} but the body names {name:?}")),
            None => return mismatch("Mcp-Name is not a valid header value".into()),
        }
        // The tool's arguments marked `x-mcp-header` (as we know them) against their headers.
        if method == "tools/call"
            && let Some(mirrored) = tools.get(name)
        {
            let arguments = message.get("params").and_then(|p| p.get("arguments"));
            check_params(&mirrored, arguments, headers).or_else(mismatch)?;
        }
    }
    Ok(())
}

/// The requests of 2026-07-28 that may be answered with an `InputRequiredResult`.
const INPUT_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];

/// What `Mcp-Name` mirrors: the `params.name` of `tools/call` and `prompts/get`, the
/// `params.uri` of `resources/read`.
fn named<'m>(method: &str, message: &'m Value) -> Option<&'m str> {
    let params = message.get("params")?;
    match method {
        "tools/call" | "prompts/get" => params.get("name")?.as_str(),
        "resources/read" => params.get("uri")?.as_str(),
        _ => None,
    }
}

/// A JSON-RPC error for the request `id`, with `data`, in a response with `status`.
fn rpc_error_with(status: StatusCode, id: &Value, code: i64, message: &str, data: Option<Value>) -> Response<McpBody> {
    let mut error = serde_json::json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
    full(status, "application/json", body.to_string())
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn accepts(headers: &HeaderMap, what: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|item| {
        let media = item.split(';').next().unwrap_or("").trim();
        media.eq_ignore_ascii_case(what) || media == "*/*"
    })
}

/// What a POST body holds.
enum Posted {
    /// A request: its id (JSON text), method, progress token (JSON text).
    Request { id: String, method: String, progress: Option<String>, version: Option<String> },
    /// Notifications or answers: nothing comes back.
    Other,
}

fn classify(message: &Value) -> Result<Posted, &'static str> {
    let Some(object) = message.as_object() else {
        return Err(if message.is_array() {
            "batches are not supported (MCP 2025-06-18 and later): send one message per POST"
        } else {
            "a JSON-RPC message is an object"
        });
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("not a JSON-RPC 2.0 message (`jsonrpc` must be \"2.0\")");
    }
    match (object.get("method").and_then(Value::as_str), object.get("id")) {
        (Some(method), Some(id)) if !id.is_null() => {
            let params = object.get("params");
            let progress = params.and_then(|p| p.get("_meta")?.get("progressToken")).map(Value::to_string);
            let version = (method == "initialize")
                .then(|| params.and_then(|p| p.get("protocolVersion")?.as_str()).map(str::to_owned))
                .flatten();
            Ok(Posted::Request { id: id.to_string(), method: method.to_owned(), progress, version })
        }
        (Some(_), _) => Ok(Posted::Other),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => Ok(Posted::Other),
        _ => Err("not a JSON-RPC request, notification or response"),
    }
}

impl Inner {
    async fn handle<B>(self: Arc<Self>, request: Request<B>) -> Response<McpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        // DNS rebinding: `Host` and `Origin` against the allow-list.
        if let Err(refusal) = self.settings.guard.check(&parts) {
            return rpc_error(refusal.status(), -32000, &format!("Forbidden: {}", refusal.message()));
        }
        let principal = match &self.settings.authorize {
            None => None,
            Some(hook) => match hook(&parts) {
                Ok(principal) => principal,
                Err(rejection) => {
                    let mut response = rpc_error(rejection.status, -32001, &rejection.message);
                    if let Some(value) = rejection.www_authenticate.and_then(|v| HeaderValue::from_str(&v).ok()) {
                        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
                    }
                    return response;
                }
            },
        };
        let stateless =
            header_str(&parts.headers, HEADER_PROTOCOL_VERSION).is_some_and(|v| STATELESS_VERSIONS.contains(&v));
        match parts.method {
            Method::POST => self.post(parts, body, principal).await,
            // Revision 2026-07-28 has no GET stream and no session to delete.
            Method::GET | Method::DELETE if stateless && self.settings.modern => {
                let mut response = rpc_error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    -32000,
                    "Method not allowed: MCP 2026-07-28 has no GET stream and no sessions",
                );
                response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
                response
            }
            Method::GET => self.get(&parts.headers, principal),
            Method::DELETE => self.delete(&parts.headers, principal),
            _ => {
                let mut response = rpc_error(StatusCode::METHOD_NOT_ALLOWED, -32000, "Method not allowed");
                response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                response
            }
        }
    }

    /// The session a request names, checked: its id known, its principal the session's, its
    /// protocol version one we speak.
    // The refusal is the response itself, returned at once: no need to box it.
    #[allow(clippy::result_large_err)]
    fn session_of(&self, headers: &HeaderMap, principal: &Option<String>) -> Result<Arc<Session>, Response<McpBody>> {
        let Some(id) = header_str(headers, HEADER_SESSION_ID) else {
            return Err(rpc_error(StatusCode::BAD_REQUEST, -32000, "Bad Request: no MCP-Session-Id header"));
        };
        let session = self.sessions.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned();
        let Some(session) = session else {
            return Err(rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found"));
        };
        if session.principal != *principal {
            return Err(rpc_error(
                StatusCode::FORBIDDEN,
                -32001,
                "Forbidden: the session belongs to another principal",
            ));
        }
        if let Some(version) = header_str(headers, HEADER_PROTOCOL_VERSION)
            && !SUPPORTED_VERSIONS.contains(&version)
        {
            let message = format!(
                "Bad Request: unsupported MCP-Protocol-Version {version:?} (supported: {})",
                SUPPORTED_VERSIONS.join(", ")
            );
            return Err(rpc_error(StatusCode::BAD_REQUEST, -32000, &message));
        }
        session.touch();
        Ok(session)
    }

    async fn read_body<B>(&self, body: B) -> Result<Bytes, Response<McpBody>>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        // The `http` feature's reader: the limit checked from the declared length before
        // reading, then as the bytes (chunked or not) arrive; the whole body within the timeout.
        read_body(body, self.settings.max_body, Some(self.settings.body_timeout)).await.map_err(body_refusal)
    }

    /// A body outside a session, charged to the pre-session budget: in full before it is read
    /// when its length is declared, else as it arrives.
    async fn read_pre_session<B>(&self, body: B) -> Result<(Bytes, Charge), Response<McpBody>>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.read_charged(body, &self.settings.pre_session, over_budget).await
    }

    /// A body charged to `budget` (`over` answers when it is spent): in full before it is
    /// read when its length is declared, else as it arrives.
    async fn read_charged<B>(
        &self,
        body: B,
        budget: &Arc<ByteBudget>,
        over: fn(usize) -> Response<McpBody>,
    ) -> Result<(Bytes, Charge), Response<McpBody>>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let over = || over(budget.limit());
        match body.size_hint().exact() {
            Some(len) if len <= self.settings.max_body as u64 => {
                let charge = budget.charge(len as usize).ok_or_else(over)?;
                Ok((self.read_body(body).await?, charge))
            }
            // Over the body limit: refused from its declared length, nothing read or charged.
            Some(_) => Err(self
                .read_body(body)
                .await
                .err()
                .unwrap_or_else(|| rpc_error(StatusCode::PAYLOAD_TOO_LARGE, -32600, "the body exceeds the limit"))),
            None => {
                let mut charge = budget.charge(0).ok_or_else(over)?;
                let charged = Charged { body: Box::pin(body), charge: &mut charge };
                match read_body(charged, self.settings.max_body, Some(self.settings.body_timeout)).await {
                    Ok(bytes) => Ok((bytes, charge)),
                    Err(BodyError::Read(e)) if e.is::<OverBudget>() => Err(over()),
                    Err(e) => Err(body_refusal(e)),
                }
            }
        }
    }

    async fn post<B>(
        self: Arc<Self>,
        parts: http::request::Parts,
        body: B,
        principal: Option<String>,
    ) -> Response<McpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let headers = &parts.headers;
        let json = header_str(headers, "content-type")
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                -32000,
                "Unsupported Media Type: send application/json",
            );
        }
        if !(accepts(headers, "application/json") && accepts(headers, "text/event-stream")) {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                -32000,
                "Not Acceptable: the client must accept both application/json and text/event-stream",
            );
        }
        // A POST to a session we know takes its share of the session's inbound budget before
        // its body is read (the declared length, else the body limit): a session's posted
        // bytes, read or queued, stay within `max_inbound`.
        let known = header_str(headers, HEADER_SESSION_ID)
            .filter(|_| !header_str(headers, HEADER_PROTOCOL_VERSION).is_some_and(|v| STATELESS_VERSIONS.contains(&v)))
            .and_then(|id| self.sessions.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned());
        let mut reserved = None;
        if let Some(session) = &known {
            let declared = header_str(headers, "content-length").and_then(|v| v.parse::<usize>().ok());
            let want = declared.unwrap_or(self.settings.max_body).min(self.settings.max_body);
            match tokio::time::timeout(self.settings.body_timeout, session.reserve(want)).await {
                Ok(Some(permit)) => reserved = Some(Reserved { permit, charge: None }),
                Ok(None) => return rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found (it has ended)"),
                Err(_) => {
                    return rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        -32000,
                        "Service Unavailable: the session is not taking messages",
                    );
                }
            }
        }
        // A POST outside a session holds its bytes of the server's pre-session budget until
        // it is answered.
        // A session's POST holds its bytes of the budget all sessions share until its
        // connection takes the message.
        let (bytes, _charge) = if known.is_some() {
            match self.read_charged(body, &self.settings.session_bytes, over_session_budget).await {
                Ok((bytes, charge)) => {
                    reserved = reserved.map(|r: Reserved| Reserved { charge: Some(charge), ..r });
                    (bytes, None)
                }
                Err(refusal) => return refusal,
            }
        } else {
            match self.read_pre_session(body).await {
                Ok((bytes, charge)) => (bytes, Some(charge)),
                Err(refusal) => return refusal,
            }
        };
        let reserved = reserved.map(|r| Reserved { permit: super::session::fit(r.permit, bytes.len()), ..r });
        let message: Value = match serde_json::from_slice(&bytes) {
            Ok(message) => message,
            Err(e) => return rpc_error(StatusCode::BAD_REQUEST, -32700, &format!("Parse error: {e}")),
        };
        let posted = match classify(&message) {
            Ok(posted) => posted,
            Err(why) => return rpc_error(StatusCode::BAD_REQUEST, -32600, &format!("Invalid Request: {why}")),
        };
        let frame = Frame::Message(BytesMut::from(&bytes[..]));
        if self.settings.modern && is_stateless(headers, &message) {
            return self.post_stateless(headers, &message, posted, frame, principal).await;
        }
        match posted {
            Posted::Request { id, method, progress, version } if method == "initialize" => {
                if let Some(existing) = header_str(headers, HEADER_SESSION_ID) {
                    let known = self.sessions.lock().unwrap_or_else(|p| p.into_inner()).contains_key(existing);
                    return if known {
                        rpc_error(
                            StatusCode::BAD_REQUEST,
                            -32600,
                            "Invalid Request: the session is initialized already",
                        )
                    } else {
                        rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found")
                    };
                }
                let session = match self.clone().start_session(principal, version.unwrap_or_default(), false) {
                    Ok(session) => session,
                    Err(refusal) => return refusal,
                };
                self.send(&session, id, progress, frame, None, false).await
            }
            Posted::Request { id, method, progress, .. } => {
                let session = match self.session_of(headers, &principal) {
                    Ok(session) => session,
                    Err(refusal) => return refusal,
                };
                let reserved = reserved.filter(|_| known.as_ref().is_some_and(|k| Arc::ptr_eq(k, &session)));
                self.send(&session, id, progress, frame, reserved, method == "tools/list").await
            }
            Posted::Other => {
                let session = match self.session_of(headers, &principal) {
                    Ok(session) => session,
                    Err(refusal) => return refusal,
                };
                let reserved = reserved.filter(|_| known.as_ref().is_some_and(|k| Arc::ptr_eq(k, &session)));
                if session.deliver_inbound(frame, bytes.len(), reserved).await.is_err() {
                    return rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found (it has ended)");
                }
                full(StatusCode::ACCEPTED, "", Bytes::new())
            }
        }
    }

    /// A POST of revision 2026-07-28: checked against its headers, then a request is answered
    /// by a connection of its own (no session), a notification is taken and dropped.
    async fn post_stateless(
        self: Arc<Self>,
        headers: &HeaderMap,
        message: &Value,
        posted: Posted,
        frame: Frame,
        principal: Option<String>,
    ) -> Response<McpBody> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if let Err((status, code, why, data)) = check_stateless(headers, message, &self.tool_headers) {
            return rpc_error_with(status, &id, code, &why, data);
        }
        let state = message.get("params").and_then(|p| p.get("requestState")).and_then(Value::as_str);
        if let (Some(token), Posted::Request { method, .. }) = (state, &posted)
            && token.starts_with(STATE_PREFIX)
        {
            return self.resume(message, method, token, principal).await;
        }
        match posted {
            Posted::Request { id, method, progress, .. } => {
                let version = header_str(headers, HEADER_PROTOCOL_VERSION).unwrap_or_default().to_owned();
                let session = match self.clone().start_session(principal, version, true) {
                    Ok(session) => session,
                    Err(refusal) => return refusal,
                };
                if INPUT_METHODS.contains(&method.as_str()) {
                    let ctx = InputContext {
                        parked: Arc::downgrade(&self.parked),
                        name: named(&method, message).map(str::to_owned),
                        method: method.clone(),
                        capabilities: meta_field(message, META_CLIENT_CAPABILITIES).cloned().unwrap_or(Value::Null),
                        timeout: self.settings.input_timeout,
                        max_rounds: MAX_SERVER_INPUT_ROUNDS,
                    };
                    session.enable_input(ctx, &message["id"]);
                }
                self.send(&session, id, progress, frame, None, method == "tools/list").await
            }
            Posted::Other if message.get("method").is_none() => rpc_error_with(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                -32600,
                "Invalid Request: a client sends no responses in MCP 2026-07-28",
                None,
            ),
            Posted::Other => {
                // The revision defines no client notification over HTTP (closing a stream is
                // the cancellation): taken, and there is no session to give it to.
                tracing::debug!(method = ?message.get("method"), "MCP 2026-07-28 notification dropped");
                full(StatusCode::ACCEPTED, "", Bytes::new())
            }
        }
    }

    /// The retry of a request parked for the client's input: its answers to the waiting
    /// handler, and what it does next is this request's answer.
    async fn resume(
        self: Arc<Self>,
        message: &Value,
        method: &str,
        token: &str,
        principal: Option<String>,
    ) -> Response<McpBody> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let invalid = |why: &str| {
            rpc_error_with(StatusCode::BAD_REQUEST, &id, -32602, &format!("Invalid params: requestState {why}"), None)
        };
        let taken = self.parked.lock().unwrap_or_else(|p| p.into_inner()).remove(token);
        let Some(session) = taken else {
            return invalid(
                "is unknown or expired (it is good once, on this server, within its input timeout): \
                 send the request again without it",
            );
        };
        if session.principal != principal || !session.retries(method, named(method, message)) {
            // Presented for another request or by another principal: it is spent.
            session.terminate();
            return invalid("belongs to another request");
        }
        let responses = message.get("params").and_then(|p| p.get("inputResponses"));
        let Some((body, answers)) = session.resume(id.clone(), responses) else {
            return invalid("names a request that has ended");
        };
        for (frame, len) in answers {
            if session.deliver_inbound(frame, len, None).await.is_err() {
                return invalid("names a request that has ended");
            }
        }
        stateless_answer(body).await
    }

    /// Register a request's stream and hand the request to the session's connection.
    async fn send(
        &self,
        session: &Arc<Session>,
        id: String,
        progress: Option<String>,
        frame: Frame,
        reserved: Option<Reserved>,
        lists_tools: bool,
    ) -> Response<McpBody> {
        let len = match &frame {
            Frame::Message(m) => m.len(),
            _ => 1,
        };
        let body = match session.open_post_stream(id, progress, lists_tools) {
            Ok(body) => body,
            Err(Refused::DuplicateId) => {
                return rpc_error(StatusCode::BAD_REQUEST, -32600, "Invalid Request: a request with this id is open");
            }
            Err(Refused::TooManyStreams) => {
                return rpc_error(StatusCode::TOO_MANY_REQUESTS, -32000, "Too Many Requests open in this session");
            }
        };
        if session.deliver_inbound(frame, len, reserved).await.is_err() {
            return rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found (it has ended)");
        }
        if session.stateless {
            return stateless_answer(body).await;
        }
        sse(body, &session.id)
    }

    #[allow(clippy::result_large_err)]
    fn start_session(
        self: Arc<Self>,
        principal: Option<String>,
        version: String,
        stateless: bool,
    ) -> Result<Arc<Session>, Response<McpBody>> {
        let settings = &self.settings;
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if self.draining.load(Ordering::Acquire) {
            let mut refusal =
                rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, "Service Unavailable: the server is shutting down");
            refusal.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(refusal);
        }
        if sessions.len() + self.stateless_live.load(Ordering::Acquire) >= settings.max_sessions {
            let mut refusal = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                "Service Unavailable: too many sessions; retry later",
            );
            refusal.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return Err(refusal);
        }
        let id = if stateless { String::new() } else { new_session_id() };
        let (tx, rx) = futures::channel::mpsc::channel::<Inbound>(INBOUND_QUEUE);
        let bounds = Bounds {
            backlog: settings.max_backlog,
            replay: settings.max_replay,
            retry_ms: settings.retry.as_millis() as u64,
            max_streams: MAX_OPEN_REQUESTS_PER_SESSION,
            inbound: settings.max_inbound,
        };
        let slot: Option<Box<dyn Send + Sync>> = stateless.then(|| {
            self.stateless_live.fetch_add(1, Ordering::AcqRel);
            Box::new(Slot(Arc::downgrade(&self))) as Box<dyn Send + Sync>
        });
        let session = Arc::new(Session::new(
            id.clone(),
            principal.clone(),
            bounds,
            version,
            tx,
            stateless,
            slot,
            self.tool_headers.clone(),
        ));
        let builder = (self.factory)(&SessionInfo { id: id.clone(), principal });
        let sink = SessionSink { session: Arc::downgrade(&session) };
        // The connection's taking a message releases what it held (its bytes of the budget).
        let connection = builder.connect_messages(rx.map(|(frame, _receipt)| Ok(frame)), sink);
        let closed = connection.closed();
        *session.connection.lock().unwrap_or_else(|p| p.into_inner()) = Some(connection);
        if stateless {
            // Not kept by the server: its one response holds it.
            return Ok(session);
        }
        sessions.insert(id.clone(), session.clone());
        drop(sessions);
        // When the connection ends (DELETE, expiry, or its own error), the session goes.
        let weak = Arc::downgrade(&self);
        tokio::spawn(async move {
            let reason = closed.await;
            tracing::debug!(session = %id, %reason, "MCP session ended");
            if let Some(inner) = weak.upgrade() {
                let removed = inner.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                if let Some(session) = removed {
                    session.terminate();
                }
            }
        });
        if !self.reaper.swap(true, Ordering::AcqRel) {
            tokio::spawn(reap(Arc::downgrade(&self), settings.idle_timeout));
        }
        Ok(session)
    }

    fn get(&self, headers: &HeaderMap, principal: Option<String>) -> Response<McpBody> {
        if !accepts(headers, "text/event-stream") {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                -32000,
                "Not Acceptable: the client must accept text/event-stream",
            );
        }
        let session = match self.session_of(headers, &principal) {
            Ok(session) => session,
            Err(refusal) => return refusal,
        };
        let resume = match header_str(headers, "last-event-id") {
            None => None,
            Some(last) => match last.split_once('-').and_then(|(s, q)| Some((s.parse().ok()?, q.parse().ok()?))) {
                Some(position) => Some(position),
                None => {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        -32000,
                        "Bad Request: a Last-Event-ID of another server",
                    );
                }
            },
        };
        match session.attach(resume) {
            Some(body) => sse(body, &session.id),
            None if resume.is_none() => {
                rpc_error(StatusCode::CONFLICT, -32000, "Conflict: the session's GET stream is open already")
            }
            None => rpc_error(StatusCode::NOT_FOUND, -32000, "Not Found: that stream is over and its events are gone"),
        }
    }

    fn delete(&self, headers: &HeaderMap, principal: Option<String>) -> Response<McpBody> {
        let session = match self.session_of(headers, &principal) {
            Ok(session) => session,
            Err(refusal) => return refusal,
        };
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(&session.id);
        session.terminate();
        full(StatusCode::OK, "", Bytes::new())
    }
}

/// End sessions idle for `idle` (no response open, nothing asked): every quarter of it.
async fn reap(inner: Weak<Inner>, idle: Duration) {
    let period = (idle / 4).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        let now = Instant::now();
        let expired: Vec<Arc<Session>> = {
            let mut sessions = inner.sessions.lock().unwrap_or_else(|p| p.into_inner());
            let ids: Vec<String> = sessions
                .values()
                .filter(|s| !s.attached() && now.duration_since(s.lock().last_activity) >= idle)
                .map(|s| s.id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for session in expired {
            tracing::debug!(session = %session.id, "MCP session expired (idle)");
            session.terminate();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_long_and_distinct() {
        let a = new_session_id();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_session_id());
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn classification() {
        let request = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": "t"}}});
        assert!(matches!(classify(&request), Ok(Posted::Request { progress: Some(p), .. }) if p == "\"t\""));
        assert!(matches!(classify(&serde_json::json!([request])), Err(why) if why.contains("batches")));
        assert!(matches!(classify(&serde_json::json!({"jsonrpc": "2.0", "method": "x"})), Ok(Posted::Other)));
        assert!(matches!(classify(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}})), Ok(Posted::Other)));
        assert!(classify(&serde_json::json!({"jsonrpc": "1.0", "id": 1, "method": "x"})).is_err());
    }
}
