//! The client side: a connection of ours whose outbound messages are POSTs to an MCP endpoint
//! and whose inbound messages come from the answers (JSON or SSE) and the GET stream.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use super::mirror::{Mirrored, header_value_for, mirrored_params, param_headers};
use super::sse::SseParser;
use super::{HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID};
use crate::framing::Frame;
use crate::{Builder, Connection};

/// Default [`McpHttpClient::max_reconnects`].
pub const DEFAULT_MAX_RECONNECTS: u32 = 5;
/// The reconnection delay when the server's events said none (`retry:`).
pub const DEFAULT_RECONNECT_DELAY: Duration = Duration::from_secs(1);
/// How long the closing `DELETE` may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a refusal's body read (its JSON-RPC error).
const REFUSAL_LIMIT: usize = 64 * 1024;

/// Why [`McpHttpClient::new`] refused a URL.
#[derive(Debug, thiserror::Error)]
#[error("not an http:// URL for MCP: {0}")]
pub struct BadUrl(String);

/// A Streamable HTTP client transport (revision 2025-11-25): every outbound message is a POST
/// to the endpoint; answers come back as JSON or as SSE streams, and a GET stream carries what
/// the server sends outside of requests.
///
/// - The session id the `initialize` answer names goes on every later request, with
///   `MCP-Protocol-Version` (the revision the server answered).
/// - An SSE stream that ends before its request was answered is resumed with a GET and
///   `Last-Event-ID`, after the delay the server's `retry:` said (else 1 s), at most
///   [`max_reconnects`](McpHttpClient::max_reconnects) times in a row; so is the GET stream.
/// - A `404` for a session we had means it ended: the transport initializes again (the
///   `initialize` it saw, then `notifications/initialized`) and sends the message again.
/// - A POST refused with another status answers its request with an error naming the status.
/// - Closing the connection sends `DELETE` for the session.
///
/// Plain `http://` only (TLS is not built in). MCP's conventions are the builder's: pass one
/// with [`Profile::mcp()`](crate::Profile::mcp).
///
/// ```no_run
/// use jsonrpc_duplex_core::transport::mcp_http::McpHttpClient;
/// use jsonrpc_duplex_core::{Connection, Profile};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let conn = McpHttpClient::new("http://127.0.0.1:3000/mcp")?
///     .header("authorization", "Bearer s3cret")?
///     .connect(Connection::builder().profile(Profile::mcp()));
/// let init: serde_json::Value = conn.handle().request("initialize", serde_json::json!({
///     "protocolVersion": "2025-11-25", "capabilities": {},
///     "clientInfo": {"name": "example", "version": "1.0.0"}
/// })).await?;
/// println!("{init}");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct McpHttpClient {
    url: Uri,
    headers: HeaderMap,
    max_reconnects: u32,
    stateless: Option<Stateless>,
    /// Choose the revision at the first message ([`McpHttpClient::auto_revision`]).
    auto: bool,
}

/// What a stateless (2026-07-28) client puts in every request's `_meta`.
#[derive(Debug, Clone)]
struct Stateless {
    version: String,
    capabilities: Value,
    client_info: Option<Value>,
}

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

impl McpHttpClient {
    /// A client of the endpoint at `url` (`http://host:port/path`).
    pub fn new(url: &str) -> Result<Self, BadUrl> {
        let uri: Uri = url.parse().map_err(|_| BadUrl(url.to_owned()))?;
        if uri.scheme_str() != Some("http") || uri.authority().is_none() {
            return Err(BadUrl(url.to_owned()));
        }
        Ok(McpHttpClient {
            url: uri,
            headers: HeaderMap::new(),
            max_reconnects: DEFAULT_MAX_RECONNECTS,
            stateless: None,
            auto: false,
        })
    }

    /// A header sent with every request (say `Authorization`).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, http::Error> {
        let name: HeaderName = name.parse()?;
        let value = HeaderValue::from_str(value)?;
        self.headers.insert(name, value);
        Ok(self)
    }

    /// Most reconnections in a row of a stream that ends early ([`DEFAULT_MAX_RECONNECTS`]).
    pub fn max_reconnects(mut self, n: u32) -> Self {
        self.max_reconnects = n;
        self
    }

    /// Speak revision 2026-07-28 (stateless) rather than 2025-11-25: no `initialize` and no
    /// session; every request carries `io.modelcontextprotocol/protocolVersion` and
    /// `…/clientCapabilities` (and `…/clientInfo` if set) in its `_meta` (added where the
    /// request has none of its own), and the headers `MCP-Protocol-Version`, `Mcp-Method` and
    /// `Mcp-Name` (Base64 in `=?base64?…?=` when the name is not plain ASCII). The answer
    /// comes as JSON or an SSE stream; a stream that breaks fails its request (no
    /// resumption in this revision); a call given up (its `notifications/cancelled`) closes
    /// its stream, which is the cancellation there. A refusal whose body is a JSON-RPC error
    /// for the request (`-32022` unsupported version, `-32020` header mismatch, `-32601`)
    /// is the call's error as the server said it. There is no GET stream and no `DELETE`.
    ///
    /// The revision's multi round-trip requests are carried out here: an `InputRequiredResult`
    /// to a `tools/call`, `prompts/get` or `resources/read` has its `inputRequests` put to the
    /// connection's own handlers (`roots/list`, `sampling/createMessage`,
    /// `elicitation/create`, as in 2025-11-25), and the request is sent again with a new id,
    /// their answers in `inputResponses` and the `requestState` echoed, at most
    /// [`MAX_INPUT_ROUNDS`] times; the caller gets the final answer. A tool's arguments marked
    /// `x-mcp-header` in the `tools/list` answers go into `Mcp-Param-*` headers of its calls
    /// (a tool whose annotations break the rules is left out of the answer); a `tools/call`
    /// refused with `-32020` (`HeaderMismatch`) is followed by a `tools/list` of the
    /// transport's own (every page, up to 16) and sent once more with the headers it says.
    ///
    /// ```no_run
    /// use jsonrpc_duplex_core::transport::mcp_http::McpHttpClient;
    /// use jsonrpc_duplex_core::{Connection, Profile};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let conn = McpHttpClient::new("http://127.0.0.1:3000/mcp")?
    ///     .stateless()
    ///     .client_info("example", "1.0.0")
    ///     .connect(Connection::builder().profile(Profile::mcp()));
    /// let server: serde_json::Value = conn.handle().request("server/discover", serde_json::json!({})).await?;
    /// println!("{}", server["supportedVersions"]);
    /// # Ok(()) }
    /// ```
    pub fn stateless(mut self) -> Self {
        self.stateless = Some(Stateless {
            version: super::STATELESS_VERSIONS[0].to_owned(),
            capabilities: json!({}),
            client_info: None,
        });
        self
    }

    /// Find out which revision the server speaks, and speak it: before the connection's first
    /// message goes, the transport asks `server/discover` as revision 2026-07-28 says (its
    /// per-request `_meta` and headers). A result naming 2026-07-28 among its
    /// `supportedVersions`, or a refusal that is one of that revision's own errors (`-32020`,
    /// `-32021`, `-32022` naming 2026-07-28, or `404` with `-32601`), means a modern server:
    /// the client is [`stateless`](McpHttpClient::stateless) from then on. Anything else (a
    /// `4xx` without such an error, an `-32022` listing only older revisions, no answer within
    /// 10 s) means a server of 2025-11-25 or earlier: the client speaks that, with sessions.
    ///
    /// The same client code serves both: when the first message is `initialize` and the
    /// server is modern, the transport answers it itself from the `server/discover` result
    /// (`protocolVersion` `2026-07-28`, its `capabilities`, the `serverInfo` of its `_meta`,
    /// `instructions`) and takes the initialize's `capabilities` and `clientInfo` for the
    /// per-request `_meta` (unless [`client_capabilities`](McpHttpClient::client_capabilities)
    /// or [`client_info`](McpHttpClient::client_info) set them); the `notifications/initialized`
    /// after it is not sent. Read the answer's `protocolVersion` to know which revision it is.
    ///
    /// ```no_run
    /// use jsonrpc_duplex_core::transport::mcp_http::McpHttpClient;
    /// use jsonrpc_duplex_core::{Connection, Profile};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let conn = McpHttpClient::new("http://127.0.0.1:3000/mcp")?
    ///     .auto_revision()
    ///     .connect(Connection::builder().profile(Profile::mcp()));
    /// let init: serde_json::Value = conn.handle().request("initialize", serde_json::json!({
    ///     "protocolVersion": "2025-11-25", "capabilities": {},
    ///     "clientInfo": {"name": "example", "version": "1.0.0"}
    /// })).await?;
    /// conn.handle().notify("notifications/initialized", serde_json::json!({})).await?;
    /// println!("speaking {}", init["protocolVersion"]); // "2026-07-28" or "2025-11-25"
    /// # Ok(()) }
    /// ```
    pub fn auto_revision(self) -> Self {
        let mut this = if self.stateless.is_some() { self } else { self.stateless() };
        this.auto = true;
        this
    }

    /// The client capabilities a stateless client declares on every request (`{}` unless set);
    /// implies [`stateless`](McpHttpClient::stateless).
    pub fn client_capabilities(self, capabilities: Value) -> Self {
        let mut this = if self.stateless.is_some() { self } else { self.stateless() };
        if let Some(s) = this.stateless.as_mut() {
            s.capabilities = capabilities;
        }
        this
    }

    /// The name and version a stateless client gives on every request; implies
    /// [`stateless`](McpHttpClient::stateless).
    pub fn client_info(self, name: &str, version: &str) -> Self {
        let mut this = if self.stateless.is_some() { self } else { self.stateless() };
        if let Some(s) = this.stateless.as_mut() {
            s.client_info = Some(json!({"name": name, "version": version}));
        }
        this
    }

    /// Start a connection over it. Must be called inside a tokio runtime.
    pub fn connect(self, builder: Builder) -> Connection {
        let limit = builder.frame_limits().max_message_size;
        let (inbound_tx, inbound_rx) = mpsc::channel::<Frame>(32);
        let (outbound_tx, outbound_rx) = mpsc::channel::<Vec<u8>>(32);
        let shared = Arc::new(ClientShared {
            url: self.url,
            headers: self.headers,
            http: Client::builder(TokioExecutor::new()).build_http(),
            session: Mutex::new(None),
            version: Mutex::new(None),
            initialize: Mutex::new(None),
            inbound: inbound_tx,
            limit,
            max_reconnects: self.max_reconnects,
            reinit: AtomicU64::new(0),
            get_started: AtomicBool::new(false),
            get_task: Mutex::new(None),
            pending: Mutex::new(std::collections::HashSet::new()),
            stateless: match (self.auto, self.stateless.clone()) {
                (false, Some(config)) => std::sync::OnceLock::from(config),
                _ => std::sync::OnceLock::new(),
            },
            auto: self.stateless.filter(|_| self.auto),
            initialized_locally: AtomicBool::new(false),
            captures: Mutex::new(std::collections::HashMap::new()),
            input_waiters: Mutex::new(std::collections::HashMap::new()),
            next_internal: AtomicU64::new(0),
            tools_lists: Mutex::new(std::collections::HashSet::new()),
            tool_headers: Mutex::new(std::collections::HashMap::new()),
            streams: Mutex::new(std::collections::HashMap::new()),
        });
        tokio::spawn(worker(shared, outbound_rx));
        let sink = outbound_tx.sink_map_err(std::io::Error::other);
        builder.connect_messages(inbound_rx.map(Ok), sink)
    }
}

struct ClientShared {
    url: Uri,
    headers: HeaderMap,
    http: Client<HttpConnector, Full<Bytes>>,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// The `initialize` request (to send again after a `404`) and its id's JSON text.
    initialize: Mutex<Option<(Value, String)>>,
    inbound: mpsc::Sender<Frame>,
    limit: usize,
    max_reconnects: u32,
    reinit: AtomicU64,
    get_started: AtomicBool,
    get_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Our requests not answered yet (id JSON text): an answer may come on any stream.
    pending: Mutex<std::collections::HashSet<String>>,
    /// Speaking 2026-07-28: what goes in every request's `_meta` (set before the first message
    /// goes, by the client or by the revision choice).
    stateless: std::sync::OnceLock<Stateless>,
    /// The revision is chosen at the first message: the 2026-07-28 settings to try.
    auto: Option<Stateless>,
    /// The revision choice answered the `initialize` itself: its `notifications/initialized`
    /// is not sent.
    initialized_locally: AtomicBool,
    /// A stateless client's requests in flight (id JSON text): closing one's stream cancels it.
    streams: Mutex<std::collections::HashMap<String, tokio::task::AbortHandle>>,
    /// Answers (by id JSON text) the transport reads itself: a multi round-trip request's
    /// rounds, before the last is handed to the connection.
    captures: Mutex<std::collections::HashMap<String, futures::channel::oneshot::Sender<Value>>>,
    /// The connection's answers to the input requests of a multi round-trip request.
    input_waiters: Mutex<std::collections::HashMap<String, futures::channel::oneshot::Sender<Value>>>,
    /// Numbers the ids the transport makes (retries, input requests).
    next_internal: AtomicU64,
    /// `tools/list` requests in flight (id JSON text): their answers are read for
    /// `x-mcp-header` annotations.
    tools_lists: Mutex<std::collections::HashSet<String>>,
    /// Per tool, its arguments mirrored into headers: (header name, property path).
    tool_headers: Mutex<std::collections::HashMap<String, Vec<Mirrored>>>,
}

/// Is `id` the id whose JSON text is `key`?
fn same_id(id: &Value, key: &str) -> bool {
    serde_json::to_string(id).is_ok_and(|text| text == key)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a POST carries.
#[derive(Clone)]
struct Posted {
    /// The request's id (JSON text), when it is a request.
    request: Option<(String, Value)>,
    method: Option<String>,
    /// `params.name` or `params.uri` of `tools/call`, `prompts/get`, `resources/read`.
    name: Option<String>,
    /// A `tools/call`'s arguments mirrored as `Mcp-Param-{name}` headers (the tool's
    /// `x-mcp-header` annotations).
    params: Vec<(String, String)>,
    /// A `HeaderMismatch` refusal of it may be followed by a `tools/list` and one retry.
    retry_mismatch: bool,
}

async fn worker(shared: Arc<ClientShared>, mut outbound: mpsc::Receiver<Vec<u8>>) {
    let mut first = None;
    if let Some(config) = shared.auto.clone() {
        let Some(body) = outbound.next().await else { return };
        first = choose_revision(&shared, config, body).await;
    }
    let mut outbound = futures::stream::iter(first).chain(outbound);
    if shared.stateless.get().is_some() {
        return stateless_worker(shared, outbound).await;
    }
    while let Some(body) = outbound.next().await {
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        let request = match (&method, message.get("id")) {
            (Some(_), Some(id)) => Some((id.to_string(), id.clone())),
            _ => None,
        };
        if method.as_deref() == Some("initialize")
            && let Some((key, _)) = &request
        {
            *lock(&shared.initialize) = Some((message.clone(), key.clone()));
        }
        if let Some((key, _)) = &request {
            lock(&shared.pending).insert(key.clone());
        }
        let posted = Posted { request, method, name: None, params: Vec::new(), retry_mismatch: false };
        if posted.request.is_some() {
            // A request's answer may wait on ours to the server's own requests: it must not
            // hold up the messages after it.
            let shared = shared.clone();
            tokio::spawn(async move { post(&shared, Bytes::from(body), &posted, true).await });
            continue;
        }
        post(&shared, Bytes::from(body), &posted, true).await;
        if posted.method.as_deref() == Some("notifications/initialized")
            && !shared.get_started.swap(true, Ordering::AcqRel)
        {
            // The GET stream is open (or refused) before the next message goes: what the
            // server sends on it then is not mistaken for a resumption.
            let (opened, is_open) = futures::channel::oneshot::channel();
            let task = tokio::spawn(standalone_stream(shared.clone(), opened));
            *lock(&shared.get_task) = Some(task);
            let _ = is_open.await;
        }
    }
    // The connection closed its side: the session ends.
    if let Some(task) = lock(&shared.get_task).take() {
        task.abort();
    }
    let session = lock(&shared.session).clone();
    if session.is_some() {
        let request = shared.request(Method::DELETE, Bytes::new(), None);
        let _ = tokio::time::timeout(DELETE_TIMEOUT, shared.http.request(request)).await;
    }
}

/// How long the revision choice waits for the server's answer to `server/discover`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the `server/discover` probe found.
enum Era {
    /// The server speaks 2026-07-28: its discover result, if it gave one.
    Modern(Option<Value>),
    /// The server speaks 2025-11-25 or earlier (why we think so).
    Legacy(String),
}

/// [`McpHttpClient::auto_revision`]: probe the server with the first message in hand, set
/// the revision, and give back the message to send (none if the transport answered it).
async fn choose_revision(shared: &Arc<ClientShared>, mut config: Stateless, body: Vec<u8>) -> Option<Vec<u8>> {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    if initialize {
        let params = message.get("params");
        if config.capabilities.as_object().is_some_and(|c| c.is_empty())
            && let Some(capabilities) = params.and_then(|p| p.get("capabilities")).filter(|c| c.is_object())
        {
            config.capabilities = capabilities.clone();
        }
        if config.client_info.is_none() {
            config.client_info = params.and_then(|p| p.get("clientInfo")).cloned();
        }
    }
    match probe(shared, &config).await {
        Era::Legacy(why) => {
            tracing::info!(%why, "the MCP server speaks 2025-11-25 or earlier: using sessions");
            Some(body)
        }
        Era::Modern(discovered) => {
            tracing::info!(version = %config.version, "the MCP server speaks the stateless revision");
            let version = config.version.clone();
            let _ = shared.stateless.set(config);
            let Some(id) = message.get("id").filter(|_| initialize) else { return Some(body) };
            // The `initialize` answered from what `server/discover` said.
            let discovered = discovered.unwrap_or(Value::Null);
            let server_info = discovered
                .get("_meta")
                .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
                .cloned()
                .unwrap_or_else(|| json!({"name": "", "version": ""}));
            let mut result = json!({
                "protocolVersion": version,
                "capabilities": discovered.get("capabilities").cloned().unwrap_or_else(|| json!({})),
                "serverInfo": server_info,
            });
            if let Some(instructions) = discovered.get("instructions") {
                result["instructions"] = instructions.clone();
            }
            shared.initialized_locally.store(true, Ordering::Release);
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
            shared.deliver(answer.to_string().as_bytes()).await;
            None
        }
    }
}

/// Ask `server/discover` as revision 2026-07-28 and read the era from the answer (the rules
/// of that revision's backward compatibility section: a recognized modern error means a
/// modern server; any other refusal a legacy one).
async fn probe(shared: &Arc<ClientShared>, config: &Stateless) -> Era {
    let key = "\"jsonrpc-duplex-discover\"";
    let mut message = json!({"jsonrpc": "2.0", "id": "jsonrpc-duplex-discover", "method": "server/discover"});
    add_meta(&mut message, config);
    let posted = Posted {
        request: None,
        method: Some("server/discover".into()),
        name: None,
        params: Vec::new(),
        retry_mismatch: false,
    };
    let request = shared.post_request_as(Bytes::from(message.to_string()), &posted, Some(config));
    let response = match tokio::time::timeout(PROBE_TIMEOUT, shared.http.request(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return Era::Legacy(format!("server/discover failed: {e}")),
        Err(_) => return Era::Legacy(format!("no answer to server/discover within {PROBE_TIMEOUT:?}")),
    };
    let status = response.status();
    let sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
    let read = tokio::time::timeout(PROBE_TIMEOUT, read_limited(response.into_body(), shared.limit)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(why)) => return Era::Legacy(why),
        Err(_) => return Era::Legacy("the answer to server/discover did not end".into()),
    };
    let answer = answer_in(&bytes, sse, shared.limit, key);
    let speaks = |versions: Option<&Value>| {
        let versions: Vec<&str> = versions
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if versions.contains(&config.version.as_str())
            || !versions.iter().any(|v| super::SUPPORTED_VERSIONS.contains(v))
        {
            // Ours, or only revisions we do not speak (the calls' errors will say so).
            None
        } else {
            Some(format!("it supports {versions:?}"))
        }
    };
    if status.is_success()
        && let Some(result) = answer.as_ref().and_then(|a| a.get("result"))
    {
        return match speaks(result.get("supportedVersions")) {
            None => Era::Modern(Some(result.clone())),
            Some(why) => Era::Legacy(why),
        };
    }
    let error = answer.as_ref().and_then(|a| a.get("error"));
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
    match code {
        Some(-32022) => match speaks(error.and_then(|e| e.get("data")).and_then(|d| d.get("supported"))) {
            None => Era::Modern(None),
            Some(why) => Era::Legacy(why),
        },
        Some(-32020 | -32021) => Era::Modern(None),
        Some(-32601) if status == StatusCode::NOT_FOUND => Era::Modern(None),
        _ => Era::Legacy(format!("server/discover got HTTP {status}: {}", String::from_utf8_lossy(&bytes))),
    }
}

/// Revision 2026-07-28: each request its own POST with the per-request `_meta`; a
/// `notifications/cancelled` for one in flight closes its stream instead of being sent.
async fn stateless_worker(shared: Arc<ClientShared>, mut outbound: impl futures::Stream<Item = Vec<u8>> + Unpin) {
    let Some(config) = shared.stateless.get().cloned() else { return };
    while let Some(body) = outbound.next().await {
        let Ok(mut message) = serde_json::from_slice::<Value>(&body) else { continue };
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        let Some(method) = method else {
            // An answer to an input request of a multi round-trip request: the transport
            // carries it in the retry. Else there is nothing to answer in this revision.
            let waiter = message.get("id").and_then(|id| lock(&shared.input_waiters).remove(&id.to_string()));
            match waiter {
                Some(waiter) => {
                    let _ = waiter.send(message);
                }
                None => tracing::warn!("an answer to the server dropped: MCP 2026-07-28 has no server→client requests"),
            }
            continue;
        };
        if method == "notifications/initialized" && shared.initialized_locally.load(Ordering::Acquire) {
            // The revision choice answered `initialize`: there is nothing to tell the server.
            continue;
        }
        if method == "notifications/cancelled"
            && let Some(id) = message.get("params").and_then(|p| p.get("requestId"))
        {
            let key = id.to_string();
            if let Some(stream) = lock(&shared.streams).remove(&key) {
                // Closing the response stream is the cancellation.
                stream.abort();
                lock(&shared.pending).remove(&key);
            }
            continue;
        }
        let request = message.get("id").map(|id| (id.to_string(), id.clone()));
        if request.is_some() {
            add_meta(&mut message, &config);
        }
        let name = match method.as_str() {
            "tools/call" | "prompts/get" => message.get("params").and_then(|p| p.get("name")),
            "resources/read" => message.get("params").and_then(|p| p.get("uri")),
            _ => None,
        }
        .and_then(Value::as_str)
        .map(str::to_owned);
        let params = match (method.as_str(), &name) {
            ("tools/call", Some(tool)) => lock(&shared.tool_headers)
                .get(tool)
                .map(|mirrored| param_headers(mirrored, message.get("params").and_then(|p| p.get("arguments"))))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        if method == "tools/list"
            && let Some((key, _)) = &request
        {
            lock(&shared.tools_lists).insert(key.clone());
        }
        let retry_mismatch = method == "tools/call";
        let posted = Posted { request, method: Some(method), name, params, retry_mismatch };
        let body = Bytes::from(message.to_string());
        let Some((key, _)) = posted.request.clone() else {
            post(&shared, body, &posted, false).await;
            continue;
        };
        lock(&shared.pending).insert(key.clone());
        let task_shared = shared.clone();
        let task_key = key.clone();
        let mut streams = lock(&shared.streams);
        let multi_round = INPUT_METHODS.contains(&posted.method.as_deref().unwrap_or_default());
        let task = tokio::spawn(async move {
            if multi_round {
                multi_round_call(&task_shared, message, posted).await;
            } else {
                post(&task_shared, body, &posted, false).await;
            }
            lock(&task_shared.streams).remove(&task_key);
        });
        streams.insert(key, task.abort_handle());
    }
    for (_, stream) in lock(&shared.streams).drain() {
        stream.abort();
    }
}

/// The requests a 2026-07-28 server may answer with an `InputRequiredResult`.
const INPUT_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];
/// Most `InputRequiredResult`s in a row for one call before it fails.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// A request that may take several round trips (2026-07-28's multi round-trip requests): each
/// `InputRequiredResult` has its `inputRequests` put to the connection as requests of the
/// server (so its handlers of `roots/list`, `sampling/createMessage`, `elicitation/create`
/// answer them as in 2025-11-25), then the request is sent again with a new id, the answers in
/// `inputResponses` and the `requestState` echoed; the final answer goes to the connection
/// under the first id.
async fn multi_round_call(shared: &Arc<ClientShared>, first: Value, posted: Posted) {
    let Some((first_key, first_id)) = posted.request.clone() else { return };
    let mut message = first.clone();
    let mut key = first_key.clone();
    for round in 0..=MAX_INPUT_ROUNDS {
        let (tx, rx) = futures::channel::oneshot::channel();
        lock(&shared.captures).insert(key.clone(), tx);
        // Given up (the call cancelled: this task aborted), nothing of it stays.
        let _forget = Forget(&shared.captures, key.clone());
        lock(&shared.pending).insert(key.clone());
        let this = Posted { request: Some((key.clone(), message["id"].clone())), ..posted.clone() };
        post(shared, Bytes::from(message.to_string()), &this, false).await;
        let answer = match rx.await {
            Ok(answer) => answer,
            Err(_) => {
                lock(&shared.captures).remove(&key);
                lock(&shared.pending).insert(first_key.clone());
                return shared.fail(&first_id, "the MCP server's stream ended before it answered".into()).await;
            }
        };
        let result =
            answer.get("result").filter(|r| r.get("resultType").and_then(Value::as_str) == Some("input_required"));
        let Some(result) = result else {
            let mut answer = answer;
            answer["id"] = first_id.clone();
            return shared.deliver(answer.to_string().as_bytes()).await;
        };
        if round == MAX_INPUT_ROUNDS {
            break;
        }
        let responses = match fulfil(shared, result.get("inputRequests")).await {
            Ok(responses) => responses,
            Err(why) => {
                lock(&shared.pending).insert(first_key.clone());
                return shared.fail(&first_id, why).await;
            }
        };
        // The retry: the first request with a new id, the answers and the server's state.
        let n = shared.next_internal.fetch_add(1, Ordering::Relaxed);
        let state = result.get("requestState").cloned();
        message = first.clone();
        message["id"] = json!(format!("jsonrpc-duplex-retry-{n}"));
        key = message["id"].to_string();
        if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
            if let Some(responses) = responses {
                params.insert("inputResponses".into(), responses);
            }
            if let Some(state) = state {
                params.insert("requestState".into(), state);
            }
        }
    }
    lock(&shared.pending).insert(first_key);
    shared.fail(&first_id, format!("the MCP server asked for input more than {MAX_INPUT_ROUNDS} times in a row")).await;
}

/// Removes a waiter from its map when dropped (the wait is over or given up).
struct Forget<'a, T>(&'a Mutex<std::collections::HashMap<String, T>>, String);

impl<T> Drop for Forget<'_, T> {
    fn drop(&mut self) {
        lock(self.0).remove(&self.1);
    }
}

/// Put an `InputRequests` map to the connection, one server request each, and gather the
/// `InputResponses` (`None` when there was nothing to ask). A request the connection answers
/// with an error fails the call.
async fn fulfil(shared: &Arc<ClientShared>, requests: Option<&Value>) -> Result<Option<Value>, String> {
    let Some(requests) = requests.and_then(Value::as_object) else { return Ok(None) };
    let mut waiting = Vec::new();
    let mut forget = Vec::new();
    for (name, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
        if !matches!(method, "roots/list" | "sampling/createMessage" | "elicitation/create") {
            return Err(format!("the MCP server asked for input by {method:?}, which is not an input request"));
        }
        let id = json!(format!("jsonrpc-duplex-input-{}", shared.next_internal.fetch_add(1, Ordering::Relaxed)));
        let (tx, rx) = futures::channel::oneshot::channel();
        lock(&shared.input_waiters).insert(id.to_string(), tx);
        forget.push(Forget(&shared.input_waiters, id.to_string()));
        let mut asked = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = request.get("params") {
            asked["params"] = params.clone();
        }
        let _ = shared.inbound.clone().send(Frame::Message(BytesMut::from(asked.to_string().as_bytes()))).await;
        waiting.push((name.clone(), method.to_owned(), rx));
    }
    let mut responses = serde_json::Map::new();
    for (name, method, rx) in waiting {
        let answer = rx.await.map_err(|_| format!("the connection did not answer the server's {method}"))?;
        match answer.get("result") {
            Some(result) => {
                responses.insert(name, result.clone());
            }
            None => return Err(format!("answering the MCP server's {method} failed: {}", answer["error"])),
        }
    }
    Ok(Some(Value::Object(responses)))
}

/// The per-request `_meta` of 2026-07-28, each field added unless the request has its own.
fn add_meta(message: &mut Value, config: &Stateless) {
    let Some(object) = message.as_object_mut() else { return };
    let params = object.entry("params").or_insert_with(|| json!({}));
    let Some(params) = params.as_object_mut() else { return };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else { return };
    meta.entry(META_PROTOCOL_VERSION).or_insert_with(|| json!(config.version));
    meta.entry(META_CLIENT_CAPABILITIES).or_insert_with(|| config.capabilities.clone());
    if let Some(info) = &config.client_info {
        meta.entry(META_CLIENT_INFO).or_insert_with(|| info.clone());
    }
}

impl ClientShared {
    /// A POST of `posted`: with 2026-07-28's mirrored headers when the client is stateless.
    fn post_request(&self, body: Bytes, posted: &Posted) -> Request<Full<Bytes>> {
        self.post_request_as(body, posted, self.stateless.get())
    }

    fn post_request_as(&self, body: Bytes, posted: &Posted, stateless: Option<&Stateless>) -> Request<Full<Bytes>> {
        let mut request = self.request(Method::POST, body, None);
        if let Some(config) = stateless {
            let headers = request.headers_mut();
            headers.remove(HEADER_SESSION_ID);
            if let Ok(v) = HeaderValue::from_str(&config.version) {
                headers.insert(HEADER_PROTOCOL_VERSION, v);
            }
            if let Some(v) = posted.method.as_deref().and_then(|m| HeaderValue::from_str(&header_value_for(m)).ok()) {
                headers.insert("mcp-method", v);
            }
            if let Some(v) = posted.name.as_deref().and_then(|n| HeaderValue::from_str(&header_value_for(n)).ok()) {
                headers.insert("mcp-name", v);
            }
            for (name, value) in &posted.params {
                if let (Ok(name), Ok(value)) =
                    (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&header_value_for(value)))
                {
                    headers.insert(name, value);
                }
            }
        }
        request
    }

    fn request(&self, method: Method, body: Bytes, last_event_id: Option<&str>) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method.clone();
        *request.uri_mut() = self.url.clone();
        let headers = request.headers_mut();
        headers.extend(self.headers.clone());
        if method == Method::POST {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        } else if method == Method::GET {
            headers.insert(header::ACCEPT, HeaderValue::from_static("text/event-stream"));
        }
        if let Some(id) = lock(&self.session).as_deref().and_then(|s| HeaderValue::from_str(s).ok()) {
            headers.insert(HEADER_SESSION_ID, id);
        }
        if let Some(v) = lock(&self.version).as_deref().and_then(|s| HeaderValue::from_str(s).ok()) {
            headers.insert(HEADER_PROTOCOL_VERSION, v);
        }
        if let Some(last) = last_event_id.and_then(|s| HeaderValue::from_str(s).ok()) {
            headers.insert("last-event-id", last);
        }
        request
    }

    /// Hand one inbound message to the connection (and learn the revision from the
    /// `initialize` answer).
    async fn deliver(&self, data: &[u8]) {
        if let Ok(message) = serde_json::from_slice::<Value>(data)
            && message.get("method").is_none()
            && let Some(id) = message.get("id")
        {
            let key = id.to_string();
            lock(&self.pending).remove(&key);
            if lock(&self.tools_lists).remove(&key) {
                let mut message = message;
                self.learn_tools(&mut message);
                return self.deliver_unchecked(message.to_string().as_bytes()).await;
            }
            // A round of a multi round-trip request: the transport reads it.
            let capture = lock(&self.captures).remove(&key);
            if let Some(capture) = capture {
                let _ = capture.send(message);
                return;
            }
        }
        if let Ok(message) = serde_json::from_slice::<Value>(data)
            && let Some(version) = message.get("result").and_then(|r| r.get("protocolVersion")).and_then(Value::as_str)
        {
            let is_init = lock(&self.initialize)
                .as_ref()
                .is_some_and(|(_, key)| message.get("id").is_some_and(|id| same_id(id, key)));
            if is_init {
                *lock(&self.version) = Some(version.to_owned());
            }
        }
        self.deliver_unchecked(data).await;
    }

    async fn deliver_unchecked(&self, data: &[u8]) {
        let _ = self.inbound.clone().send(Frame::Message(BytesMut::from(data))).await;
    }

    /// A `tools/list` answer (2026-07-28): each tool's `x-mcp-header`s learnt for its calls;
    /// a tool whose annotations break the revision's rules is left out of the answer.
    fn learn_tools(&self, message: &mut Value) {
        let Some(tools) = message.get_mut("result").and_then(|r| r.get_mut("tools")).and_then(Value::as_array_mut)
        else {
            return;
        };
        let mut learnt = lock(&self.tool_headers);
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            match mirrored_params(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(mirrored) => {
                    learnt.insert(name.to_owned(), mirrored);
                    true
                }
                Err(why) => {
                    tracing::warn!(tool = %name, %why, "an MCP tool left out of tools/list: its x-mcp-header is invalid");
                    learnt.remove(name);
                    false
                }
            }
        });
    }

    /// Answer `id` (JSON value) with an error of ours: the request cannot be answered.
    async fn fail(&self, id: &Value, message: String) {
        if !lock(&self.pending).contains(&id.to_string()) {
            // Answered on another stream meanwhile.
            return;
        }
        tracing::warn!(%id, %message, "MCP HTTP request failed");
        let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}});
        self.deliver(error.to_string().as_bytes()).await;
    }

    fn remember_session(&self, headers: &HeaderMap) {
        if let Some(id) = headers.get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()) {
            *lock(&self.session) = Some(id.to_owned());
        }
    }
}

/// POST one message and hand what comes back to the connection. Returns once the server has
/// taken it (for a request: once the answer's headers are in; the body is read by a task).
fn post<'a>(
    shared: &'a Arc<ClientShared>,
    body: Bytes,
    posted: &'a Posted,
    may_reinit: bool,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
    Box::pin(async move {
        let had_session = lock(&shared.session).is_some();
        let response = match shared.http.request(shared.post_request(body.clone(), posted)).await {
            Ok(response) => response,
            Err(e) => {
                if let Some((_, id)) = &posted.request {
                    shared.fail(id, format!("the POST to the MCP server failed: {e}")).await;
                }
                return;
            }
        };
        let status = response.status();
        let initialize = posted.method.as_deref() == Some("initialize");
        if status == StatusCode::NOT_FOUND && had_session && !initialize && may_reinit {
            tracing::info!("the MCP session ended (404): initializing again");
            if reinitialize(shared).await {
                post(shared, body, posted, false).await;
            } else if let Some((_, id)) = &posted.request {
                shared.fail(id, "the MCP session ended (404) and initializing again failed".into()).await;
            }
            return;
        }
        if !status.is_success() && shared.stateless.get().is_some() {
            // 2026-07-28 refuses with a JSON-RPC error for the request: that is its answer.
            let text = read_text(response.into_body(), REFUSAL_LIMIT).await;
            let Some((key, id)) = &posted.request else {
                return tracing::warn!(%status, %text, "the MCP server refused a notification");
            };
            let answer = serde_json::from_str::<Value>(&text)
                .ok()
                .filter(|m| m.get("error").is_some() && m.get("id").is_some_and(|i| i.is_null() || same_id(i, key)));
            let mismatch = answer.as_ref().and_then(|a| a["error"]["code"].as_i64()) == Some(-32020);
            if mismatch && posted.retry_mismatch {
                // The tool's `inputSchema` may have changed: list the tools again, then send the
                // request once more with the headers they say (2026-07-28's client behaviour).
                tracing::info!(tool = ?posted.name, "HeaderMismatch: listing the tools again and retrying once");
                let retry = relearn_tools(shared, &body, posted).await;
                return post(shared, body, &retry, false).await;
            }
            match answer {
                Some(mut answer) => {
                    answer["id"] = id.clone();
                    shared.deliver(answer.to_string().as_bytes()).await;
                }
                None => shared.fail(id, format!("the MCP server refused the request: HTTP {status}: {text}")).await,
            }
            return;
        }
        if !status.is_success() {
            let text = read_text(response.into_body(), 1024).await;
            match &posted.request {
                Some((_, id)) => {
                    shared.fail(id, format!("the MCP server refused the request: HTTP {status}: {text}")).await
                }
                None => tracing::warn!(%status, %text, "the MCP server refused a notification or answer"),
            }
            return;
        }
        if initialize {
            shared.remember_session(response.headers());
        }
        let Some((key, id)) = posted.request.clone() else {
            // Nothing comes back for a notification or an answer (a body, if any, is not a message).
            return;
        };
        let sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let shared = shared.clone();
        if sse {
            let stateless = shared.stateless.get().is_some();
            let read = async move {
                let answered = read_stream(&shared, response.into_body(), Some(&key), None).await;
                if !answered {
                    shared.fail(&id, "the MCP server's stream ended before it answered".into()).await;
                }
            };
            if stateless {
                // Read here: aborting this request's task closes its stream (its cancellation).
                read.await;
            } else {
                tokio::spawn(read);
            }
        } else {
            match read_limited(response.into_body(), shared.limit).await {
                Ok(bytes) => {
                    shared.deliver(&bytes).await;
                    shared.fail(&id, "the MCP server's JSON answer was not the answer to this request".into()).await;
                }
                Err(why) => shared.fail(&id, why).await,
            }
        }
    })
}

/// Most pages of `tools/list` read after a `HeaderMismatch` (each `nextCursor` followed).
const MAX_TOOL_PAGES: usize = 16;

/// After a `HeaderMismatch` of a `tools/call`: ask `tools/list` (every page, up to
/// [`MAX_TOOL_PAGES`]) for the transport alone, learn the tools' `x-mcp-header` annotations,
/// and give back the call with its `Mcp-Param-*` headers made again (and no further retry).
async fn relearn_tools(shared: &Arc<ClientShared>, body: &Bytes, posted: &Posted) -> Posted {
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_TOOL_PAGES {
        let Some(config) = shared.stateless.get() else { break };
        let id = format!("jsonrpc-duplex-tools-{}", shared.next_internal.fetch_add(1, Ordering::Relaxed));
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
        if let Some(cursor) = cursor.take() {
            message["params"]["cursor"] = cursor;
        }
        add_meta(&mut message, config);
        let list = Posted {
            request: None,
            method: Some("tools/list".into()),
            name: None,
            params: Vec::new(),
            retry_mismatch: false,
        };
        let request = shared.post_request(Bytes::from(message.to_string()), &list);
        let Some(mut answer) = own_answer(shared, request, &json!(id).to_string()).await else { break };
        cursor = answer.get("result").and_then(|r| r.get("nextCursor")).filter(|c| !c.is_null()).cloned();
        shared.learn_tools(&mut answer);
        if cursor.is_none() {
            break;
        }
    }
    let message: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let arguments = message.get("params").and_then(|p| p.get("arguments"));
    let params = posted
        .name
        .as_deref()
        .and_then(|tool| lock(&shared.tool_headers).get(tool).map(|mirrored| param_headers(mirrored, arguments)))
        .unwrap_or_default();
    Posted { params, retry_mismatch: false, ..posted.clone() }
}

/// Send a request of the transport's own and read its answer (JSON, or the event of an SSE
/// stream answering `key`), within [`PROBE_TIMEOUT`]; `None` if there is none.
async fn own_answer(shared: &Arc<ClientShared>, request: Request<Full<Bytes>>, key: &str) -> Option<Value> {
    let response = tokio::time::timeout(PROBE_TIMEOUT, shared.http.request(request)).await.ok()?.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
    let bytes =
        tokio::time::timeout(PROBE_TIMEOUT, read_limited(response.into_body(), shared.limit)).await.ok()?.ok()?;
    answer_in(&bytes, sse, shared.limit, key)
}

/// The answer to `key` in a whole response body: the body itself when it is JSON, else the
/// first event of the SSE stream that answers `key` (no `method`, the same id).
fn answer_in(bytes: &[u8], sse: bool, limit: usize, key: &str) -> Option<Value> {
    if !sse {
        return serde_json::from_slice(bytes).ok();
    }
    let mut parser = SseParser::new(limit);
    let mut events = Vec::new();
    let _ = parser.feed(bytes, &mut events);
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .find(|m| m.get("method").is_none() && m.get("id").is_some_and(|id| same_id(id, key)))
}

/// After a `404`: the saved `initialize` again (with an id of ours, its answer kept from the
/// connection), then `notifications/initialized`. `false` if it did not work.
async fn reinitialize(shared: &Arc<ClientShared>) -> bool {
    let Some((mut message, _)) = lock(&shared.initialize).clone() else { return false };
    *lock(&shared.session) = None;
    let n = shared.reinit.fetch_add(1, Ordering::Relaxed);
    let id = format!("jsonrpc-duplex-reinitialize-{n}");
    message["id"] = json!(id);
    let request = shared.request(Method::POST, Bytes::from(message.to_string()), None);
    let Ok(response) = shared.http.request(request).await else { return false };
    if !response.status().is_success() {
        return false;
    }
    shared.remember_session(response.headers());
    // The answer is ours: read it (JSON or SSE) to its end and drop it.
    let _ = tokio::time::timeout(DELETE_TIMEOUT * 6, read_limited(response.into_body(), shared.limit)).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let request = shared.request(Method::POST, Bytes::from(initialized.to_string()), None);
    matches!(shared.http.request(request).await, Ok(r) if r.status().is_success())
}

async fn read_limited(body: Incoming, limit: usize) -> Result<Bytes, String> {
    let mut body = std::pin::pin!(body);
    let mut out = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the MCP server's answer failed: {e}"))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(format!("the MCP server's answer is over the limit of {limit} bytes"));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out.freeze())
}

async fn read_text(body: Incoming, limit: usize) -> String {
    let mut body = std::pin::pin!(body);
    let mut out = Vec::new();
    while out.len() < limit {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data[..data.len().min(limit - out.len())]);
                }
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Read an SSE stream, and its resumptions, handing each event's message to the connection.
/// With `want` (a request's id text): `true` once its answer came. Without: the GET stream,
/// read until it ends for good.
async fn read_stream(shared: &Arc<ClientShared>, first: Incoming, want: Option<&str>, last: Option<String>) -> bool {
    let mut body = Some(first);
    let mut last_id = last;
    let mut retry = DEFAULT_RECONNECT_DELAY;
    let mut failures = 0;
    loop {
        if let Some(current) = body.take() {
            let mut parser = SseParser::new(shared.limit);
            let mut events = Vec::new();
            let mut current = std::pin::pin!(current);
            let mut progressed = false;
            while let Some(Ok(frame)) = current.frame().await {
                let Ok(data) = frame.into_data() else { continue };
                if let Err(e) = parser.feed(&data, &mut events) {
                    tracing::warn!(error = %e, "the MCP server's SSE stream is broken");
                    break;
                }
                for event in events.drain(..) {
                    progressed = true;
                    if let Some(id) = event.id {
                        last_id = Some(id);
                    }
                    if let Some(ms) = event.retry {
                        retry = Duration::from_millis(ms);
                    }
                    if event.data.is_empty() {
                        continue;
                    }
                    shared.deliver(event.data.as_bytes()).await;
                    if let Some(want) = want {
                        let answered = serde_json::from_str::<Value>(&event.data).is_ok_and(|m| {
                            m.get("method").is_none() && m.get("id").is_some_and(|id| same_id(id, want))
                        });
                        if answered {
                            return true;
                        }
                    }
                }
            }
            if progressed {
                failures = 0;
            }
        }
        // The stream ended early: resume it as the server said, if it gave us a place (unless
        // the answer came on another stream).
        if want.is_some_and(|want| !lock(&shared.pending).contains(want)) {
            return true;
        }
        if shared.stateless.get().is_some() {
            // 2026-07-28: a broken stream loses its request; there is no resumption.
            return false;
        }
        failures += 1;
        let Some(resume_at) = last_id.clone().or_else(|| want.is_none().then(String::new)) else { return false };
        if failures > shared.max_reconnects {
            return false;
        }
        tokio::time::sleep(retry).await;
        let resume = (!resume_at.is_empty()).then_some(resume_at.as_str());
        let request = shared.request(Method::GET, Bytes::new(), resume);
        match shared.http.request(request).await {
            Ok(response) if response.status() == StatusCode::OK => body = Some(response.into_body()),
            Ok(response) if want.is_none() => {
                tracing::debug!(status = %response.status(), "no GET stream from the MCP server");
                return false;
            }
            Ok(response) => tracing::debug!(status = %response.status(), "resuming the MCP stream failed"),
            Err(e) => tracing::debug!(error = %e, "resuming the MCP stream failed"),
        }
    }
}

/// The GET stream: opened once the session is initialized; none if the server offers none.
async fn standalone_stream(shared: Arc<ClientShared>, opened: futures::channel::oneshot::Sender<()>) {
    let request = shared.request(Method::GET, Bytes::new(), None);
    let response = shared.http.request(request).await;
    let _ = opened.send(());
    let response = match response {
        Ok(response) => response,
        Err(e) => return tracing::debug!(error = %e, "the MCP GET stream could not be opened"),
    };
    if response.status() != StatusCode::OK {
        return tracing::debug!(status = %response.status(), "the MCP server offers no GET stream");
    }
    read_stream(&shared, response.into_body(), None, None).await;
}
