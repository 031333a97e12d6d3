//! Attacks on the MCP Streamable HTTP server (`McpHttpServer::bind`), one table row each: what
//! was sent, the target's peak resident memory (VmHWM from `/proc/<pid>/status`, Linux only),
//! and how it recovered (a fresh session answering afterwards, and the memory then). The
//! target is this program re-run as `target` (a child process, so the numbers are its own);
//! the attacker writes raw HTTP/1.1 bytes and keeps nothing.
//!
//! ```text
//! cargo run --release --features mcp-http --example mcp_http_attack [-- --only sessions,reader]
//! ```
//!
//! Not part of `cargo test` (it only has to build there): it takes a minute. The target has the
//! default limits, plus three tools for the attacks: `flood {n, size}` (sends `n` log messages
//! of `size` bytes while it runs), `hang` (reports progress, then never answers), and the
//! notification `block` (its handler holds the session's messages for 3 s).

use std::io::Write as _;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use jsonrpc_duplex::transport::mcp_http::McpHttpServer;
use jsonrpc_duplex::{Connection, ErrorObject, Profile, RequestContext, Router};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const MIB: usize = 1024 * 1024;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("target") {
        return target().await;
    }
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').map(str::to_owned).collect());
    let all = ["sessions", "reader", "chunked", "inbound", "cancel", "slow-bodies", "pre-session"];
    println!("| attack | bytes sent | target's peak memory (VmHWM) | what happened | recovery |");
    println!("|---|---:|---:|---|---|");
    for name in all {
        if only.as_ref().is_some_and(|o| !o.iter().any(|n| n == name)) {
            continue;
        }
        let mut target = Target::start().await;
        let (sent, outcome) = match name {
            "sessions" => sessions(&target).await,
            "reader" => reader(&target).await,
            "chunked" => chunked(&target).await,
            "inbound" => inbound(&target).await,
            "cancel" => cancel(&target).await,
            "slow-bodies" => slow_bodies(&target).await,
            "pre-session" => pre_session(&target).await,
            _ => unreachable!(),
        };
        let peak = target.peak_mib();
        let recovery = target.recovery().await;
        println!("| {name} | {sent} | {peak} | {outcome} | {recovery} |");
        let _ = std::io::stdout().flush();
        let _ = target.child.kill().await;
    }
}

// ---------------------------------------------------------------------------------------------
// The target

async fn target() {
    let server = McpHttpServer::new(|_| {
        Connection::builder().profile(Profile::mcp()).serve(
            Router::new()
                .method("initialize", |_: Value, _| async {
                    Ok::<_, ErrorObject>(json!({"protocolVersion": "2025-11-25", "capabilities": {},
                        "serverInfo": {"name": "attack-target", "version": "0"}}))
                })
                .notification("notifications/initialized", |_: Value, _| async {})
                .method("ping", |_: Value, _| async { Ok::<_, ErrorObject>(json!({})) })
                .method("flood", |params: Value, ctx: RequestContext| async move {
                    let data = "x".repeat(params["size"].as_u64().unwrap_or(0) as usize);
                    for i in 0..params["n"].as_u64().unwrap_or(0) {
                        ctx.peer()
                            .notify("notifications/message", json!({"level": "info", "data": data, "seq": i}))
                            .await
                            .map_err(ErrorObject::internal_error)?;
                    }
                    Ok::<_, ErrorObject>(json!({"done": true}))
                })
                .method("hang", |_: Value, ctx: RequestContext| async move {
                    ctx.peer()
                        .notify("notifications/progress", json!({"progressToken": 0, "progress": 1}))
                        .await
                        .map_err(ErrorObject::internal_error)?;
                    std::future::pending::<()>().await;
                    Ok::<_, ErrorObject>(json!({}))
                })
                .notification("block", |_: Value, _| async { tokio::time::sleep(Duration::from_secs(3)).await })
                .notification("note", |_: Value, _| async {}),
        )
    });
    let bound = server.bind("127.0.0.1:0").await.expect("bind");
    println!("listening on {}", bound.local_addr());
    let mut line = String::new();
    // Until the attacker closes our stdin.
    let _ = BufReader::new(tokio::io::stdin()).read_line(&mut line).await;
}

struct Target {
    child: Child,
    addr: std::net::SocketAddr,
    peak: Arc<AtomicU64>,
}

impl Target {
    async fn start() -> Target {
        let mut child = Command::new(std::env::current_exe().expect("this program"))
            .arg("target")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the target");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).await.expect("the target's address");
        let addr = line.trim().strip_prefix("listening on ").expect("listening").parse().expect("an address");
        let pid = child.id().expect("a pid");
        let peak = Arc::new(AtomicU64::new(0));
        let watch = peak.clone();
        // VmHWM is the peak already; polled so that it is known even if the target dies.
        std::thread::spawn(move || {
            while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                if let Some(kib) = field_kib(&status, "VmHWM:") {
                    watch.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Target { child, addr, peak }
    }

    fn peak_mib(&self) -> String {
        format!("{:.1} MiB", self.peak.load(Ordering::Relaxed) as f64 / 1024.0)
    }

    /// A fresh session answers `ping`: how long that took, and the target's memory now.
    async fn recovery(&self) -> String {
        let start = Instant::now();
        let ok = tokio::time::timeout(Duration::from_secs(20), async {
            let mut raw = Raw::connect(self.addr).await?;
            let session = raw.initialize().await?;
            raw.post(Some(&session), &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string()).await;
            let (status, body) = raw.response().await?;
            Some(status == 200 && body.contains("\"result\":{}"))
        })
        .await;
        let rss = self
            .child
            .id()
            .and_then(|pid| field_kib(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?, "VmRSS:"));
        let rss = rss.map_or("?".into(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0));
        match ok {
            Ok(Some(true)) => format!("a new session answers in {} ms; RSS then {rss}", start.elapsed().as_millis()),
            other => format!("no answer from a new session ({other:?}); RSS {rss}"),
        }
    }
}

fn field_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

// ---------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client

struct Raw {
    stream: BufReader<TcpStream>,
}

impl Raw {
    async fn connect(addr: std::net::SocketAddr) -> Option<Raw> {
        let stream = TcpStream::connect(addr).await.ok()?;
        let _ = stream.set_nodelay(true);
        Some(Raw { stream: BufReader::new(stream) })
    }

    fn head(session: Option<&str>, len: Option<usize>) -> String {
        let mut head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                        Accept: application/json, text/event-stream\r\n"
            .to_owned();
        if let Some(session) = session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        match len {
            Some(len) => head.push_str(&format!("Content-Length: {len}\r\n\r\n")),
            None => head.push_str("Transfer-Encoding: chunked\r\n\r\n"),
        }
        head
    }

    async fn post(&mut self, session: Option<&str>, body: &str) -> usize {
        let bytes = format!("{}{body}", Raw::head(session, Some(body.len())));
        let _ = self.stream.get_mut().write_all(bytes.as_bytes()).await;
        bytes.len()
    }

    /// A response's status and body (chunked or not), read to its end.
    async fn response(&mut self) -> Option<(u16, String)> {
        self.response_with_headers().await.map(|(status, _, body)| (status, body))
    }

    async fn response_with_headers(&mut self) -> Option<(u16, String, String)> {
        let (status, headers) = self.response_head().await?;
        let mut body = Vec::new();
        if headers.contains("transfer-encoding: chunked") {
            loop {
                let mut size = String::new();
                self.stream.read_line(&mut size).await.ok()?;
                let size = usize::from_str_radix(size.trim(), 16).ok()?;
                let mut chunk = vec![0; size + 2];
                self.stream.read_exact(&mut chunk).await.ok()?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(len) = headers.lines().find_map(|l| l.strip_prefix("content-length: ")) {
            let mut buf = vec![0; len.trim().parse().ok()?];
            self.stream.read_exact(&mut buf).await.ok()?;
            body = buf;
        }
        Some((status, headers, String::from_utf8_lossy(&body).into_owned()))
    }

    /// Status and the header block (lowercased).
    async fn response_head(&mut self) -> Option<(u16, String)> {
        let mut line = String::new();
        self.stream.read_line(&mut line).await.ok()?;
        let status = line.split(' ').nth(1)?.parse().ok()?;
        let mut headers = String::new();
        loop {
            let mut line = String::new();
            if self.stream.read_line(&mut line).await.ok()? == 0 {
                return None;
            }
            if line.trim().is_empty() {
                return Some((status, headers));
            }
            headers.push_str(&line.to_ascii_lowercase());
        }
    }

    async fn initialize(&mut self) -> Option<String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "attack", "version": "0"}}});
        self.post(None, &init.to_string()).await;
        let (status, headers) = self.response_head().await?;
        if status != 200 {
            return None;
        }
        let session = headers.lines().find_map(|l| l.strip_prefix("mcp-session-id: "))?.trim().to_owned();
        // The rest of the answer (an SSE stream ending after it).
        loop {
            let mut size = String::new();
            self.stream.read_line(&mut size).await.ok()?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; size + 2];
            self.stream.read_exact(&mut chunk).await.ok()?;
            if size == 0 {
                break;
            }
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        self.post(Some(&session), &initialized).await;
        self.response().await?;
        Some(session)
    }
}

// ---------------------------------------------------------------------------------------------
// The attacks: (bytes sent, what happened)

async fn sessions(t: &Target) -> (String, String) {
    let sent = Arc::new(AtomicUsize::new(0));
    let (ok, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (addr, sent, ok, refused) = (t.addr, sent.clone(), ok.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            let mut raw = Raw::connect(addr).await.expect("connect");
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "0"}}})
            .to_string();
            let mut one = None;
            for _ in 0..625 {
                sent.fetch_add(raw.post(None, &init).await, Ordering::Relaxed);
                match raw.response_with_headers().await {
                    Some((200, headers, _)) => {
                        ok.fetch_add(1, Ordering::Relaxed);
                        one = headers
                            .lines()
                            .find_map(|l| l.strip_prefix("mcp-session-id: "))
                            .map(|s| s.trim().to_owned());
                    }
                    Some((503, ..)) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            one
        }));
    }
    let mut one = None;
    for task in tasks {
        one = one.or(task.await.ok().flatten());
    }
    // Make room for the recovery's session: one `DELETE`.
    if let (Some(session), Some(mut raw)) = (one, Raw::connect(t.addr).await) {
        let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: {session}\r\n\r\n");
        let _ = raw.stream.get_mut().write_all(delete.as_bytes()).await;
        let _ = raw.response().await;
    }
    let outcome = format!(
        "{} sessions, {} answered `503` (the 1,024 bound); one `DELETE` makes room (the rest end after 5 min idle)",
        ok.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed)
    );
    (mib(sent.load(Ordering::Relaxed)), outcome)
}

async fn reader(t: &Target) -> (String, String) {
    let mut raw = Raw::connect(t.addr).await.expect("connect");
    let session = raw.initialize().await.expect("a session");
    let (n, size) = (4000, 64 * 1024);
    let flood = json!({"jsonrpc": "2.0", "id": 1, "method": "flood", "params": {"n": n, "size": size}}).to_string();
    let sent = raw.post(Some(&session), &flood).await;
    // Never read, for 3 s: the session's undelivered bytes stop at its backlog bound.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = t.peak_mib();
    // Then read it all.
    let start = Instant::now();
    let (status, body) = raw.response().await.expect("the stream");
    let events = body.matches("notifications/message").count();
    let answered = body.contains("\"done\":true");
    let outcome = format!(
        "{n} × {} KiB sent by the handler to a reader that does not read for 3 s: peak {held} while stalled; \
         read then: HTTP {status}, {events} events and the answer ({answered}) in {} ms",
        size / 1024,
        start.elapsed().as_millis()
    );
    (mib(sent), outcome)
}

async fn chunked(t: &Target) -> (String, String) {
    let mut raw = Raw::connect(t.addr).await.expect("connect");
    let session = raw.initialize().await.expect("a session");
    let head = Raw::head(Some(&session), None);
    let mut sent = head.len();
    raw.stream.get_mut().write_all(head.as_bytes()).await.expect("head");
    let chunk = format!("{:x}\r\n{}\r\n", MIB, "x".repeat(MIB));
    // Up to 1 GiB, until the server answers and stops reading.
    let writer = raw.stream.get_mut();
    for _ in 0..1024 {
        match tokio::time::timeout(Duration::from_secs(2), writer.write_all(chunk.as_bytes())).await {
            Ok(Ok(())) => sent += chunk.len(),
            _ => break,
        }
    }
    let answer = tokio::time::timeout(Duration::from_secs(5), raw.response()).await.ok().flatten();
    let outcome = match answer {
        Some((status, body)) => format!(
            "HTTP {status} ({}) once 4 MiB had come; the rest unread",
            body.chars().take(60).collect::<String>()
        ),
        None => "no answer".into(),
    };
    (mib(sent), outcome)
}

async fn inbound(t: &Target) -> (String, String) {
    let mut raw = Raw::connect(t.addr).await.expect("connect");
    let session = raw.initialize().await.expect("a session");
    let block = json!({"jsonrpc": "2.0", "method": "block"}).to_string();
    raw.post(Some(&session), &block).await;
    raw.response().await;
    let data = "x".repeat(MIB);
    let note = json!({"jsonrpc": "2.0", "method": "note", "params": {"data": data}}).to_string();
    let (sent, accepted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (addr, session, note, sent, accepted) =
            (t.addr, session.clone(), note.clone(), sent.clone(), accepted.clone());
        tasks.push(tokio::spawn(async move {
            let mut raw = Raw::connect(addr).await.expect("connect");
            for _ in 0..8 {
                sent.fetch_add(raw.post(Some(&session), &note).await, Ordering::Relaxed);
                if let Some((202, _)) = raw.response().await {
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let outcome = format!(
        "512 × 1 MiB notifications on 64 connections to a session whose handler holds its messages for 3 s: \
         {} taken (`202`) in {} ms",
        accepted.load(Ordering::Relaxed),
        start.elapsed().as_millis()
    );
    (mib(sent.load(Ordering::Relaxed)), outcome)
}

async fn cancel(t: &Target) -> (String, String) {
    let mut sent = 0;
    let (mut streamed, mut refused) = (0, 0);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "hang", "params": {"_meta": meta}}).to_string();
    for _ in 0..5000 {
        let mut raw = Raw::connect(t.addr).await.expect("connect");
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: hang\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        sent += request.len();
        let _ = raw.stream.get_mut().write_all(request.as_bytes()).await;
        match raw.response_head().await {
            Some((200, _)) => streamed += 1,
            Some((503, _)) => refused += 1,
            _ => {}
        }
        // Closing the stream (the connection) is the cancellation.
        drop(raw);
    }
    let outcome = format!(
        "5,000 stateless (2026-07-28) requests whose handler never answers, each stream closed after its first \
         event: {streamed} streamed, {refused} refused (`503`: cancelled ones not yet given back, of 1,024)"
    );
    (mib(sent), outcome)
}

async fn slow_bodies(t: &Target) -> (String, String) {
    let mut held = Vec::new();
    let mut sent = 0;
    let mut refused = 0;
    for _ in 0..1100 {
        let Some(mut raw) = Raw::connect(t.addr).await else { break };
        let head = Raw::head(Some("0"), Some(MIB));
        sent += head.len() + 1;
        let _ = raw.stream.get_mut().write_all(head.as_bytes()).await;
        let _ = raw.stream.get_mut().write_all(b"{").await;
        held.push(raw);
    }
    // Those past the connection bound are answered 503 at once, and so are those past the
    // pre-session byte budget (their declared bytes counted before they are read).
    let answers = futures::future::join_all(
        held.iter_mut().map(|raw| tokio::time::timeout(Duration::from_secs(2), raw.response_head())),
    )
    .await;
    refused += answers.iter().filter(|a| matches!(a, Ok(Some((503, _))))).count();
    let outcome = format!(
        "1,100 connections each declaring a 1 MiB body (no session) and sending 1 byte: {} waiting, {refused} \
         answered `503` (past the 1,024 connections or the 64 MiB pre-session budget); the waiting ones get \
         `408` after the 30 s body timeout (dropped here)",
        held.len() - refused
    );
    drop(held);
    (mib(sent), outcome)
}

/// Many slow bodies outside a session: each connection declares a 4 MiB `initialize` body,
/// sends all of it but the last byte, and stalls. Without a server-wide budget each would be
/// held (up to 1,024 × 4 MiB); with it, what fits is held and the rest get `503` at once.
async fn pre_session(t: &Target) -> (String, String) {
    const N: usize = 256;
    const LEN: usize = 4 * MIB;
    let sent = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..N {
        let (addr, sent) = (t.addr, sent.clone());
        tasks.push(tokio::spawn(async move {
            let mut raw = Raw::connect(addr).await?;
            let head = Raw::head(None, Some(LEN));
            raw.stream.get_mut().write_all(head.as_bytes()).await.ok()?;
            sent.fetch_add(head.len(), Ordering::Relaxed);
            let piece = vec![b' '; 64 * 1024];
            let mut left = LEN - 1;
            // Written while the server reads; a refused body's connection is closed under us.
            let writing = async {
                while left > 0 {
                    let n = left.min(piece.len());
                    if raw.stream.get_mut().write_all(&piece[..n]).await.is_err() {
                        break;
                    }
                    sent.fetch_add(n, Ordering::Relaxed);
                    left -= n;
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(20), writing).await;
            // Refused: a 503 is there. Held: nothing comes until the body timeout.
            let answer = tokio::time::timeout(Duration::from_secs(3), raw.response_head()).await;
            Some((answer.ok().flatten().map(|(status, _)| status), raw))
        }));
    }
    let (mut held, mut refused, mut other) = (Vec::new(), 0, 0);
    for task in tasks {
        match task.await.ok().flatten() {
            Some((None, raw)) => held.push(raw),
            Some((Some(503), _)) => refused += 1,
            _ => other += 1,
        }
    }
    let outcome = format!(
        "{N} connections each declaring a 4 MiB `initialize` body and sending all of it but its last byte: \
         {} held (the 64 MiB pre-session budget), {refused} answered `503` with `Retry-After: 1`, {other} else",
        held.len()
    );
    drop(held);
    (mib(sent.load(Ordering::Relaxed)), outcome)
}
