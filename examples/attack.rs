//! Attack drivers: a peer that tries to make the reference peer (`conformance_peer`) or the
//! example key-value server (`tcp_server`) hold memory, hold a connection, or misread what it is
//! sent. Each attack prints one table row: what was sent, the target's peak resident memory
//! (VmHWM from `/proc/<pid>/status`, Linux only) and what happened. The attacker writes raw bytes
//! and keeps nothing, so the numbers are the target's.
//!
//! ```text
//! scripts/attack.sh                      # build in release and run every attack against this tree
//! scripts/attack.sh 33117f3              # the same against a commit too (before / after)
//! cargo run --release --example attack -- --peer target/release/examples/conformance_peer \
//!     --server target/release/examples/tcp_server [--only batch,streams]
//! ```
//!
//! Not part of `cargo test` (it only has to build there): the attacks take minutes and gigabytes
//! on a build without the bounds.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, Command};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// How long an attack waits for the target before it reports what it saw.
const PATIENCE: Duration = Duration::from_secs(20);

struct Options {
    peer: PathBuf,
    server: PathBuf,
    only: Option<Vec<String>>,
}

fn options() -> Options {
    let mut o = Options {
        peer: "target/release/examples/conformance_peer".into(),
        server: "target/release/examples/tcp_server".into(),
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--peer" => o.peer = value().into(),
            "--server" => o.server = value().into(),
            "--only" => o.only = Some(value().split(',').map(str::to_owned).collect()),
            "victim-progress" => {}
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    o
}

fn usage(why: &str) -> ! {
    eprintln!("{why}\nusage: attack [--peer PATH] [--server PATH] [--only NAME,...]");
    std::process::exit(2)
}

/// A row of the report.
struct Row {
    attack: String,
    sent: String,
    peak: String,
    outcome: String,
}

#[tokio::main]
async fn main() {
    if std::env::args().nth(1).as_deref() == Some("victim-progress") {
        victim_progress().await;
        return;
    }
    let o = options();
    let all: [(&str, &str); 11] = [
        ("batch", "2 MB batch of a million `1`s"),
        ("arrays", "batch members and an error object that are arrays"),
        ("readahead", "1,024 slow requests, a pending call, then 1,500 × 256 KiB"),
        ("progress", "200 × 1 MiB progress reports nobody takes"),
        ("streams", "200,000 streams offered, never pulled"),
        ("ids", "ids 2^64 + 1, 1.50, 1e2; 2^64 and 2^64 + 1 in flight"),
        ("logs", "a 1 MB id on a stray response"),
        ("cancel", "cancel a request queued behind 1,024 slow ones"),
        ("broadcast", "a stalled client, 300 × 1 MB kv/set from another"),
        ("broadcast-small", "a stalled client, 1,000 × 60 KB kv/set from another"),
        ("trickle", "a message at a byte a second"),
    ];
    println!("| attack | bytes sent | target's peak memory (VmHWM) | what happened |");
    println!("|---|---:|---:|---|");
    for (name, _) in all {
        if o.only.as_ref().is_some_and(|only| !only.iter().any(|n| n == name)) {
            continue;
        }
        let row = match name {
            "batch" => batch(&o).await,
            "arrays" => arrays(&o).await,
            "readahead" => readahead(&o).await,
            "progress" => progress().await,
            "streams" => streams(&o).await,
            "ids" => ids(&o).await,
            "logs" => logs(&o).await,
            "cancel" => cancel(&o).await,
            "broadcast" => broadcast(&o, 300, 1_000_000).await,
            "broadcast-small" => broadcast(&o, 1000, 60_000).await,
            "trickle" => trickle(&o).await,
            _ => unreachable!(),
        };
        println!("| {} | {} | {} | {} |", row.attack, row.sent, row.peak, row.outcome);
        let _ = std::io::stdout().flush();
    }
}

// ---------------------------------------------------------------------------------------------
// The targets and the wire

/// A target process with its peak memory watched.
struct Target {
    child: Child,
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Target {
    fn spawn(path: &PathBuf, args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Target {
        let mut cmd = Command::new(path);
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr).kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
        let pid = child.id().expect("a pid");
        let (peak, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (p, s) = (peak.clone(), stop.clone());
        // VmHWM is the peak already; polled so that it is known even if the target exits.
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match std::fs::read_to_string(format!("/proc/{pid}/status")) {
                    Ok(status) => {
                        if let Some(kib) = hwm(&status) {
                            p.fetch_max(kib, Ordering::Relaxed);
                        }
                    }
                    Err(_) => return,
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Target { child, peak, stop }
    }

    /// The key-value example server on a free loopback port, and the address it says it listens
    /// on (its log is read on, so that it never blocks on a full pipe); the row for `attack` if
    /// it does not start.
    async fn tcp_server(o: &Options, attack: &str) -> Result<(Target, String), Row> {
        let mut t = Target::spawn(&o.server, &["--addr", "127.0.0.1:0"], &[("RUST_LOG", "warn")], Stdio::piped());
        let mut err = tokio::io::BufReader::new(t.child.stderr.take().expect("stderr"));
        let mut addr = String::new();
        while addr.is_empty() {
            let mut line = String::new();
            if tokio::io::AsyncBufReadExt::read_line(&mut err, &mut line).await.unwrap_or(0) == 0 {
                let outcome = "the server did not start".into();
                return Err(Row { attack: attack.into(), sent: "-".into(), peak: t.peak(), outcome });
            }
            if let Some(a) = line.trim().strip_prefix("serving the key-value store on tcp ") {
                addr = a.split_whitespace().next().unwrap_or_default().to_owned();
            }
        }
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = err.read_to_end(&mut sink).await;
        });
        Ok((t, addr))
    }

    fn peak(&self) -> String {
        if let Some(kib) = self.child.id().and_then(vm_hwm_kib) {
            self.peak.fetch_max(kib, Ordering::Relaxed);
        }
        mib(self.peak.load(Ordering::Relaxed) as usize * KIB)
    }

    /// Whether it has exited (after at most `wait`).
    async fn exited_within(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.child.wait()).await.is_ok()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// VmHWM of a `/proc/<pid>/status` text, in KiB.
fn hwm(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    hwm(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

fn mib(bytes: usize) -> String {
    if bytes == 0 {
        return "–".into();
    }
    if bytes >= 10 * MIB { format!("{} MiB", bytes / MIB) } else { format!("{:.1} MiB", bytes as f64 / MIB as f64) }
}

fn size(bytes: usize) -> String {
    if bytes >= MIB {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else if bytes >= KIB {
        format!("{} KB", bytes / 1000)
    } else {
        format!("{bytes} B")
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Content-Length frames read from a stream (bodies over `keep` bytes are counted, not kept).
struct Frames<R> {
    io: R,
    buf: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Frames<R> {
    fn new(io: R) -> Self {
        Frames { io, buf: Vec::new() }
    }

    /// The next body; `None` at EOF (or after `wait`).
    async fn next(&mut self, wait: Duration) -> Option<Vec<u8>> {
        tokio::time::timeout(wait, async {
            loop {
                if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let header = String::from_utf8_lossy(&self.buf[..end]).to_string();
                    let len: usize = header
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .and_then(|n| n.trim().parse().ok())
                        .expect("a Content-Length header");
                    if self.buf.len() >= end + 4 + len {
                        let body = self.buf[end + 4..end + 4 + len].to_vec();
                        self.buf.drain(..end + 4 + len);
                        return Some(body);
                    }
                }
                let mut chunk = vec![0u8; 64 * KIB];
                match self.io.read(&mut chunk).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// The next message as JSON.
    async fn json(&mut self, wait: Duration) -> Option<Value> {
        self.next(wait).await.map(|b| serde_json::from_slice(&b).expect("the target wrote JSON"))
    }

    /// Messages until one answers `id` (the others are dropped).
    async fn answer(&mut self, id: &Value, wait: Duration) -> Option<Value> {
        let deadline = Instant::now() + wait;
        loop {
            let m = self.json(deadline.saturating_duration_since(Instant::now())).await?;
            if &m["id"] == id && m.get("method").is_none() {
                return Some(m);
            }
        }
    }
}

async fn send<W: AsyncWrite + Unpin>(w: &mut W, message: &Value) {
    let _ = w.write_all(&frame(message.to_string().as_bytes())).await;
}

/// The reference peer over its stdio.
fn peer(o: &Options) -> (Target, tokio::process::ChildStdin, Frames<tokio::process::ChildStdout>) {
    let mut t = Target::spawn(&o.peer, &[], &[], Stdio::null());
    let stdin = t.child.stdin.take().expect("stdin");
    let stdout = Frames::new(t.child.stdout.take().expect("stdout"));
    (t, stdin, stdout)
}

/// Time from now until the peer answers an `echo` (it is serving again), or `None` if it is gone.
async fn probe<W: AsyncWrite + Unpin, R: AsyncRead + Unpin>(w: &mut W, r: &mut Frames<R>) -> Option<Duration> {
    let start = Instant::now();
    let id = json!("probe");
    send(w, &json!({"jsonrpc":"2.0","id":id,"method":"echo","params":[1]})).await;
    r.answer(&id, PATIENCE).await.map(|_| start.elapsed())
}

fn ms(d: Duration) -> String {
    if d >= Duration::from_secs(10) { format!("{:.0} s", d.as_secs_f64()) } else { format!("{} ms", d.as_millis()) }
}

// ---------------------------------------------------------------------------------------------
// The attacks

/// Item 1: one frame whose answer is 75 times its size.
async fn batch(o: &Options) -> Row {
    let (t, mut w, mut r) = peer(o);
    let body = format!("[{}1]", "1,".repeat(999_999));
    let start = Instant::now();
    let _ = w.write_all(&frame(body.as_bytes())).await;
    let answer = r.next(Duration::from_secs(60)).await;
    let answered = start.elapsed();
    let outcome = match &answer {
        Some(a) if a.starts_with(b"[") => format!("answered with an array of {} in {}", size(a.len()), ms(answered)),
        Some(a) => format!("answered `{}` in {}", String::from_utf8_lossy(&a[..a.len().min(120)]), ms(answered)),
        None => "no answer".into(),
    };
    let recovered = probe(&mut w, &mut r).await.map_or("gone".into(), ms);
    Row {
        attack: "1 batch amplification".into(),
        sent: size(body.len()),
        peak: t.peak(),
        outcome: format!("{outcome}; serving again after {recovered}"),
    }
}

/// Item 2: arrays in object positions.
async fn arrays(o: &Options) -> Row {
    let (t, mut w, mut r) = peer(o);
    let sent = br#"[["2.0",1,"echo",[5]]]"#;
    let _ = w.write_all(&frame(sent)).await;
    let member = r.json(PATIENCE).await.unwrap_or(Value::Null);
    // The peer calls us back; we answer with an error that is an array.
    send(&mut w, &json!({"jsonrpc":"2.0","id":"cb","method":"callBack","params":{"method":"x"}})).await;
    let call = r.json(PATIENCE).await.unwrap_or(Value::Null);
    send(&mut w, &json!({"jsonrpc":"2.0","id":call["id"],"error":[-32050,"x"]})).await;
    let back = r.answer(&json!("cb"), PATIENCE).await.unwrap_or(Value::Null);
    Row {
        attack: "2 arrays as messages".into(),
        sent: size(sent.len() + 120),
        peak: t.peak(),
        outcome: format!("`[[\"2.0\",1,\"echo\",[5]]]` → `{member}`; `\"error\":[-32050,\"x\"]` → `{}`", back["error"]),
    }
}

/// Item 3: read-ahead past the handler slots while the target waits for an answer of ours.
async fn readahead(o: &Options) -> Row {
    let (mut t, mut w, mut r) = peer(o);
    let mut sent = 0;
    // The peer calls us back and waits: it reads on.
    send(&mut w, &json!({"jsonrpc":"2.0","id":"cb","method":"callBack","params":{"method":"hold"}})).await;
    let _ = r.json(PATIENCE).await;
    // What it writes from here on is read and dropped, so that it never waits on us.
    tokio::spawn(async move { while r.next(Duration::from_secs(120)).await.is_some() {} });
    let mut burst = Vec::new();
    for i in 0..1024 {
        burst.extend(frame(
            json!({"jsonrpc":"2.0","id":i,"method":"slow","params":{"ms":60_000}}).to_string().as_bytes(),
        ));
    }
    let pad = "x".repeat(256 * KIB);
    let start = Instant::now();
    let _ = w.write_all(&burst).await;
    sent += burst.len();
    for i in 0..1500 {
        let one = frame(json!({"jsonrpc":"2.0","id":10_000 + i,"method":"echo","params":[pad]}).to_string().as_bytes());
        sent += one.len();
        if w.write_all(&one).await.is_err() {
            break;
        }
    }
    let outcome = if t.exited_within(Duration::from_secs(3)).await {
        format!("connection closed after {} (the peer exits)", ms(start.elapsed()))
    } else {
        "all held by the peer until its slow handlers end (60 s)".to_owned()
    };
    Row { attack: "3 read-ahead in messages".into(), sent: size(sent), peak: t.peak(), outcome }
}

/// Item 5a: progress reports for a token of the victim's that it never takes. The victim is this
/// program (`attack victim-progress`): a connection on stdio that calls `work` with a progress
/// token and never drives the receiver.
async fn progress() -> Row {
    let me = std::env::current_exe().expect("this program's path");
    let mut t = Target::spawn(&me, &["victim-progress"], &[], Stdio::null());
    let mut w = t.child.stdin.take().expect("stdin");
    let mut r = Frames::new(t.child.stdout.take().expect("stdout"));
    let call = r.json(PATIENCE).await.unwrap_or(Value::Null);
    let token = call["params"]["progress"].clone();
    tokio::spawn(async move { while r.next(Duration::from_secs(120)).await.is_some() {} });
    let value = "x".repeat(MIB);
    let mut sent = 0;
    let start = Instant::now();
    for _ in 0..200 {
        let one = frame(
            json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":token,"value":value}})
                .to_string()
                .as_bytes(),
        );
        sent += one.len();
        if w.write_all(&one).await.is_err() {
            break;
        }
    }
    let outcome = if t.exited_within(Duration::from_secs(3)).await {
        format!("connection closed after {}", ms(start.elapsed()))
    } else {
        "all held until the call ends".to_owned()
    };
    Row { attack: "5 progress reports".into(), sent: size(sent), peak: t.peak(), outcome }
}

async fn victim_progress() {
    let conn = jsonrpc_duplex::Connection::builder().stdio();
    let (token, _receiver) = conn.handle().progress::<Value>();
    let _ = conn.handle().request::<Value>("work", json!({"progress": token})).await;
    // Ended: the connection is gone (or the call was answered).
    std::process::exit(0);
}

/// Item 5b: streams offered and never pulled.
async fn streams(o: &Options) -> Row {
    let (t, mut w, mut r) = peer(o);
    const N: usize = 200_000;
    let reader = tokio::spawn(async move {
        let (mut tokens, mut refused, mut first_refusal) = (0, 0, None);
        for _ in 0..N {
            match r.json(PATIENCE).await {
                Some(m) if m["result"]["token"].is_u64() => tokens += 1,
                Some(m) => {
                    refused += 1;
                    first_refusal.get_or_insert_with(|| m["error"]["message"].as_str().unwrap_or("").to_owned());
                }
                None => break,
            }
        }
        (tokens, refused, first_refusal, r)
    });
    let mut sent = 0;
    let mut burst = Vec::new();
    for i in 0..N {
        burst.extend(frame(json!({"jsonrpc":"2.0","id":i,"method":"countTo","params":{"n":1}}).to_string().as_bytes()));
        if burst.len() > 64 * KIB || i == N - 1 {
            sent += burst.len();
            let _ = w.write_all(&burst).await;
            burst.clear();
        }
    }
    let (tokens, refused, first, mut r) = reader.await.expect("the reader");
    let recovered = probe(&mut w, &mut r).await.map_or("gone".into(), ms);
    let why = first.map(|m| format!(" (`{}`)", m.chars().take(90).collect::<String>())).unwrap_or_default();
    Row {
        attack: "5 offered streams".into(),
        sent: size(sent),
        peak: t.peak(),
        outcome: format!("{tokens} streams live, {refused} refused{why}; probe answered in {recovered}"),
    }
}

/// Item 6: ids come back as sent; 2^64 and 2^64 + 1 are two requests.
async fn ids(o: &Options) -> Row {
    let (t, mut w, mut r) = peer(o);
    let mut out = Vec::new();
    for id in ["18446744073709551617", "1.50", "1e2"] {
        let _ = w
            .write_all(&frame(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"echo","params":[1]}}"#).as_bytes()))
            .await;
        let back = r.next(PATIENCE).await.unwrap_or_default();
        let text = String::from_utf8_lossy(&back);
        let got = text.split(r#""id":"#).nth(1).and_then(|s| s.split(',').next()).unwrap_or("?").to_owned();
        out.push(format!("{id} → {got}"));
    }
    for id in ["18446744073709551616", "18446744073709551617"] {
        let _ = w
            .write_all(&frame(
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"slow","params":{{"ms":200}}}}"#).as_bytes(),
            ))
            .await;
    }
    let mut both = Vec::new();
    for _ in 0..2 {
        if let Some(b) = r.next(Duration::from_secs(2)).await {
            let text = String::from_utf8_lossy(&b).into_owned();
            both.push(if text.contains("\"error\"") { "refused as in use".to_owned() } else { "answered".to_owned() });
        }
    }
    out.push(format!("2^64 and 2^64 + 1 in flight: {}", both.join(", ")));
    Row { attack: "6 ids as spelled".into(), sent: "200 B".into(), peak: t.peak(), outcome: out.join("; ") }
}

/// Item 8: the longest log line a peer can make the target write.
async fn logs(o: &Options) -> Row {
    let mut t = Target::spawn(&o.peer, &[], &[("RUST_LOG", "warn")], Stdio::piped());
    let mut w = t.child.stdin.take().expect("stdin");
    let mut r = Frames::new(t.child.stdout.take().expect("stdout"));
    let mut err = t.child.stderr.take().expect("stderr");
    let id = "i".repeat(1_000_000);
    let sent = frame(json!({"jsonrpc":"2.0","id":id,"result":1}).to_string().as_bytes());
    let _ = w.write_all(&sent).await;
    let _ = probe(&mut w, &mut r).await;
    drop(w);
    let _ = t.exited_within(PATIENCE).await;
    let mut log = Vec::new();
    let _ = err.read_to_end(&mut log).await;
    let longest = log.split(|b| *b == b'\n').map(<[u8]>::len).max().unwrap_or(0);
    Row {
        attack: "8 log lines".into(),
        sent: size(sent.len()),
        peak: t.peak(),
        outcome: format!("longest log line: {}", size(longest)),
    }
}

/// Item 9b: a queued request cancelled while every handler slot is taken.
async fn cancel(o: &Options) -> Row {
    let (t, mut w, mut r) = peer(o);
    let mut burst = Vec::new();
    for i in 0..1024 {
        burst
            .extend(frame(json!({"jsonrpc":"2.0","id":i,"method":"slow","params":{"ms":3000}}).to_string().as_bytes()));
    }
    burst.extend(frame(br#"{"jsonrpc":"2.0","id":"queued","method":"slow","params":{"ms":1}}"#));
    let _ = w.write_all(&burst).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = Instant::now();
    send(&mut w, &json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"queued"}})).await;
    let answered = r.answer(&json!("queued"), PATIENCE).await;
    let outcome = match answered {
        Some(a) => format!("`{}` after {}", a["error"]["code"], ms(start.elapsed())),
        None => "never answered".into(),
    };
    Row { attack: "9 cancel a queued request".into(), sent: size(burst.len() + 80), peak: t.peak(), outcome }
}

/// Item 4: one client stops reading while another sets `count` values of `value_size` bytes
/// (each pushed to all).
async fn broadcast(o: &Options, count: usize, value_size: usize) -> Row {
    let (t, addr) = match Target::tcp_server(o, "4 broadcast backlog").await {
        Ok(started) => started,
        Err(row) => return row,
    };
    // Two clients; each answers the server's name question. The stalled one then reads nothing.
    let connect = |name: &'static str| {
        let addr = addr.clone();
        async move {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_recv_buffer_size(16 * KIB as u32).unwrap();
            let stream = socket.connect(addr.parse().unwrap()).await.unwrap();
            let (r, mut w) = stream.into_split();
            let mut r = Frames::new(r);
            // The first message may be a push (another client joined): answer the question.
            loop {
                let Some(m) = r.json(PATIENCE).await else { break };
                if m["method"] == "client/name" {
                    send(&mut w, &json!({"jsonrpc":"2.0","id":m["id"],"result":name})).await;
                    break;
                }
            }
            (r, w)
        }
    };
    let (stalled_r, _stalled_w) = connect("stalled").await;
    let (mut r, mut w) = connect("writer").await;
    let value = "v".repeat(value_size);
    let mut sent = 0;
    let start = Instant::now();
    // The writer reads its own answers and pushes as they come, counting them.
    let reader = tokio::spawn(async move {
        let (mut ok, mut refused, mut why) = (0, 0, String::new());
        while ok + refused < count {
            let Some(m) = r.json(Duration::from_secs(60)).await else { break };
            if m.get("method").is_some() {
                continue;
            }
            if m.get("error").is_some() {
                refused += 1;
                why = m["error"]["message"].as_str().unwrap_or("").chars().take(70).collect();
            } else {
                ok += 1;
            }
        }
        (ok, refused, why)
    });
    for i in 0..count {
        let one = frame(
            json!({"jsonrpc":"2.0","id":i,"method":"kv/set","params":{"key":"k","value":value}}).to_string().as_bytes(),
        );
        sent += one.len();
        if w.write_all(&one).await.is_err() {
            break;
        }
    }
    let (ok, refused, why) = reader.await.unwrap_or_default();
    let elapsed = start.elapsed();
    // Whether the stalled client is still connected, by the server's own list (its socket is
    // not read: that would let it catch up), asked again each second for 12 s.
    let (mut observer_r, mut observer_w) = connect("observer").await;
    let _keep = stalled_r;
    let mut stalled = "still connected after 12 s".to_owned();
    for i in 0..12 {
        let id = json!(format!("who-{i}"));
        send(&mut observer_w, &json!({"jsonrpc":"2.0","id":id,"method":"kv/who"})).await;
        let Some(who) = observer_r.answer(&id, PATIENCE).await else { break };
        if !who["result"].as_array().is_some_and(|names| names.iter().any(|n| n == "stalled")) {
            stalled = format!("disconnected (gone {} after the last set)", ms(start.elapsed() - elapsed));
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let refused = if refused > 0 { format!(", {refused} refused (`{why}`)") } else { String::new() };
    Row {
        attack: format!("4 broadcast backlog ({count} × {} values)", size(value_size)),
        sent: size(sent),
        peak: t.peak(),
        outcome: format!("{ok} sets taken{refused} in {}; the stalled client: {stalled}", ms(elapsed)),
    }
}

/// Item 9a: a message trickled in, a byte a second.
async fn trickle(o: &Options) -> Row {
    let (t, addr) = match Target::tcp_server(o, "9 trickle").await {
        Ok(started) => started,
        Err(row) => return row,
    };
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let message = frame(br#"{"jsonrpc":"2.0","id":1,"method":"kv/list"}"#);
    let start = Instant::now();
    let mut sent = 0;
    let mut sink = vec![0u8; 4 * KIB];
    let limit = Duration::from_secs(45);
    let held = loop {
        if start.elapsed() > limit {
            break None;
        }
        tokio::select! {
            read = stream.read(&mut sink) => if matches!(read, Ok(0) | Err(_)) { break Some(start.elapsed()) },
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                // Never the last byte: the message stays incomplete.
                if stream.write_all(&message[sent % (message.len() - 1)..][..1]).await.is_err() {
                    break Some(start.elapsed());
                }
                sent += 1;
            }
        }
    };
    let outcome = match held {
        Some(d) => format!("connection closed after {}", ms(d)),
        None => format!("still open after {} (a connection slot held for as long as it trickles)", ms(limit)),
    };
    Row { attack: "9 trickle".into(), sent: size(sent), peak: t.peak(), outcome }
}
