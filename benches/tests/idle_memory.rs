//! What a connection holds while it waits, counted in heap bytes (a counting global allocator,
//! as the `compare` bench's row F): after a call to the peer timed out, after a burst of
//! messages the peer read slowly, and while it merely waits. Each connection's peer is a raw
//! byte stream (not our `Connection`), read by a task of its own.
//!
//! Heap bytes are exact (no timing in them); where the writer lets go of its buffers only after
//! its last write, the check waits for the figure to come down, within a bounded time.

use std::time::{Duration, Instant};

use jsonrpc_duplex::{CallOptions, Connection, Error, Framing};
use jsonrpc_duplex_benches::alloc::{Counting, snapshot};
use tokio::io::{AsyncReadExt, DuplexStream};

#[global_allocator]
static ALLOC: Counting = Counting;

const CONNECTIONS: usize = 100;

/// The heap is counted for the whole process: one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

fn live() -> i64 {
    snapshot().live_bytes
}

/// A raw peer that reads everything and answers nothing; it counts the newlines it read.
fn silent_peer(mut io: DuplexStream, lines: tokio::sync::mpsc::UnboundedSender<usize>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 512];
        loop {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let _ = lines.send(buf[..n].iter().filter(|b| **b == b'\n').count());
                }
            }
        }
    })
}

/// Wait (bounded) until the heap held above `base` per connection is at most `bound` bytes;
/// the figure reached.
async fn settles_within(base: i64, bound: i64) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let each = (live() - base) / CONNECTIONS as i64;
        if each <= bound || Instant::now() > deadline {
            return each;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

struct Pairs {
    conns: Vec<Connection>,
    peers: Vec<tokio::task::JoinHandle<()>>,
    lines: tokio::sync::mpsc::UnboundedReceiver<usize>,
}

/// `CONNECTIONS` connections in newline framing, each with a silent peer behind a pipe of
/// `pipe` bytes, each after one notification (so that the pipe has its buffer already).
async fn open(pipe: usize) -> Pairs {
    let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
    let mut conns = Vec::new();
    let mut peers = Vec::new();
    for _ in 0..CONNECTIONS {
        let (a, b) = tokio::io::duplex(pipe);
        conns.push(Connection::builder().framing(Framing::NewlineDelimited).connect_io(a));
        peers.push(silent_peer(b, tx.clone()));
    }
    let mut pairs = Pairs { conns, peers, lines };
    for c in &pairs.conns {
        c.handle().notify("hello", ()).await.expect("notify");
    }
    pairs.read_lines(CONNECTIONS).await;
    pairs
}

impl Pairs {
    /// Wait until the peers have read `n` lines in all.
    async fn read_lines(&mut self, n: usize) {
        let mut seen = 0;
        while seen < n {
            let more = tokio::time::timeout(Duration::from_secs(10), self.lines.recv()).await;
            seen += more.expect("the peers read every line in time").expect("a peer");
        }
    }

    async fn close(self) {
        drop(self.conns);
        for p in self.peers {
            p.await.expect("peer");
        }
    }
}

/// A call to the peer that times out leaves nothing behind but the id it remembers (so that a
/// late answer is absorbed): about 300 bytes, before this fix as after it. What grew the
/// `tcp_server` example's connections when its `client/name` call timed out was what the
/// timeout sets off there: every connection broadcasts its `joined` event to every other one at
/// the same moment (see the next test).
#[test]
fn a_timed_out_call_leaves_nothing_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    runtime().block_on(async {
        let mut pairs = open(64 * 1024).await;
        let base = live();
        let mut calls = Vec::new();
        for c in &pairs.conns {
            let h = c.handle();
            calls.push(tokio::spawn(async move {
                let options = CallOptions::new().timeout(Duration::from_millis(50));
                h.request_with::<serde_json::Value>("client/name", (), options).await
            }));
        }
        for c in calls {
            assert!(matches!(c.await.expect("call"), Err(Error::Timeout(_))));
        }
        // Each peer read the call and its cancellation.
        pairs.read_lines(2 * CONNECTIONS).await;
        let each = settles_within(base, 1024).await;
        eprintln!("held per connection after a timed-out call: {each} bytes");
        assert!(each <= 1024, "each connection holds {each} bytes more after its call timed out");
        pairs.close().await;
    });
}

/// A burst of messages queued faster than the peer reads grows the write buffers (the queue's
/// tail and the writer's batch, swapped back and forth); once the peer has read them all, they
/// are given back. Before, each connection kept both, about 75 KiB after this burst (the
/// `tcp_server` example's 74 KiB per connection).
#[test]
fn a_burst_gives_its_write_buffers_back() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    runtime().block_on(async {
        let mut pairs = open(1024).await;
        let base = live();
        let burst = 500;
        let mut senders = Vec::new();
        for c in &pairs.conns {
            let h = c.handle();
            senders.push(tokio::spawn(async move {
                for seq in 0..burst {
                    h.notify("event", (seq, "someone joined the room")).await.expect("notify");
                }
            }));
        }
        for s in senders {
            s.await.expect("sender");
        }
        pairs.read_lines(burst * CONNECTIONS).await;
        // The pipe's own buffer may have grown to its 1 KiB.
        let each = settles_within(base, 4096).await;
        eprintln!("held per connection after a burst of {burst} notifications: {each} bytes");
        assert!(each <= 4096, "each connection holds {each} bytes more after a burst");
        pairs.close().await;
    });
}

/// A connection, its pipe and its raw peer's task (its 512-byte buffer), in a debug build, with
/// no read or write buffer and only its reader task running: about 6.2 KiB (one holding its
/// 8 KiB read buffer is over 16 KiB; one that also ran its writer and dispatcher tasks, 8.5 KiB).
const IDLE_BOUND: i64 = 8 * 1024;

/// An idle connection holds no read buffer and no write buffer: what one costs, opened and
/// then idle after a message each way, stays far under the 8 KiB read buffer it used to hold.
#[test]
fn an_idle_connection_holds_no_buffers() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    runtime().block_on(async {
        let base = live();
        let pairs = open(64 * 1024).await;
        let each = settles_within(base, IDLE_BOUND).await;
        eprintln!("held per idle connection (and its raw peer): {each} bytes");
        assert!(each <= IDLE_BOUND, "each idle connection holds {each} bytes");
        pairs.close().await;
    });
}

/// Heap a `Server` holds per idle TCP connection, measured with raw blocking clients on std
/// sockets (which hold no heap of their own): in a debug build about 5.1 KiB (the connection's
/// state, its reader task, the server's task and entry for the peer, tokio's registration of
/// the socket). Before the server's connections shared their configuration and its per-peer
/// task let go of the handshake's state, 6.4 KiB (a heap profile of the `connections` bench).
const SERVER_IDLE_BOUND: i64 = 6 * 1024;

/// A raw client: connect, make one Content-Length call, read its whole answer.
fn raw_call(addr: std::net::SocketAddr) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(addr).expect("connect");
    socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;
    socket.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).expect("write");
    socket.write_all(body).expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !got.windows(9).any(|w| w == br#""result":"#) || !got.ends_with(b"}") {
        let n = socket.read(&mut buf).expect("an answer in time");
        assert!(n > 0, "the server closed before answering");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains(r#""result":3"#), "{text}");
    socket
}

/// A `Server`'s idle TCP connection, opened and answered once, costs the server at most
/// `SERVER_IDLE_BOUND` bytes of heap.
#[test]
fn a_servers_idle_connection_is_small() {
    use jsonrpc_duplex::server::Server;
    use jsonrpc_duplex::{ErrorObject, Router, transport::PeerAddr};
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let rt = runtime();
    let server = rt.block_on(async {
        let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
        Server::builder().serve(router).bind_tcp("127.0.0.1:0").await.expect("bind")
    });
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).expect("a TCP address");
    let stats = server.handle();
    let wait_active = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while stats.stats().active != n {
            assert!(Instant::now() < deadline, "the server counts {} connections, not {n}", stats.stats().active);
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    // One connection first: what the server keeps once for all (its peer table, the threads'
    // buffer pools) is not counted per connection.
    drop(raw_call(addr));
    wait_active(0);
    let base = live();
    let clients: Vec<_> = (0..CONNECTIONS).map(|_| raw_call(addr)).collect();
    wait_active(CONNECTIONS);
    let each = rt.block_on(settles_within(base, SERVER_IDLE_BOUND));
    eprintln!("heap held per idle server connection: {each} bytes");
    assert!(each <= SERVER_IDLE_BOUND, "each idle server connection holds {each} bytes");
    drop(clients);
    wait_active(0);
    rt.block_on(server.shutdown(Duration::from_secs(5)));
}
