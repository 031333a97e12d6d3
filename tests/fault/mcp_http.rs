//! The MCP Streamable HTTP server attacked and misused by a raw HTTP/1.1 peer written here on
//! bytes (not hyper, not our client), on loopback, every wait bounded:
//!
//! - 10,000 `initialize`s: 1,024 sessions (the bound), the rest `503` with `Retry-After`; a
//!   DELETE makes room; idle sessions expire;
//! - an SSE reader that never reads: the session's undelivered bytes stop at the backlog
//!   bound (the handler waits), and reading then brings every event, in order, and the answer;
//! - a huge chunked body and a huge `Content-Length`: `413` at the limit, without the rest read;
//! - a body that stalls: `408` after the body timeout;
//! - bodies outside a session (`initialize`, stateless requests) share one byte budget: a
//!   declared length that does not fit and a chunked body that passes it get `503` with
//!   `Retry-After: 1`; a session's own POSTs are not charged; the budget comes back;
//! - resumption: a POST stream dropped in the middle, resumed by GET with `Last-Event-ID`,
//!   replays what was missed and then the answer; a request whose answer was parked (its
//!   stream dropped, the handler finishing with nothing attached, or a resumption dropped
//!   again while the handler waits) gets the held notifications and the answer exactly once,
//!   and none of it on the GET stream;
//! - the protocol's refusals: Host/Origin (`403`), unknown session (`404`), bad
//!   `MCP-Protocol-Version`, batch, content type, `Accept`, a second GET stream (`409`), the
//!   bearer hook (`401`, another principal `403`);
//! - our client (`McpHttpClient`): it initializes again after a `404`, and its close sends
//!   `DELETE`.
#![cfg(feature = "mcp-http")]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonrpc_duplex::transport::mcp_http::{AuthRejection, BoundMcpServer, McpHttpServer};
use jsonrpc_duplex::{Connection, ErrorObject, Profile, Router};
use serde_json::{Value, json};
use support::time::{eventually, within};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A response's head.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
}

impl Head {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// An HTTP/1.1 client on raw bytes: one keep-alive connection.
pub(crate) struct Raw {
    stream: BufReader<TcpStream>,
    /// The current response is chunked (else it has a `Content-Length`, `left` bytes to go).
    chunked: bool,
    left: usize,
    ended: bool,
}

impl Raw {
    pub(crate) async fn connect(addr: std::net::SocketAddr) -> Raw {
        let stream = within(TcpStream::connect(addr)).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Raw { stream: BufReader::new(stream), chunked: false, left: 0, ended: true }
    }

    /// Write a request's head (`Host: localhost` unless given) and body.
    pub(crate) async fn send(&mut self, method: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut head = format!("{method} /mcp HTTP/1.1\r\n");
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            head.push_str("Host: localhost\r\n");
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if method == "POST" && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding")) {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        // One write: a second small one would wait for the first's (delayed) ACK.
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        within(self.stream.get_mut().write_all(&bytes)).await.expect("write the request");
    }

    pub(crate) async fn head(&mut self) -> Head {
        let mut line = String::new();
        within(self.stream.read_line(&mut line)).await.expect("status line");
        let status =
            line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("bad status {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            within(self.stream.read_line(&mut line)).await.expect("header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header");
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        let head = Head { status, headers };
        self.chunked = head.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        self.left = head.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        self.ended = !self.chunked && self.left == 0;
        head
    }

    /// The next piece of the body; `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Option<Vec<u8>> {
        if self.ended {
            return None;
        }
        if !self.chunked {
            let mut buf = vec![0; self.left];
            within(self.stream.read_exact(&mut buf)).await.expect("body");
            self.ended = true;
            return Some(buf);
        }
        let mut size = String::new();
        within(self.stream.read_line(&mut size)).await.expect("chunk size");
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or_else(|_| panic!("bad chunk size {size:?}"));
        let mut buf = vec![0; size + 2];
        within(self.stream.read_exact(&mut buf)).await.expect("chunk");
        buf.truncate(size);
        if size == 0 {
            // Trailers: none.
            self.ended = true;
            return None;
        }
        Some(buf)
    }

    pub(crate) async fn body(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk().await {
            out.extend(chunk);
        }
        out
    }

    /// SSE events' `(id, data)` until `stop` says so or the body ends.
    pub(crate) async fn events(
        &mut self,
        pending: &mut String,
        mut stop: impl FnMut(&str) -> bool,
    ) -> Vec<(String, String)> {
        let mut events = Vec::new();
        loop {
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                let mut id = String::new();
                let mut data = String::new();
                for line in event.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                let done = stop(&data);
                events.push((id, data));
                if done {
                    return events;
                }
            }
            match self.chunk().await {
                Some(bytes) => pending.push_str(std::str::from_utf8(&bytes).expect("UTF-8")),
                None => return events,
            }
        }
    }
}

/// A server for the inbound budgets' tests, driven through its `tower` service: `initialize`,
/// and a `heavy` notification whose handler waits for a permit of the gate it returns (so a
/// session's connection takes nothing until the test lets it), with a 1 MiB inbound budget
/// per session and bodies that may take an hour; `configure` adds the rest.
pub(crate) fn gated_heavy_server(
    configure: impl FnOnce(McpHttpServer) -> McpHttpServer,
) -> (McpHttpServer, Arc<tokio::sync::Semaphore>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let for_sessions = gate.clone();
    let server = McpHttpServer::new(move |_| {
        let gate = for_sessions.clone();
        Connection::builder().profile(Profile::mcp()).serve(
            Router::new()
                .method("initialize", |_: Value, _| async {
                    Ok::<_, ErrorObject>(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "t", "version": "0"}}))
                })
                .notification("heavy", move |_: Value, _| {
                    let gate = gate.clone();
                    async move {
                        if let Ok(permit) = gate.acquire().await {
                            permit.forget();
                        }
                    }
                }),
        )
    })
    .max_inbound(1024 * 1024)
    .body_timeout(Duration::from_secs(3600));
    (configure(server), gate)
}

/// A JSON POST of `body` for the `tower` service, to `session` if given.
pub(crate) fn service_post(session: Option<&str>, body: Vec<u8>) -> http::Request<axum::body::Body> {
    let mut request = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.body(axum::body::Body::from(body)).unwrap()
}

/// A session started through the `tower` service: its id (the `initialize` answer read).
pub(crate) async fn service_session(server: &McpHttpServer) -> String {
    let response = server.handle(service_post(None, initialize_body())).await;
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = axum::body::to_bytes(axum::body::Body::new(response.into_body()), usize::MAX).await;
    session
}

pub(crate) const JSON_HEADERS: [(&str, &str); 2] =
    [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];

fn initialize_body() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}
    }})
    .to_string()
    .into_bytes()
}

/// The handlers: `initialize`, `echo`, and `flood {n, size}` (sends `n` log notifications of
/// `size` bytes, counting them in `sent`, then answers).
fn router(sent: Arc<AtomicUsize>) -> Router {
    Router::new()
        .method("initialize", |_: Value, _| async {
            Ok::<_, ErrorObject>(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "t", "version": "0"}}))
        })
        .notification("notifications/initialized", |_: Value, _| async {})
        .method("echo", |params: Value, _| async move { Ok::<_, ErrorObject>(params) })
        .method("flood", move |params: Value, ctx: jsonrpc_duplex::RequestContext| {
            let sent = sent.clone();
            async move {
                let n = params["n"].as_u64().unwrap_or(0);
                let data = "x".repeat(params["size"].as_u64().unwrap_or(0) as usize);
                for i in 0..n {
                    ctx.peer()
                        .notify("notifications/message", json!({"level": "info", "data": data, "seq": i}))
                        .await
                        .map_err(ErrorObject::internal_error)?;
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, ErrorObject>(json!({"sent": n}))
            }
        })
}

async fn serve(configure: impl FnOnce(McpHttpServer) -> McpHttpServer) -> (BoundMcpServer, Arc<AtomicUsize>) {
    let sent = Arc::new(AtomicUsize::new(0));
    let for_sessions = sent.clone();
    let server =
        McpHttpServer::new(move |_| Connection::builder().profile(Profile::mcp()).serve(router(for_sessions.clone())));
    let bound = within(configure(server).bind("127.0.0.1:0")).await.expect("bind");
    (bound, sent)
}

/// Initialize a session on `raw`: its id.
pub(crate) async fn initialize(raw: &mut Raw) -> String {
    raw.send("POST", &JSON_HEADERS, &initialize_body()).await;
    let head = raw.head().await;
    assert_eq!(head.status, 200, "{head:?}");
    let id = head.header("mcp-session-id").expect("a session id").to_owned();
    let body = String::from_utf8(raw.body().await).unwrap();
    assert!(body.contains(r#""protocolVersion":"2025-11-25""#), "{body}");
    id
}

pub(crate) fn with_session<'a>(session: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("Mcp-Session-Id", session));
    headers.extend_from_slice(extra);
    headers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_initializes_get_the_session_bound_then_503() {
    let (bound, _) = serve(|s| s).await;
    let addr = bound.local_addr();
    // 8 keep-alive connections, 1,250 initializes each.
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            tokio::spawn(async move {
                let mut raw = Raw::connect(addr).await;
                let (mut ok, mut refused) = (0, 0);
                for _ in 0..1250 {
                    raw.send("POST", &JSON_HEADERS, &initialize_body()).await;
                    let head = raw.head().await;
                    raw.body().await;
                    match head.status {
                        200 => ok += 1,
                        503 => {
                            assert_eq!(head.header("retry-after"), Some("5"));
                            refused += 1
                        }
                        other => panic!("unexpected status {other}"),
                    }
                }
                (ok, refused)
            })
        })
        .collect();
    let (mut ok, mut refused) = (0, 0);
    for task in tasks {
        let (o, r) = tokio::time::timeout(Duration::from_secs(120), task).await.expect("in time").expect("no panic");
        ok += o;
        refused += r;
    }
    assert_eq!((ok, refused), (1024, 10_000 - 1024));
    assert_eq!(bound.server().session_count(), 1024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_session_makes_room_and_its_id_is_404() {
    let (bound, _) = serve(|s| s.max_sessions(2)).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let a = initialize(&mut raw).await;
    let _b = initialize(&mut raw).await;
    raw.send("POST", &JSON_HEADERS, &initialize_body()).await;
    assert_eq!(raw.head().await.status, 503);
    raw.body().await;
    raw.send("DELETE", &[("Mcp-Session-Id", &a)], b"").await;
    assert_eq!(raw.head().await.status, 200);
    raw.body().await;
    let _c = initialize(&mut raw).await;
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {}}).to_string();
    raw.send("POST", &with_session(&a, &[]), echo.as_bytes()).await;
    assert_eq!(raw.head().await.status, 404, "a deleted session's id");
    raw.body().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire() {
    let (bound, _) = serve(|s| s.idle_timeout(Duration::from_millis(100))).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let id = initialize(&mut raw).await;
    assert_eq!(bound.server().session_count(), 1);
    eventually("the idle session expires", || bound.server().session_count() == 0).await;
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {}}).to_string();
    raw.send("POST", &with_session(&id, &[]), echo.as_bytes()).await;
    assert_eq!(raw.head().await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_never_reads_stops_the_session_at_its_backlog_bound() {
    const BACKLOG: usize = 256 * 1024;
    const N: usize = 1000;
    const SIZE: usize = 32 * 1024;
    let (bound, sent) = serve(|s| s.max_backlog(BACKLOG)).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let id = initialize(&mut raw).await;
    // 32 MB of notifications on the POST stream of a request whose reader does not read.
    let flood = json!({"jsonrpc": "2.0", "id": 1, "method": "flood", "params": {"n": N, "size": SIZE}}).to_string();
    raw.send("POST", &with_session(&id, &[]), flood.as_bytes()).await;
    eventually("the backlog reaches its bound", || bound.server().backlog_bytes() >= BACKLOG).await;
    let backlog = bound.server().backlog_bytes();
    assert!(backlog < BACKLOG + SIZE + 1024, "the backlog is over its bound: {backlog}");
    let stalled_at = sent.load(Ordering::Relaxed);
    assert!(stalled_at < N, "the handler was not held back");
    // Now read: every notification in order, then the answer.
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let mut pending = String::new();
    let events =
        tokio::time::timeout(Duration::from_secs(60), raw.events(&mut pending, |data| data.contains(r#""id":1"#)))
            .await
            .expect("the stream drains in time");
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|m| m["params"]["seq"].as_u64())
        .collect();
    assert_eq!(seqs, (0..N as u64).collect::<Vec<_>>(), "lost or reordered notifications");
    assert!(events.last().unwrap().1.contains(r#""sent":1000"#));
    assert_eq!(bound.server().backlog_bytes(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_chunked_body_is_refused_at_the_limit() {
    let (bound, _) = serve(|s| s.max_body_size(1024 * 1024)).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("Transfer-Encoding", "chunked"));
    raw.send("POST", &headers, b"").await;
    // Write 64 KiB chunks (up to 1 GiB) until the server answers.
    let (mut reader, mut writer) = raw.stream.into_inner().into_split();
    let writing = tokio::spawn(async move {
        let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
        let mut written = 0usize;
        while written < 1 << 30 {
            if writer.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
            written += 0x10000;
        }
        written
    });
    let mut head = [0u8; 12];
    within(reader.read_exact(&mut head)).await.expect("an answer");
    assert_eq!(&head, b"HTTP/1.1 413");
    writing.abort();
    // And a Content-Length over the limit is refused before any body is sent.
    let mut raw = Raw::connect(bound.local_addr()).await;
    let head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\nContent-Length: 100000000000\r\n\r\n";
    within(raw.stream.get_mut().write_all(head.as_bytes())).await.unwrap();
    assert_eq!(raw.head().await.status, 413);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_times_out_with_408() {
    let (bound, _) = serve(|s| s.body_timeout(Duration::from_millis(200))).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"";
    within(raw.stream.get_mut().write_all(head.as_bytes())).await.unwrap();
    assert_eq!(raw.head().await.status, 408);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_outside_a_session_share_one_byte_budget() {
    let (bound, _) = serve(|s| s.max_pre_session_bytes(1000)).await;
    let addr = bound.local_addr();
    let server = bound.server().clone();
    // A session made first: its own POSTs are not charged.
    let mut session_raw = Raw::connect(addr).await;
    let session = initialize(&mut session_raw).await;
    eventually("the initialize's bytes given back", || server.pre_session_bytes() == 0).await;

    // A: an initialize declaring 800 bytes (padded with spaces), one byte of it sent.
    let mut padded = initialize_body();
    padded.resize(800, b' ');
    let post_head = |len: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{len}\r\n"
        )
    };
    let mut a = Raw::connect(addr).await;
    let start = format!("{}{{", post_head("Content-Length: 800\r\n"));
    within(a.stream.get_mut().write_all(start.as_bytes())).await.unwrap();
    eventually("A's declared length charged", || server.pre_session_bytes() == 800).await;

    // B: 300 declared bytes do not fit: 503 before a byte is read, the connection closed.
    let mut b = Raw::connect(addr).await;
    within(b.stream.get_mut().write_all(post_head("Content-Length: 300\r\n").as_bytes())).await.unwrap();
    let head = b.head().await;
    assert_eq!(head.status, 503, "{head:?}");
    assert_eq!(head.header("retry-after"), Some("1"), "{head:?}");
    assert_eq!(head.header("connection"), Some("close"), "{head:?}");
    let refusal: Value = serde_json::from_slice(&b.body().await).unwrap();
    assert_eq!(refusal["error"]["code"], -32000, "{refusal}");
    assert!(refusal["error"]["message"].as_str().unwrap().contains("1000 bytes"), "{refusal}");

    // A session's POST goes on while the budget is all but spent.
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"pad": "y".repeat(500)}}).to_string();
    session_raw.send("POST", &with_session(&session, &[]), echo.as_bytes()).await;
    assert_eq!(session_raw.head().await.status, 200);
    assert!(String::from_utf8(session_raw.body().await).unwrap().contains(&"y".repeat(500)));

    // C: a chunked stateless request, charged as it arrives: 150 bytes fit, 100 more do not.
    let mut c = Raw::connect(addr).await;
    let stateless =
        post_head("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nTransfer-Encoding: chunked\r\n");
    let first = format!("{stateless}96\r\n{}\r\n", " ".repeat(150));
    within(c.stream.get_mut().write_all(first.as_bytes())).await.unwrap();
    eventually("C's first chunk charged", || server.pre_session_bytes() == 950).await;
    let second = format!("64\r\n{}\r\n", " ".repeat(100));
    within(c.stream.get_mut().write_all(second.as_bytes())).await.unwrap();
    let head = c.head().await;
    assert_eq!(head.status, 503, "{head:?}");
    assert_eq!(head.header("retry-after"), Some("1"), "{head:?}");
    eventually("C's bytes given back", || server.pre_session_bytes() == 800).await;

    // A's body ends: it is answered, and the budget is empty again.
    within(a.stream.get_mut().write_all(&padded[1..])).await.unwrap();
    let head = a.head().await;
    assert_eq!(head.status, 200, "{head:?}");
    assert!(head.header("mcp-session-id").is_some());
    assert!(String::from_utf8(a.body().await).unwrap().contains("protocolVersion"));
    eventually("A's bytes given back", || server.pre_session_bytes() == 0).await;
    // And what B was refused fits now.
    let mut b = Raw::connect(addr).await;
    initialize(&mut b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_resumes_with_last_event_id() {
    let (bound, sent) = serve(|s| s.max_backlog(4 * 1024)).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let id = initialize(&mut raw).await;
    let flood = json!({"jsonrpc": "2.0", "id": 7, "method": "flood", "params": {"n": 200, "size": 1024}}).to_string();
    raw.send("POST", &with_session(&id, &[]), flood.as_bytes()).await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    // The priming event (an id, `retry:`, no data) and a few notifications; then the
    // connection drops.
    let mut pending = String::new();
    let mut seen = 0;
    let first = raw.events(&mut pending, |_| {
        seen += 1;
        seen == 6
    });
    let first = first.await;
    assert_eq!(first[0].1, "", "the first event is the priming event");
    let (last_id, _) = first.last().unwrap().clone();
    drop(raw);
    // The handler goes on (events wait in the session); resume after the last one seen.
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id), ("Last-Event-ID", &last_id)], b"")
        .await;
    let head = raw.head().await;
    assert_eq!(head.status, 200, "{head:?}");
    let mut pending = String::new();
    let rest = raw.events(&mut pending, |data| data.contains(r#""id":7"#)).await;
    let seq = |data: &str| serde_json::from_str::<Value>(data).ok().and_then(|m| m["params"]["seq"].as_u64());
    let before: Vec<u64> = first.iter().filter_map(|(_, d)| seq(d)).collect();
    let after: Vec<u64> = rest.iter().filter_map(|(_, d)| seq(d)).collect();
    let all: Vec<u64> = before.into_iter().chain(after).collect();
    assert_eq!(all, (0..200).collect::<Vec<_>>(), "events lost or repeated across the resumption");
    assert!(rest.last().unwrap().1.contains(r#""sent":200"#));
    assert_eq!(sent.load(Ordering::Relaxed), 200);
}

/// The server taking an event only means it wrote it: a client whose connection broke with the
/// whole stream (its answer too) in flight resumes it from the priming event and gets every
/// event again, though the server already took them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_written_to_its_end_still_resumes_from_its_first_event() {
    let (bound, sent) = serve(|s| s).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let id = initialize(&mut raw).await;
    let flood = json!({"jsonrpc": "2.0", "id": 9, "method": "flood", "params": {"n": 3, "size": 16}}).to_string();
    raw.send("POST", &with_session(&id, &[]), flood.as_bytes()).await;
    assert_eq!(raw.head().await.status, 200);
    // Read to the answer: by then the server has taken every event of the stream.
    let mut pending = String::new();
    let first = raw.events(&mut pending, |data| data.contains(r#""id":9"#)).await;
    assert_eq!(first[0].1, "", "the first event is the priming event");
    assert_eq!(sent.load(Ordering::Relaxed), 3);
    let priming = first[0].0.clone();
    drop(raw);
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id), ("Last-Event-ID", &priming)], b"")
        .await;
    let head = raw.head().await;
    assert_eq!(head.status, 200, "an answered stream is kept for a resumption: {head:?}");
    let mut pending = String::new();
    let again = raw.events(&mut pending, |data| data.contains(r#""id":9"#)).await;
    assert_eq!(again, first[1..].to_vec(), "the same events, after the priming one");
    // The stream kept for a resumption does not count as an open request: the session still
    // takes requests.
    let mut raw = Raw::connect(bound.local_addr()).await;
    let echo = json!({"jsonrpc": "2.0", "id": 10, "method": "echo", "params": {"k": 1}}).to_string();
    raw.send("POST", &with_session(&id, &[]), echo.as_bytes()).await;
    assert_eq!(raw.head().await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_say_what_is_wrong() {
    let (bound, _) = serve(|s| s).await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    let id = initialize(&mut raw).await;
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {}}).to_string();
    let addr = bound.local_addr();
    // A connection each: a refused request's unread body ends its connection.
    let check = async |method: &str, headers: Vec<(&str, &str)>, body: &[u8], status: u16| {
        let mut raw = Raw::connect(addr).await;
        raw.send(method, &headers, body).await;
        let head = raw.head().await;
        let text = String::from_utf8_lossy(&raw.body().await).into_owned();
        assert_eq!(head.status, status, "{method} {headers:?}: {text}");
        text
    };
    let mut evil_host = with_session(&id, &[]);
    evil_host.push(("Host", "evil.example.com"));
    assert!(check("POST", evil_host, echo.as_bytes(), 403).await.contains("the host"));
    let text = check("POST", with_session(&id, &[("Origin", "http://evil.example.com")]), echo.as_bytes(), 403).await;
    assert!(text.contains("the origin"), "{text}");
    check("POST", with_session(&id, &[("Origin", "http://localhost:1234")]), echo.as_bytes(), 200).await;
    check("POST", with_session("nope", &[]), echo.as_bytes(), 404).await;
    check("POST", JSON_HEADERS.to_vec(), echo.as_bytes(), 400).await;
    let text = check("POST", with_session(&id, &[("MCP-Protocol-Version", "1999-01-01")]), echo.as_bytes(), 400).await;
    assert!(text.contains("2025-11-25"), "names the supported revisions: {text}");
    let batch = format!("[{echo}]");
    assert!(check("POST", with_session(&id, &[]), batch.as_bytes(), 400).await.contains("batch"));
    check("POST", with_session(&id, &[]), b"{not json", 400).await;
    let mut text_plain = with_session(&id, &[]);
    text_plain[0] = ("Content-Type", "text/plain");
    check("POST", text_plain, echo.as_bytes(), 415).await;
    let mut json_only = with_session(&id, &[]);
    json_only[1] = ("Accept", "application/json");
    check("POST", json_only, echo.as_bytes(), 406).await;
    check("PUT", with_session(&id, &[]), b"", 405).await;
    // A notification: 202, no body.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(check("POST", with_session(&id, &[]), note.as_bytes(), 202).await, "");
    // One GET stream per session.
    raw.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id)], b"").await;
    assert_eq!(raw.head().await.status, 200);
    let mut other = Raw::connect(bound.local_addr()).await;
    other.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id)], b"").await;
    assert_eq!(other.head().await.status, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_hook_guards_every_request_and_binds_the_session() {
    let (bound, _) = serve(|s| {
        s.authorize(|request| match request.headers.get("authorization").and_then(|v| v.to_str().ok()) {
            Some("Bearer alice") => Ok(Some("alice".into())),
            Some("Bearer bob") => Ok(Some("bob".into())),
            _ => Err(AuthRejection::bearer("a bearer token is needed")),
        })
    })
    .await;
    let mut raw = Raw::connect(bound.local_addr()).await;
    raw.send("POST", &JSON_HEADERS, &initialize_body()).await;
    let head = raw.head().await;
    assert_eq!((head.status, head.header("www-authenticate")), (401, Some("Bearer")));
    raw.body().await;
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("Authorization", "Bearer alice"));
    raw.send("POST", &headers, &initialize_body()).await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    let id = head.header("mcp-session-id").unwrap().to_owned();
    raw.body().await;
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"x": 1}}).to_string();
    raw.send("POST", &with_session(&id, &[("Authorization", "Bearer bob")]), echo.as_bytes()).await;
    assert_eq!(raw.head().await.status, 403, "another principal may not use alice's session");
    raw.body().await;
    raw.send("POST", &with_session(&id, &[("Authorization", "Bearer alice")]), echo.as_bytes()).await;
    assert_eq!(raw.head().await.status, 200);
    assert!(String::from_utf8(raw.body().await).unwrap().contains(r#""result":{"x":1}"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_initializes_again_after_a_404() {
    use jsonrpc_duplex::transport::mcp_http::McpHttpClient;
    let (bound, _) = serve(|s| s.idle_timeout(Duration::from_millis(100))).await;
    let url = format!("http://{}/mcp", bound.local_addr());
    let conn = McpHttpClient::new(&url).unwrap().connect(Connection::builder().profile(Profile::mcp()));
    let handle = conn.handle();
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ours", "version": "0"}});
    let init: Value = within(handle.request("initialize", params)).await.expect("initialize");
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(bound.server().session_count(), 1);
    // No GET stream is open (no `notifications/initialized` yet): the session expires.
    eventually("the idle session expires", || bound.server().session_count() == 0).await;
    // The next call meets a 404; the transport initializes again and sends it again.
    let echoed: Value = within(handle.request("echo", json!({"x": 1}))).await.expect("echo after the 404");
    assert_eq!(echoed, json!({"x": 1}));
    assert_eq!(bound.server().session_count(), 1, "a new session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_deletes_its_session() {
    use jsonrpc_duplex::transport::mcp_http::McpHttpClient;
    // Sessions here do not expire: only the DELETE can end it.
    let (bound, _) = serve(|s| s).await;
    let url = format!("http://{}/mcp", bound.local_addr());
    let conn = McpHttpClient::new(&url).unwrap().connect(Connection::builder().profile(Profile::mcp()));
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ours", "version": "0"}});
    let _: Value = within(conn.handle().request("initialize", params)).await.expect("initialize");
    within(conn.handle().notify("notifications/initialized", json!({}))).await.unwrap();
    assert_eq!(bound.server().session_count(), 1);
    within(conn.close()).await;
    eventually("the DELETE ends the session", || bound.server().session_count() == 0).await;
}

/// A server whose `slow` request sends `before` notifications, waits for the test's gate, sends
/// `after` more and answers; `mark` (a notification) sends a `notifications/message` of its
/// own, with nothing open but the GET stream.
async fn serve_gated() -> (BoundMcpServer, Arc<tokio::sync::Semaphore>, Arc<AtomicUsize>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let (for_sessions, answers) = (gate.clone(), answered.clone());
    let server = McpHttpServer::new(move |_| {
        let (gate, answered) = (for_sessions.clone(), answers.clone());
        let note = |ctx: &jsonrpc_duplex::RequestContext, stage: &str, seq: u64| {
            let peer = ctx.peer();
            let params = json!({"level": "info", "data": stage, "seq": seq});
            async move { peer.notify("notifications/message", params).await.map_err(ErrorObject::internal_error) }
        };
        Connection::builder().profile(Profile::mcp()).serve(
            router(Arc::default())
                .method("slow", move |params: Value, ctx: jsonrpc_duplex::RequestContext| {
                    let (gate, answered) = (gate.clone(), answered.clone());
                    async move {
                        let (before, after) =
                            (params["before"].as_u64().unwrap_or(0), params["after"].as_u64().unwrap_or(0));
                        for seq in 0..before {
                            note(&ctx, "before", seq).await?;
                        }
                        gate.acquire().await.map_err(ErrorObject::internal_error)?.forget();
                        for seq in before..before + after {
                            note(&ctx, "after", seq).await?;
                        }
                        answered.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, ErrorObject>(json!({"notes": before + after}))
                    }
                })
                .notification("mark", |_: Value, ctx: jsonrpc_duplex::NotificationContext| async move {
                    let _ = ctx.peer().notify("notifications/message", json!({"level": "info", "data": "mark"})).await;
                }),
        )
    });
    let bound = within(server.bind("127.0.0.1:0")).await.expect("bind");
    (bound, gate, answered)
}

/// Revision 2025-11-25, a request whose answer is parked: its POST's SSE stream drops after two
/// notifications, with the handler still running; the handler then sends two more and answers
/// while no stream is attached. A GET with the `Last-Event-ID` of the last event read gets the
/// two held notifications and the answer, each once, and ends; the GET stream (opened after)
/// carries none of them; resuming again after the answer brings no second answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_answer_reaches_the_resumption_once_with_the_held_notifications() {
    let (bound, gate, answered) = serve_gated().await;
    let addr = bound.local_addr();
    let mut raw = Raw::connect(addr).await;
    let id = initialize(&mut raw).await;
    let slow = json!({"jsonrpc": "2.0", "id": 5, "method": "slow", "params": {"before": 2, "after": 2}}).to_string();
    raw.send("POST", &with_session(&id, &[]), slow.as_bytes()).await;
    let head = raw.head().await;
    assert_eq!(head.status, 200, "{head:?}");
    assert!(head.header("content-type").is_some_and(|t| t.starts_with("text/event-stream")), "{head:?}");
    let mut pending = String::new();
    let mut notes = 0;
    let first = raw
        .events(&mut pending, |data| {
            notes += usize::from(data.contains("notifications/message"));
            notes == 2
        })
        .await;
    assert_eq!(first.len(), 3, "the priming event and two notifications: {first:?}");
    assert_eq!(first[0].1, "", "the priming event first");
    let (last_id, _) = first.last().unwrap().clone();
    assert!(!last_id.is_empty(), "every event of a 2025-11-25 stream has an id: {first:?}");
    // The stream drops mid-request; the handler finishes with nothing attached.
    drop(raw);
    gate.add_permits(1);
    eventually("the handler answers", || answered.load(Ordering::SeqCst) == 1).await;

    // The GET stream (not a resumption) takes nothing of request 5's.
    let mut get = Raw::connect(addr).await;
    get.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id)], b"").await;
    assert_eq!(get.head().await.status, 200);

    let mut resumed = Raw::connect(addr).await;
    resumed
        .send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id), ("Last-Event-ID", &last_id)], b"")
        .await;
    let head = resumed.head().await;
    assert_eq!(head.status, 200, "{head:?}");
    let mut pending = String::new();
    // To the end of the body: the stream ends after its answer.
    let rest = resumed.events(&mut pending, |_| false).await;
    let datas: Vec<Value> = rest.iter().map(|(_, d)| serde_json::from_str(d).expect("JSON")).collect();
    let seqs: Vec<u64> = datas.iter().filter_map(|m| m["params"]["seq"].as_u64()).collect();
    assert_eq!(seqs, [2, 3], "the held notifications, once each, in order: {rest:?}");
    let answers: Vec<&Value> = datas.iter().filter(|m| m.get("id").is_some()).collect();
    assert_eq!(answers.len(), 1, "one answer: {rest:?}");
    assert_eq!(answers[0]["id"], 5);
    assert_eq!(answers[0]["result"]["notes"], 4);
    assert!(datas.last().is_some_and(|m| m.get("id").is_some()), "the answer ends the stream: {rest:?}");
    let ids: std::collections::HashSet<&str> = first.iter().chain(&rest).map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids.len(), first.len() + rest.len(), "no event id twice: {first:?} {rest:?}");

    // Resuming after the answer: nothing more (an ended stream, or a 404 once it is forgotten).
    let answer_id = rest.last().unwrap().0.clone();
    let mut again = Raw::connect(addr).await;
    again
        .send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id), ("Last-Event-ID", &answer_id)], b"")
        .await;
    let head = again.head().await;
    match head.status {
        200 => {
            let mut pending = String::new();
            let more = again.events(&mut pending, |_| false).await;
            assert!(more.is_empty(), "nothing after the answer: {more:?}");
        }
        404 => {}
        other => panic!("resuming after the answer: {other} {head:?}"),
    }

    // The GET stream: the marker of a notification sent now, and nothing of request 5's before it.
    let mut poster = Raw::connect(addr).await;
    let mark = json!({"jsonrpc": "2.0", "method": "mark"}).to_string();
    poster.send("POST", &with_session(&id, &[]), mark.as_bytes()).await;
    assert_eq!(poster.head().await.status, 202);
    let mut pending = String::new();
    let standalone = get.events(&mut pending, |data| data.contains(r#""mark""#)).await;
    assert!(standalone.last().is_some_and(|(_, d)| d.contains(r#""mark""#)), "{standalone:?}");
    for (_, data) in &standalone {
        assert!(
            !data.contains(r#""seq""#) && !data.contains(r#""id":5"#),
            "request 5's on the GET stream: {standalone:?}"
        );
    }
}

/// A resumption is itself dropped while the handler is parked, and the client resumes again,
/// from the priming event: everything of the request's stream, each event once, and the answer
/// once at its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumption_dropped_while_the_handler_is_parked_resumes_again_from_the_start() {
    let (bound, gate, answered) = serve_gated().await;
    let addr = bound.local_addr();
    let mut raw = Raw::connect(addr).await;
    let id = initialize(&mut raw).await;
    let slow = json!({"jsonrpc": "2.0", "id": 6, "method": "slow", "params": {"before": 2, "after": 2}}).to_string();
    raw.send("POST", &with_session(&id, &[]), slow.as_bytes()).await;
    assert_eq!(raw.head().await.status, 200);
    let mut pending = String::new();
    let first = raw.events(&mut pending, |data| data.contains("notifications/message")).await;
    assert_eq!(first.len(), 2, "the priming event and one notification: {first:?}");
    let (priming, seen) = (first[0].0.clone(), first[1].0.clone());
    drop(raw);
    let resume = |from: String| {
        let id = id.clone();
        async move {
            let mut raw = Raw::connect(addr).await;
            raw.send("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id), ("Last-Event-ID", &from)], b"")
                .await;
            let head = raw.head().await;
            assert_eq!(head.status, 200, "{head:?}");
            raw
        }
    };
    // The first resumption gets the second notification, then drops with the handler parked.
    let mut second = resume(seen).await;
    let mut pending = String::new();
    let middle = second.events(&mut pending, |data| data.contains("notifications/message")).await;
    assert!(middle.last().is_some_and(|(_, d)| d.contains(r#""seq":1"#)), "{middle:?}");
    drop(second);
    assert_eq!(answered.load(Ordering::SeqCst), 0, "the handler is parked");
    gate.add_permits(1);
    eventually("the handler answers", || answered.load(Ordering::SeqCst) == 1).await;
    let mut third = resume(priming).await;
    let mut pending = String::new();
    let all = third.events(&mut pending, |_| false).await;
    let datas: Vec<Value> = all.iter().map(|(_, d)| serde_json::from_str(d).expect("JSON")).collect();
    let seqs: Vec<u64> = datas.iter().filter_map(|m| m["params"]["seq"].as_u64()).collect();
    assert_eq!(seqs, [0, 1, 2, 3], "every notification once, in order: {all:?}");
    let answers: Vec<&Value> = datas.iter().filter(|m| m.get("id").is_some()).collect();
    assert_eq!(answers.len(), 1, "{all:?}");
    assert_eq!((&answers[0]["id"], &answers[0]["result"]["notes"]), (&json!(6), &json!(4)));
    assert!(datas.last().is_some_and(|m| m["id"] == 6), "the answer last: {all:?}");
}
