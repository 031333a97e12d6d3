//! MCP Streamable HTTP, revision 2026-07-28 (stateless), beside 2025-11-25 on one server, and
//! what a handler sends outside of a request, routed to the newest stream (2025-11-25). Every
//! peer here is raw HTTP/1.1 on bytes (the server's client is `mcp_http::Raw`; the client's
//! server is a TCP listener read and written by hand), on loopback, every wait bounded:
//!
//! - a request with the version in `_meta` and the mirrored headers is answered without a
//!   session: JSON when the answer is the first message, else an SSE stream without event
//!   ids; `resultType` added; `server/discover` like any request;
//! - the refusals: `-32020` (a header missing or not the body's), `-32022` (the versions we
//!   speak listed), `-32602` (`_meta` incomplete), `404`/`-32601`, `405` for GET and DELETE;
//! - closing the response stream before the answer cancels the handler;
//! - a handler's request to the client fails at once, saying why;
//! - a 2025-11-25 session on the same server at the same time;
//! - our client (`McpHttpClient::stateless`): the exact headers and `_meta`, an error body
//!   as the call's error, and a call given up closes its stream;
//! - `McpHttpClient::auto_revision`: against a dual-era server it speaks 2026-07-28 (the
//!   `initialize` answered from `server/discover`, no session), against one serving only
//!   2025-11-25 it falls back to `initialize` and a session;
//! - multi round-trip requests (2026-07-28): an `InputRequiredResult`'s input requests go to
//!   the client connection's own handlers, and the call is retried with their answers and the
//!   server's `requestState`; a handler's error fails the call;
//! - `x-mcp-header` (2026-07-28): the client learns the annotations from `tools/list` (a tool
//!   whose annotation breaks the rules is left out) and mirrors those arguments into
//!   `Mcp-Param-*` headers of `tools/call`, Base64 where not plain, none for `null`;
//! - routing (2025-11-25): a message no request owns goes to the newest open stream, the GET
//!   stream or a POST's stream, whichever was opened last;
//! - `bind`'s graceful shutdown: GET streams end, requests in progress finish, then sessions.
#![cfg(feature = "mcp-http")]

use crate::mcp_http::{JSON_HEADERS, Raw, initialize, with_session};
use crate::support;

use std::sync::Arc;

use jsonrpc_duplex::transport::mcp_http::{BoundMcpServer, McpHttpClient, McpHttpServer};
use jsonrpc_duplex::{Connection, ErrorObject, Profile, Router};
use serde_json::{Value, json};
use support::time::{eventually, within};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};

const V: &str = "2026-07-28";

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}})
}

fn request(id: u64, method: &str, mut params: Value) -> Vec<u8> {
    let mut all = meta();
    if let Some(own) = params["_meta"].as_object() {
        all.as_object_mut().unwrap().extend(own.clone());
    }
    params["_meta"] = all;
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes()
}

fn modern<'a>(method: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("MCP-Protocol-Version", V));
    headers.push(("Mcp-Method", method));
    headers.extend_from_slice(extra);
    headers
}

/// What the handlers tell the test.
#[derive(Clone)]
struct Probe {
    /// A `hang` handler was dropped without finishing (cancelled).
    cancelled: mpsc::UnboundedSender<()>,
    /// Releases `wait`s, one a permit.
    release: Arc<Semaphore>,
    /// A permit each time `hush` starts.
    started: Arc<Semaphore>,
}

struct OnDrop(Option<mpsc::UnboundedSender<()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

fn router(probe: Probe) -> Router {
    let hang_probe = probe.clone();
    let hush_probe = probe.clone();
    let wait_probe = probe.clone();
    Router::new()
        .method("initialize", |_: Value, _| async {
            Ok::<_, ErrorObject>(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "t", "version": "0"}}))
        })
        .notification("notifications/initialized", |_: Value, _| async {})
        .method("server/discover", |_: Value, _| async {
            Ok::<_, ErrorObject>(json!({"resultType": "complete", "supportedVersions": [V, "2025-11-25"], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "t-modern", "version": "1"}}, "instructions": "be kind"}))
        })
        // A multi round-trip request: first an InputRequiredResult asking the client for an
        // elicitation and its roots, then (given them and the state back) what it was given.
        .method("prompts/get", |params: Value, _| async move {
            let Some(responses) = params.get("inputResponses") else {
                return Ok::<_, ErrorObject>(json!({"resultType": "input_required", "requestState": "round-1",
                    "inputRequests": {
                        "who": {"method": "elicitation/create", "params": {"mode": "form", "message": "name?",
                            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
                        "where": {"method": "roots/list"}}}));
            };
            Ok(json!({"messages": [], "given": {"inputResponses": responses, "requestState": params["requestState"],
                "id_was_new": true}}))
        })
        // What the request's `_meta` said (the revision it came in).
        .method("meta", |params: Value, _| async move { Ok::<_, ErrorObject>(json!({"meta": params.get("_meta")})) })
        .method("tools/call", |params: Value, _| async move {
            Ok::<_, ErrorObject>(json!({"content": [{"type": "text", "text": params["name"]}]}))
        })
        // Reports progress, then waits until cancelled.
        .method("hang", move |params: Value, ctx: jsonrpc_duplex::RequestContext| {
            // Dropped only if the handler is (it never finishes).
            let guard = OnDrop(Some(hang_probe.cancelled.clone()));
            async move {
                let _guard = guard;
                let token = params["_meta"]["progressToken"].clone();
                ctx.peer()
                    .notify("notifications/progress", json!({"progressToken": token, "progress": 1}))
                    .await
                    .map_err(ErrorObject::internal_error)?;
                std::future::pending::<()>().await;
                Ok::<_, ErrorObject>(json!({}))
            }
        })
        // Waits until cancelled, sending nothing: its answer's headers never go.
        .method("hush", move |_: Value, _| {
            let guard = OnDrop(Some(hush_probe.cancelled.clone()));
            hush_probe.started.add_permits(1);
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok::<_, ErrorObject>(json!({}))
            }
        })
        .method("ask", |_: Value, ctx: jsonrpc_duplex::RequestContext| async move {
            let asked: Result<Value, _> = ctx.peer().request("roots/list", json!({})).await;
            Ok::<_, ErrorObject>(json!({"asked": asked.map_err(|e| e.to_string()).unwrap_err()}))
        })
        .method("wait", move |_: Value, _| {
            let release = wait_probe.release.clone();
            async move {
                release.acquire().await.map_err(ErrorObject::internal_error)?.forget();
                Ok::<_, ErrorObject>(json!({"waited": true}))
            }
        })
        // A message no request owns: sent from a notification's handler.
        .notification("poke", |_: Value, ctx: jsonrpc_duplex::NotificationContext| async move {
            let _ = ctx.peer().notify("notifications/message", json!({"level": "info", "data": "poked"})).await;
        })
}

async fn serve(
    configure: impl FnOnce(McpHttpServer) -> McpHttpServer,
) -> (BoundMcpServer, mpsc::UnboundedReceiver<()>, Arc<Semaphore>, Arc<Semaphore>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let probe = Probe { cancelled: tx, release: Arc::new(Semaphore::new(0)), started: Arc::new(Semaphore::new(0)) };
    let release = probe.release.clone();
    let started = probe.started.clone();
    let server =
        McpHttpServer::new(move |_| Connection::builder().profile(Profile::mcp()).serve(router(probe.clone())));
    let bound = within(configure(server).bind("127.0.0.1:0")).await.expect("bind");
    (bound, rx, release, started)
}

async fn json_answer(raw: &mut Raw) -> (u16, Option<String>, Option<String>, Value) {
    let head = raw.head().await;
    let body = raw.body().await;
    let value = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)));
    (
        head.status,
        head.header("content-type").map(str::to_owned),
        head.header("mcp-session-id").map(str::to_owned),
        value,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_request_is_answered_as_json_without_a_session() {
    let (bound, _cancelled, _, _) = serve(|s| s).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send(
        "POST",
        &modern("tools/call", &[("Mcp-Name", "echo")]),
        &request(7, "tools/call", json!({"name": "echo"})),
    )
    .await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("application/json"));
    assert_eq!(head.header("mcp-session-id"), None, "no session in 2026-07-28");
    let body = raw.body().await;
    let expected = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "echo"}], "resultType": "complete"}});
    assert_eq!(String::from_utf8(body).unwrap(), expected.to_string(), "byte for byte");
    assert_eq!(bound.server().session_count(), 0);

    // server/discover, on the same keep-alive connection; an Mcp-Session-Id is ignored.
    raw.send(
        "POST",
        &modern("server/discover", &[("Mcp-Session-Id", "no-such-session")]),
        &request(8, "server/discover", json!({})),
    )
    .await;
    let (status, _, session, answer) = json_answer(&mut raw).await;
    assert_eq!((status, session), (200, None));
    assert_eq!(answer["result"]["supportedVersions"], json!([V, "2025-11-25"]));

    // A name that is not plain ASCII comes Base64 in its sentinel.
    raw.send(
        "POST",
        &modern("tools/call", &[("Mcp-Name", "=?base64?SGVsbG8sIOS4lueVjA==?=")]),
        &request(9, "tools/call", json!({"name": "Hello, 世界"})),
    )
    .await;
    let (status, _, _, answer) = json_answer(&mut raw).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "Hello, 世界");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_refusals_say_what_is_wrong() {
    let (bound, _cancelled, _, _) = serve(|s| s).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let call = request(1, "tools/call", json!({"name": "echo"}));
    // (headers, body, status, code, what the message says)
    type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<u8>, u16, i64, &'a str);
    let cases: Vec<Case> = vec![
        (modern("tools/call", &[]), call.clone(), 400, -32020, "no Mcp-Name"),
        (modern("tools/call", &[("Mcp-Name", "other")]), call.clone(), 400, -32020, "\"other\" but the body names \"echo\""),
        (modern("tools/list", &[("Mcp-Name", "echo")]), call.clone(), 400, -32020, "Mcp-Method \"tools/list\""),
        (
            {
                let mut h = JSON_HEADERS.to_vec();
                h.extend([("MCP-Protocol-Version", V), ("Mcp-Name", "echo")]);
                h
            },
            call.clone(),
            400,
            -32020,
            "no Mcp-Method",
        ),
        (
            modern("tools/list", &[]),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": V}}})
                .to_string()
                .into_bytes(),
            400,
            -32602,
            "clientCapabilities",
        ),
        (modern("nope", &[]), request(1, "nope", json!({})), 404, -32601, ""),
    ];
    for (headers, body, status, code, says) in cases {
        raw.send("POST", &headers, &body).await;
        let (got, _, _, answer) = json_answer(&mut raw).await;
        assert_eq!((got, answer["error"]["code"].as_i64()), (status, Some(code)), "{answer}");
        assert_eq!(answer["id"], 1, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(says), "{answer}");
    }

    // A version we do not speak: the ones we do, listed.
    let mut headers = modern("tools/list", &[]);
    headers.retain(|(n, _)| *n != "MCP-Protocol-Version");
    headers.push(("MCP-Protocol-Version", "2099-01-01"));
    raw.send("POST", &headers, &request(2, "tools/list", json!({}))).await;
    let (status, _, _, answer) = json_answer(&mut raw).await;
    assert_eq!((status, answer["error"]["code"].as_i64()), (400, Some(-32022)), "{answer}");
    assert_eq!(answer["error"]["data"]["requested"], "2099-01-01");
    let supported = answer["error"]["data"]["supported"].as_array().unwrap();
    assert!(supported.contains(&json!(V)) && supported.contains(&json!("2025-11-25")), "{answer}");

    // No GET stream and no DELETE in this revision.
    for method in ["GET", "DELETE"] {
        raw.send(method, &[("Accept", "text/event-stream"), ("MCP-Protocol-Version", V)], b"").await;
        let head = raw.head().await;
        let _ = raw.body().await;
        assert_eq!((head.status, head.header("allow")), (405, Some("POST")), "{method}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_response_stream_cancels_the_request() {
    let (bound, mut cancelled, _, _) = serve(|s| s.max_sessions(1)).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send("POST", &modern("hang", &[]), &request(3, "hang", json!({"_meta": {"progressToken": "p"}}))).await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"), "a message before the answer: a stream");
    assert_eq!(head.header("x-accel-buffering"), Some("no"));
    let mut pending = String::new();
    let events = raw.events(&mut pending, |_| true).await;
    assert_eq!(events.len(), 1);
    let (id, data) = &events[0];
    assert_eq!(id, "", "no event ids in 2026-07-28 (no resumption)");
    assert_eq!(
        data,
        &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1, "progressToken": "p"}})
            .to_string()
    );
    assert!(cancelled.try_recv().is_err(), "still running");
    drop(raw);
    within(cancelled.recv()).await.expect("the handler was cancelled when its stream closed");
    // Its slot is given back: the one request the bound allows fits again.
    let addr = bound.local_addr();
    let mut raw = Raw::connect(addr).await;
    eventually("the cancelled request's slot came back", || bound.server().stateless_count() == 0).await;
    raw.send("POST", &modern("server/discover", &[]), &request(4, "server/discover", json!({}))).await;
    let (status, ..) = json_answer(&mut raw).await;
    assert_eq!(status, 200, "the one request the bound allows fits again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_before_the_answers_headers_cancels_too() {
    let (bound, mut cancelled, _, started) = serve(|s| s).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send("POST", &modern("hush", &[]), &request(3, "hush", json!({}))).await;
    // Nothing comes (the server waits for the first message to choose JSON or a stream); once
    // the handler runs, the client goes away.
    within(started.acquire()).await.expect("hush started").forget();
    assert!(cancelled.try_recv().is_err(), "still running");
    drop(raw);
    within(cancelled.recv()).await.expect("the handler was cancelled when its exchange went away");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_request_to_the_client_fails_at_once_and_a_session_works_beside() {
    let (bound, _cancelled, _, _) = serve(|s| s).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send("POST", &modern("ask", &[]), &request(5, "ask", json!({}))).await;
    let (status, _, _, answer) = json_answer(&mut raw).await;
    assert_eq!(status, 200);
    assert!(answer["result"]["asked"].as_str().unwrap().contains("not possible in MCP 2026-07-28"), "{answer}");

    // A 2025-11-25 session on the same server, and a stateless request while it is open.
    let mut legacy = Raw::connect(bound.local_addr()).await;
    let session = initialize(&mut legacy).await;
    assert_eq!(bound.server().session_count(), 1);
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "legacy"}}).to_string();
    legacy.send("POST", &with_session(&session, &[("MCP-Protocol-Version", "2025-11-25")]), echo.as_bytes()).await;
    let head = legacy.head().await;
    assert_eq!((head.status, head.header("content-type")), (200, Some("text/event-stream")));
    let mut pending = String::new();
    let events = legacy.events(&mut pending, |d| d.contains("result")).await;
    let answer: Value = serde_json::from_str(&events.last().unwrap().1).unwrap();
    assert_eq!(
        answer["result"],
        json!({"content": [{"type": "text", "text": "legacy"}]}),
        "no resultType in 2025-11-25"
    );
    assert!(!events.last().unwrap().0.is_empty(), "2025-11-25 events have ids");
    raw.send(
        "POST",
        &modern("tools/call", &[("Mcp-Name", "modern")]),
        &request(6, "tools/call", json!({"name": "modern"})),
    )
    .await;
    let (status, _, _, answer) = json_answer(&mut raw).await;
    assert_eq!((status, &answer["result"]["resultType"]), (200, &json!("complete")));
}

/// One request read by hand: its head lines (lowercased names) and body.
async fn read_request(conn: &mut BufReader<tokio::net::TcpStream>) -> (Vec<(String, String)>, Value) {
    let mut headers = Vec::new();
    let mut line = String::new();
    within(conn.read_line(&mut line)).await.expect("request line");
    assert!(line.starts_with("POST /mcp HTTP/1.1"), "{line:?}");
    loop {
        let mut line = String::new();
        within(conn.read_line(&mut line)).await.expect("header");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').unwrap();
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers.iter().find(|(n, _)| n == "content-length").unwrap().1.parse().unwrap();
    let mut body = vec![0; len];
    within(conn.read_exact(&mut body)).await.expect("body");
    (headers, serde_json::from_slice(&body).unwrap())
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_client_sends_the_revisions_headers_and_meta_and_cancels_by_closing() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let conn = McpHttpClient::new(&url)
        .unwrap()
        .client_capabilities(json!({"sampling": {}}))
        .client_info("raw-test", "1.0")
        .connect(Connection::builder().profile(Profile::mcp()));
    let handle = conn.handle();
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.request::<Value>("tools/call", json!({"name": "Hello, 世界"})).await }
    });
    let (socket, _) = within(listener.accept()).await.unwrap();
    let mut socket = BufReader::new(socket);
    let (headers, body) = read_request(&mut socket).await;
    assert_eq!(header(&headers, "mcp-protocol-version"), Some(V));
    assert_eq!(header(&headers, "mcp-method"), Some("tools/call"));
    assert_eq!(header(&headers, "mcp-name"), Some("=?base64?SGVsbG8sIOS4lueVjA==?="));
    assert_eq!(header(&headers, "mcp-session-id"), None);
    assert_eq!(header(&headers, "accept"), Some("application/json, text/event-stream"));
    assert_eq!(
        body["params"]["_meta"],
        json!({"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
               "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1.0"}})
    );
    // Refused with a JSON-RPC error for the request: that is the call's error. (A -32020
    // would be followed by a tools/list and a retry: mcp_http_modern.rs.)
    let error =
        json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32602, "message": "Invalid params: test"}})
            .to_string();
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{error}",
        error.len()
    );
    socket.get_mut().write_all(response.as_bytes()).await.unwrap();
    let failed = within(call).await.unwrap().expect_err("refused");
    assert!(failed.to_string().contains("Invalid params: test"), "{failed}");

    // A call given up: its stream closes (the server sees EOF), no cancellation POST.
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.request::<Value>("tools/list", json!({})).await }
    });
    let (headers, body) = read_request(&mut socket).await;
    assert_eq!(header(&headers, "mcp-method"), Some("tools/list"));
    assert_eq!(header(&headers, "mcp-name"), None);
    let progress =
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}})
            .to_string();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    let event = format!("data: {progress}\n\n");
    let chunk = format!("{head}{:x}\r\n{event}\r\n", event.len());
    socket.get_mut().write_all(chunk.as_bytes()).await.unwrap();
    assert!(body["id"].is_number());
    call.abort();
    let mut rest = Vec::new();
    within(socket.read_to_end(&mut rest)).await.expect("the client closed the stream");
    assert!(!String::from_utf8_lossy(&rest).contains("notifications/cancelled"), "closing is the cancellation");
    drop(conn);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_no_request_owns_goes_to_the_newest_open_stream() {
    let (bound, _cancelled, release, _) = serve(|s| s).await;
    let addr = bound.local_addr();
    let mut control = Raw::connect(addr).await;
    let session = initialize(&mut control).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    control.send("POST", &with_session(&session, &[]), initialized.as_bytes()).await;
    assert_eq!(control.head().await.status, 202);
    let poke = json!({"jsonrpc": "2.0", "method": "poke"}).to_string();

    // 1. A POST's stream open, then the GET stream: the GET stream is newer.
    let mut post = Raw::connect(addr).await;
    let wait = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "wait"}).to_string();
    post.send("POST", &with_session(&session, &[]), wait(10).as_bytes()).await;
    assert_eq!(post.head().await.status, 200);
    let mut post_pending = String::new();
    let primed = post.events(&mut post_pending, |_| true).await;
    assert_eq!(primed[0].1, "", "the priming event");
    let mut get = Raw::connect(addr).await;
    get.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)], b"").await;
    assert_eq!(get.head().await.status, 200);
    let mut get_pending = String::new();
    let _priming = get.events(&mut get_pending, |_| true).await;
    control.send("POST", &with_session(&session, &[]), poke.as_bytes()).await;
    assert_eq!(control.head().await.status, 202);
    let on_get = get.events(&mut get_pending, |_| true).await;
    assert!(on_get[0].1.contains("poked"), "{on_get:?}");

    // 2. Then a POST's stream opened after the GET stream: it is the newest.
    let mut later = Raw::connect(addr).await;
    later.send("POST", &with_session(&session, &[]), wait(11).as_bytes()).await;
    assert_eq!(later.head().await.status, 200);
    let mut later_pending = String::new();
    let _primed = later.events(&mut later_pending, |_| true).await;
    control.send("POST", &with_session(&session, &[]), poke.as_bytes()).await;
    assert_eq!(control.head().await.status, 202);
    let on_later = later.events(&mut later_pending, |_| true).await;
    assert!(on_later[0].1.contains("poked"), "{on_later:?}");

    // Both waits answered on their own streams; nothing else went to the first POST.
    release.add_permits(2);
    let rest = later.events(&mut later_pending, |d| d.contains("waited")).await;
    assert!(rest.last().unwrap().1.contains(r#""id":11"#), "{rest:?}");
    let first = post.events(&mut post_pending, |d| d.contains("waited")).await;
    assert_eq!(first.len(), 1, "only its answer: {first:?}");
    assert!(first[0].1.contains(r#""id":10"#));
    eventually("both streams done", || bound.server().backlog_bytes() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_shutdown_ends_get_streams_and_lets_requests_finish() {
    let (bound, _cancelled, release, _) = serve(|s| s).await;
    let addr = bound.local_addr();
    let mut control = Raw::connect(addr).await;
    let session = initialize(&mut control).await;
    let mut get = Raw::connect(addr).await;
    get.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)], b"").await;
    assert_eq!(get.head().await.status, 200);
    let mut get_pending = String::new();
    let _priming = get.events(&mut get_pending, |_| true).await;
    let mut post = Raw::connect(addr).await;
    post.send(
        "POST",
        &with_session(&session, &[]),
        json!({"jsonrpc": "2.0", "id": 1, "method": "wait"}).to_string().as_bytes(),
    )
    .await;
    assert_eq!(post.head().await.status, 200);
    let mut post_pending = String::new();
    let _primed = post.events(&mut post_pending, |_| true).await;
    assert_eq!(bound.http_stats().live, 3);

    let server = bound.server().clone();
    let stopping = tokio::spawn(bound.shutdown_within(std::time::Duration::from_secs(30)));
    // The GET stream ends (it never would by itself); the request in progress goes on.
    assert!(get.events(&mut get_pending, |_| false).await.is_empty(), "the GET stream ended, nothing more on it");
    assert_eq!(server.session_count(), 1, "the session lives while its request runs");
    release.add_permits(1);
    let answer = post.events(&mut post_pending, |d| d.contains("waited")).await;
    assert!(answer.last().unwrap().1.contains(r#""id":1"#), "{answer:?}");
    let report = within(stopping).await.unwrap();
    assert_eq!(report.unfinished, 0, "every request finished within the grace");
    assert_eq!(server.session_count(), 0, "then the sessions end");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the listener is closed");
}

/// A session whose connection does not take its messages (its handler blocks): the POSTs to
/// it stop at the session's inbound budget plus the connection's own read-ahead, their bodies
/// not read (each takes its share before it reads), and all go through once it takes them.
/// Driven through the `tower` service on paused time, so "stopped" is exact (nothing runnable).
#[tokio::test(start_paused = true)]
async fn a_sessions_posted_bytes_stop_at_its_inbound_budget() {
    const SIZE: usize = 256 * 1024;
    const POSTS: usize = 48;
    let (server, gate) = crate::mcp_http::gated_heavy_server(|s| s);
    let session = crate::mcp_http::service_session(&server).await;
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut posts = Vec::new();
    for i in 0..POSTS {
        let data = "x".repeat(SIZE);
        let body =
            json!({"jsonrpc": "2.0", "method": "heavy", "params": {"i": i, "data": data}}).to_string().into_bytes();
        let (server, accepted, request) =
            (server.clone(), accepted.clone(), crate::mcp_http::service_post(Some(&session), body));
        posts.push(tokio::spawn(async move {
            let status = server.handle(request).await.status();
            accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            status
        }));
    }
    support::time::quiescent().await;
    let stuck = accepted.load(std::sync::atomic::Ordering::SeqCst);
    // The connection reads ahead 4 MiB (16 of them) and the session queues 1 MiB (4), one in
    // the handler: 21; the rest wait, their bodies unread.
    assert!(stuck <= 22, "{stuck} POSTs of {SIZE} bytes taken by a session that takes nothing");
    assert!(stuck < POSTS);
    gate.add_permits(POSTS);
    for post in posts {
        assert_eq!(within(post).await.unwrap(), 202);
    }
}

/// An auto-revision client's handshake, as a user of either revision writes it: `initialize`,
/// `notifications/initialized`, then a call showing what `_meta` it carried.
async fn auto_handshake(url: &str) -> (Connection, Value, Value) {
    let conn = McpHttpClient::new(url).unwrap().auto_revision().connect(Connection::builder().profile(Profile::mcp()));
    let init: Value = within(conn.handle().request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}}, "clientInfo": {"name": "auto", "version": "1"}}),
    ))
    .await
    .expect("initialize");
    within(conn.handle().notify("notifications/initialized", json!({}))).await.unwrap();
    let meta: Value = within(conn.handle().request("meta", json!({}))).await.expect("meta");
    (conn, init, meta)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_revision_speaks_stateless_to_a_dual_era_server() {
    let (bound, _cancelled, _, _) = serve(|s| s).await;
    let (conn, init, meta) = auto_handshake(&format!("http://{}/mcp", bound.local_addr())).await;
    // Answered from server/discover: its version, capabilities, serverInfo, instructions.
    assert_eq!(
        init,
        json!({"protocolVersion": V, "capabilities": {"tools": {}}, "serverInfo": {"name": "t-modern", "version": "1"},
               "instructions": "be kind"})
    );
    // The call went stateless, with the initialize's capabilities and clientInfo in `_meta`.
    assert_eq!(
        meta["meta"],
        json!({"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
               "io.modelcontextprotocol/clientInfo": {"name": "auto", "version": "1"}})
    );
    assert_eq!(bound.server().session_count(), 0, "no session was made");
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_revision_falls_back_to_sessions_against_a_legacy_server() {
    let (bound, _cancelled, _, _) = serve(|s| s.stateless(false)).await;
    // The probe alone, as a raw peer sees it: 400 without a modern error code.
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send("POST", &modern("server/discover", &[]), &request(1, "server/discover", json!({}))).await;
    let (status, _, _, refusal) = json_answer(&mut raw).await;
    assert_eq!((status, refusal["error"]["code"].as_i64()), (400, Some(-32000)), "{refusal}");

    let (conn, init, meta) = auto_handshake(&format!("http://{}/mcp", bound.local_addr())).await;
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["serverInfo"]["name"], "t", "the server's own initialize answered: {init}");
    assert_eq!(meta["meta"], Value::Null, "no per-request _meta in a session: {meta}");
    assert_eq!(bound.server().session_count(), 1);
    conn.close().await;
    eventually("the session deleted", || bound.server().session_count() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_round_trip_request_asks_the_clients_handlers_and_retries() {
    let (bound, _cancelled, _, _) = serve(|s| s).await;
    let url = format!("http://{}/mcp", bound.local_addr());
    let handlers = Router::new()
        .method("elicitation/create", |params: Value, _| async move {
            assert_eq!(params["message"], "name?");
            Ok::<_, ErrorObject>(json!({"action": "accept", "content": {"name": "octocat"}}))
        })
        .method("roots/list", |_: Value, _| async { Ok::<_, ErrorObject>(json!({"roots": [{"uri": "file:///w"}]})) });
    let conn = McpHttpClient::new(&url)
        .unwrap()
        .client_capabilities(json!({"elicitation": {}, "roots": {}}))
        .connect(Connection::builder().profile(Profile::mcp()).serve(handlers));
    let answer: Value = within(conn.handle().request("prompts/get", json!({"name": "greet"}))).await.expect("answered");
    assert_eq!(
        answer["given"],
        json!({"inputResponses": {"who": {"action": "accept", "content": {"name": "octocat"}},
                                  "where": {"roots": [{"uri": "file:///w"}]}},
               "requestState": "round-1", "id_was_new": true})
    );
    assert_eq!(answer["resultType"], "complete");
    conn.close().await;

    // Without a handler for one of the input requests, the call fails saying which.
    let conn =
        McpHttpClient::new(&url).unwrap().stateless().connect(Connection::builder().profile(Profile::mcp()).serve(
            Router::new().method("elicitation/create", |_: Value, _| async {
                Ok::<_, ErrorObject>(json!({"action": "decline"}))
            }),
        ));
    let failed =
        within(conn.handle().request::<Value>("prompts/get", json!({"name": "greet"}))).await.expect_err("fails");
    assert!(failed.to_string().contains("roots/list"), "{failed}");
}

/// A hand-written 2026-07-28 server: each POST on each connection read here and answered by
/// method: `tools/list` with a tool mirrored into headers and two whose annotations are
/// invalid; `tools/call` with the `mcp-param-*` headers it came with.
async fn x_mcp_header_server(listener: TcpListener) {
    loop {
        let Ok((socket, _)) = listener.accept().await else { return };
        tokio::spawn(async move {
            let mut socket = BufReader::new(socket);
            loop {
                let mut line = String::new();
                if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                let mut headers = Vec::new();
                loop {
                    let mut line = String::new();
                    socket.read_line(&mut line).await.unwrap();
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    let (n, v) = line.split_once(':').unwrap();
                    headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
                }
                let len: usize = header(&headers, "content-length").unwrap().parse().unwrap();
                let mut body = vec![0; len];
                socket.read_exact(&mut body).await.unwrap();
                let body: Value = serde_json::from_slice(&body).unwrap();
                let result = match body["method"].as_str() {
                    Some("tools/list") => json!({"tools": [
                        {"name": "weather", "inputSchema": {"type": "object", "properties": {
                            "region": {"type": "string", "x-mcp-header": "Region"},
                            "opts": {"type": "object", "properties": {"metric": {"type": "boolean", "x-mcp-header": "Metric"}}},
                            "days": {"type": "integer", "x-mcp-header": "Days"}}}},
                        {"name": "bad-number", "inputSchema": {"type": "object", "properties": {
                            "x": {"type": "number", "x-mcp-header": "X"}}}},
                        {"name": "bad-place", "inputSchema": {"type": "object", "properties": {
                            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}}]}),
                    _ => {
                        let params: serde_json::Map<String, Value> = headers
                            .iter()
                            .filter(|(n, _)| n.starts_with("mcp-param-"))
                            .map(|(n, v)| (n.clone(), json!(v)))
                            .collect();
                        json!({"content": [], "headers": params})
                    }
                };
                let answer = json!({"jsonrpc": "2.0", "id": body["id"], "result": result}).to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                    answer.len()
                );
                if socket.get_mut().write_all(response.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_arguments_marked_x_mcp_header_are_mirrored_into_headers() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = tokio::spawn(x_mcp_header_server(listener));
    let conn = McpHttpClient::new(&url).unwrap().stateless().connect(Connection::builder().profile(Profile::mcp()));
    let handle = conn.handle();
    let tools: Value = within(handle.request("tools/list", json!({}))).await.expect("tools/list");
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["weather"], "the tools with invalid annotations are left out: {tools}");

    let call = |arguments: Value| {
        let handle = handle.clone();
        async move {
            let answer: Value =
                within(handle.request("tools/call", json!({"name": "weather", "arguments": arguments}))).await.unwrap();
            answer["headers"].clone()
        }
    };
    assert_eq!(
        call(json!({"region": "us-west1", "opts": {"metric": true}, "days": 3})).await,
        json!({"mcp-param-region": "us-west1", "mcp-param-metric": "true", "mcp-param-days": "3"})
    );
    // Not plain ASCII: Base64 in its sentinel; `null` and absent: no header.
    assert_eq!(
        call(json!({"region": "Hello, 世界", "opts": {"metric": null}})).await,
        json!({"mcp-param-region": "=?base64?SGVsbG8sIOS4lueVjA==?="})
    );
    conn.close().await;
    server.abort();
}
