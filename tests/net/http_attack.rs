//! The HTTP server attacked as the byte-stream server is (feature `http`), loopback only, every
//! load bounded in count and time: bodies trickled on many connections, a huge chunked body,
//! more connections than the limit, keep-alive connections left idle. After each attack the
//! server still answers a call at once.
#![cfg(feature = "http")]

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use jsonrpc_duplex::server::ServerBuilder;
use jsonrpc_duplex::transport::http::serve::HttpServer;
use jsonrpc_duplex::{Connection, ErrorObject, Router};
use support::time::{eventually, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIMIT: usize = 1024 * 1024;
const MAX_CONNECTIONS: usize = 100;
const TIMEOUT: Duration = Duration::from_millis(400);

async fn start() -> HttpServer {
    let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
    ServerBuilder::new(Connection::builder().max_message_size(LIMIT).serve(router))
        .max_connections(MAX_CONNECTIONS)
        .message_read_timeout(TIMEOUT)
        .bind_http("127.0.0.1:0")
        .await
        .expect("bind")
}

/// The server still answers a call, promptly.
async fn still_serves(addr: SocketAddr) {
    let client = Connection::builder().connect_http(&format!("http://{addr}/")).unwrap();
    let started = Instant::now();
    assert_eq!(within(client.handle().request::<i64>("add", (1, 2))).await.unwrap(), 3);
    assert!(started.elapsed() < Duration::from_secs(2), "a call took {:?} after the attack", started.elapsed());
}

/// Read what the server sends until it closes (bounded): the status code of its answer, if any.
async fn status_then_close(stream: &mut TcpStream) -> Option<u16> {
    let mut all = Vec::new();
    let _ = within(stream.read_to_end(&mut all)).await;
    let text = String::from_utf8_lossy(&all);
    text.strip_prefix("HTTP/1.1 ").and_then(|rest| rest.get(..3)).and_then(|code| code.parse().ok())
}

const HEAD: &str = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";

#[tokio::test]
async fn bodies_trickled_on_many_connections_are_cut_and_the_server_serves_on() {
    let server = start().await;
    let addr = server.local_addr();
    let mut streams = Vec::new();
    for _ in 0..50 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("{HEAD}Content-Length: 1000\r\n\r\n{{").as_bytes()).await.unwrap();
        streams.push(stream);
    }
    // While they trickle, a call is served.
    still_serves(addr).await;
    let started = Instant::now();
    for stream in &mut streams {
        // One more byte now and then does not extend the deadline (it bounds the whole body).
        let _ = stream.write_all(b" ").await;
    }
    for stream in &mut streams {
        assert_eq!(status_then_close(stream).await, Some(408));
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    eventually("the cut connections are gone", || server.stats().live == 0).await;
    still_serves(addr).await;
}

#[tokio::test]
async fn a_huge_chunked_body_is_refused_at_the_limit_not_read_to_its_end() {
    let server = start().await;
    let addr = server.local_addr();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(format!("{HEAD}Transfer-Encoding: chunked\r\n\r\n").as_bytes()).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    // Up to 256 MiB in 64 KiB chunks; the server must stop it long before.
    let writer = tokio::spawn(async move {
        let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
        let mut sent = 0usize;
        while sent < 256 * 1024 * 1024 {
            if write.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
            sent += 0x10000;
        }
        sent
    });
    let mut answer = vec![0u8; 12];
    within(read.read_exact(&mut answer)).await.expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 413");
    let sent = within(writer).await.unwrap();
    // What was written beyond the limit sits in the two sockets' buffers, not in the server.
    assert!(sent < 64 * 1024 * 1024, "the server read {sent} bytes of a body over its {LIMIT}-byte limit");
    still_serves(addr).await;
}

#[tokio::test]
async fn connections_over_the_limit_get_503_and_the_rest_are_served() {
    let server = start().await;
    let addr = server.local_addr();
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    eventually("every connection is taken", || server.stats().live == MAX_CONNECTIONS).await;
    for _ in 0..20 {
        let mut extra = TcpStream::connect(addr).await.unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;
        let _ = extra.write_all(format!("{HEAD}Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
        assert_eq!(status_then_close(&mut extra).await, Some(503));
    }
    assert_eq!(server.stats().refused, 20);
    drop(held);
    eventually("the held connections are closed", || server.stats().live == 0).await;
    still_serves(addr).await;
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed_by_the_header_read_timeout() {
    let server = start().await;
    let addr = server.local_addr();
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // A connection that sent one request and then nothing is closed too.
    let mut used = TcpStream::connect(addr).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;
    used.write_all(format!("{HEAD}Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await.unwrap();
    assert_eq!(status_then_close(&mut used).await, Some(200));
    for stream in &mut idle {
        let mut rest = Vec::new();
        let n = within(stream.read_to_end(&mut rest)).await.unwrap_or(0);
        assert!(n < 1024, "an idle connection got {n} bytes");
    }
    eventually("the idle connections are gone", || server.stats().live == 0).await;
    still_serves(addr).await;
}

/// Read one answer's head and body (by its `Content-Length`) off a kept-alive connection.
async fn read_answer(stream: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(within(stream.read(&mut byte)).await.unwrap(), 1, "closed mid-answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head[9..12].parse().unwrap();
    let len: usize = head
        .split("\r\n")
        .find_map(|l| l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-length")))
        .map(|(_, v)| v.trim().parse().unwrap())
        .unwrap();
    let mut body = vec![0u8; len];
    within(stream.read_exact(&mut body)).await.unwrap();
    (status, String::from_utf8(body).unwrap())
}

#[tokio::test]
async fn bodies_held_past_the_byte_budget_get_503_retry_after_and_the_budget_comes_back() {
    const BUDGET: usize = 8 * 1024;
    let (release, released) = tokio::sync::watch::channel(false);
    let (arrived, mut arrivals) = tokio::sync::mpsc::unbounded_channel();
    let router = Router::new()
        .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
        .method("hold", move |(pad,): (String,), _| {
            let (mut released, arrived) = (released.clone(), arrived.clone());
            async move {
                let _ = arrived.send(());
                let _ = released.wait_for(|r| *r).await;
                Ok::<_, ErrorObject>(pad.len())
            }
        });
    let server = ServerBuilder::new(Connection::builder().max_message_size(LIMIT).serve(router))
        .bind_http_with("127.0.0.1:0", |s| s.max_held_bytes(BUDGET))
        .await
        .expect("bind");
    let addr = server.local_addr();
    let hold = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"hold","params":["{}"]}}"#, "x".repeat(3000));
    let request = |body: &str| format!("{HEAD}Content-Length: {}\r\n\r\n{body}", body.len());

    // Two bodies of ~3 KiB held by handlers that wait: ~6 KiB of the 8 KiB budget.
    let mut holding = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request(&hold).as_bytes()).await.unwrap();
        within(arrivals.recv()).await.expect("the handler started");
        holding.push(stream);
    }

    // A third announced by its Content-Length does not fit: refused from its headers alone.
    let mut third = TcpStream::connect(addr).await.unwrap();
    third.write_all(format!("{HEAD}Content-Length: {}\r\n\r\n", hold.len()).as_bytes()).await.unwrap();
    let mut all = Vec::new();
    within(third.read_to_end(&mut all)).await.unwrap();
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.to_ascii_lowercase().contains("retry-after: 1\r\n"), "{text}");
    assert!(text.contains("request bytes"), "{text}");

    // A chunked body is counted as it arrives: 1000 bytes fit, 2000 more do not.
    let mut chunked = TcpStream::connect(addr).await.unwrap();
    let start = r#"{"jsonrpc":"2.0","id":2,"method":"hold","params":[""#;
    chunked.write_all(format!("{HEAD}Transfer-Encoding: chunked\r\n\r\n").as_bytes()).await.unwrap();
    let first = format!("{start}{}", "y".repeat(1000 - start.len()));
    chunked.write_all(format!("{:x}\r\n{first}\r\n", first.len()).as_bytes()).await.unwrap();
    chunked.write_all(format!("7d0\r\n{}\r\n", "y".repeat(2000)).as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 12];
    within(chunked.read_exact(&mut answer)).await.expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 503");

    // What fits is served meanwhile: a small call.
    let mut small = TcpStream::connect(addr).await.unwrap();
    small.write_all(request(r#"{"jsonrpc":"2.0","id":3,"method":"add","params":[1,2]}"#).as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut small).await, (200, r#"{"jsonrpc":"2.0","id":3,"result":3}"#.to_owned()));

    // Answered, the held bodies give their bytes back: the same ~3 KiB body is served again.
    release.send(true).unwrap();
    for stream in &mut holding {
        assert_eq!(read_answer(stream).await, (200, r#"{"jsonrpc":"2.0","id":1,"result":3000}"#.to_owned()));
    }
    small.write_all(request(&hold).as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut small).await.0, 200);
    small.write_all(request(&hold).as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut small).await.0, 200);
    still_serves(addr).await;
}

/// Pipelined requests (HTTP/1.1) are answered in order, and the server's batching of their
/// answers (one write per burst) holds none back: an answer leaves while a later request's
/// handler still runs, and while the next request has only half arrived.
#[tokio::test]
async fn pipelined_answers_come_in_order_and_none_waits_for_a_later_request() {
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    let opened = gate.clone();
    let router = Router::new()
        .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
        .method("gated", move |(n,): (i64,), _| {
            let gate = opened.clone();
            async move {
                gate.notified().await;
                Ok::<_, ErrorObject>(n)
            }
        });
    let server = ServerBuilder::new(Connection::builder().serve(router)).bind_http("127.0.0.1:0").await.unwrap();
    let request = |id: u32, method: &str, params: &str| {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        format!("{HEAD}Content-Length: {}\r\n\r\n{body}", body.len())
    };
    let fourth = request(4, "add", "[5,6]");
    let (first_half, second_half) = fourth.split_at(fourth.len() / 2);
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    // Three requests and half of a fourth, in one write.
    let burst = [request(1, "add", "[1,2]"), request(2, "gated", "[7]"), request(3, "add", "[3,4]"), first_half.into()];
    stream.write_all(burst.concat().as_bytes()).await.unwrap();
    // The first answer arrives while the second request's handler waits for the gate.
    let (status, body) = read_answer(&mut stream).await;
    assert_eq!((status, body.as_str()), (200, r#"{"jsonrpc":"2.0","id":1,"result":3}"#));
    gate.notify_one();
    let (status, body) = read_answer(&mut stream).await;
    assert_eq!((status, body.as_str()), (200, r#"{"jsonrpc":"2.0","id":2,"result":7}"#));
    // The third arrives although the fourth is not all there.
    let (status, body) = read_answer(&mut stream).await;
    assert_eq!((status, body.as_str()), (200, r#"{"jsonrpc":"2.0","id":3,"result":7}"#));
    stream.write_all(second_half.as_bytes()).await.unwrap();
    let (status, body) = read_answer(&mut stream).await;
    assert_eq!((status, body.as_str()), (200, r#"{"jsonrpc":"2.0","id":4,"result":11}"#));
    server.shutdown(Duration::from_secs(1)).await;
}
