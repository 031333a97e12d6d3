//! A server's connections time out on slow and silent peers: a message that trickles in (over
//! TCP, a Unix socket or WebSocket) is cut at the message read timeout, a peer that sends nothing
//! with nothing in flight at the idle timeout; work in flight keeps a quiet peer connected. Plain
//! connections (stdio, child processes, `Connection::builder()`) have neither by default.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonrpc_duplex::server::{DEFAULT_IDLE_TIMEOUT, DEFAULT_MESSAGE_READ_TIMEOUT, Server, ServerBuilder};
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{Connection, ErrorObject, Router};
use support::host::*;
use support::time::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

const SHORT: Duration = Duration::from_millis(300);
/// A timeout that must not be the one that fires.
const LONG: Duration = Duration::from_secs(30);

/// `wait` answers once the test releases it.
fn builder(release: Arc<Notify>, idle: Duration, message: Duration) -> ServerBuilder {
    Server::builder()
        .serve(Router::new().method("wait", move |(): (), _ctx| {
            let release = release.clone();
            async move {
                release.notified().await;
                Ok::<_, ErrorObject>("released")
            }
        }))
        .idle_timeout(idle)
        .message_read_timeout(message)
}

/// Write `head` at once, then the rest a byte every 100 ms until the server hangs up; returns
/// how long the connection lasted.
async fn trickle<S: AsyncRead + AsyncWrite + Unpin>(mut io: S, head: &[u8], rest: &[u8]) -> Duration {
    let start = Instant::now();
    io.write_all(head).await.unwrap();
    let mut sink = [0u8; 256];
    within(async {
        for byte in rest.iter().cycle() {
            tokio::select! {
                read = io.read(&mut sink) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                },
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if io.write_all(&[*byte]).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
    .await;
    start.elapsed()
}

/// Read until EOF; how long it took.
async fn until_eof<S: AsyncRead + Unpin>(mut io: S) -> Duration {
    let start = Instant::now();
    let mut sink = Vec::new();
    let _ = within(io.read_to_end(&mut sink)).await;
    start.elapsed()
}

const BODY: &[u8] = br#"{"jsonrpc":"2.0","method":"note","params":["........................................"]}"#;

fn framed_head() -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n", BODY.len()).into_bytes()
}

#[tokio::test]
async fn a_trickling_tcp_peer_is_cut_at_the_message_read_timeout() {
    let release = Arc::new(Notify::new());
    let server = builder(release, LONG, SHORT).bind_tcp("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    let socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let lasted = trickle(socket, &framed_head(), BODY).await;
    assert!(lasted >= SHORT, "cut after {lasted:?}, before the timeout");
    eventually("the connection is counted closed", || server.stats().closed == 1).await;
}

/// A header whose body never comes is a message begun: the message read timeout applies, not
/// the (here much longer) idle timeout.
#[tokio::test]
async fn a_header_without_its_body_is_cut_at_the_message_read_timeout() {
    let release = Arc::new(Notify::new());
    let server = builder(release, LONG, SHORT).bind_tcp("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(&framed_head()).await.unwrap();
    let lasted = until_eof(socket).await;
    assert!(lasted >= SHORT, "cut after {lasted:?}");
}

#[tokio::test]
async fn a_silent_peer_is_cut_at_the_idle_timeout_but_not_while_work_is_in_flight() {
    let release = Arc::new(Notify::new());
    let server = builder(release.clone(), SHORT, LONG).bind_tcp("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    let silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let lasted = until_eof(silent).await;
    assert!(lasted >= SHORT, "cut after {lasted:?}");

    // A call in flight for several idle periods: the connection stays, and is answered.
    let client = within(Connection::builder().connect_tcp(addr)).await.unwrap();
    let call = tokio::spawn({
        let h = client.handle();
        async move { h.request::<String>("wait", ()).await }
    });
    tokio::time::sleep(SHORT * 4).await;
    assert!(!client.is_closed(), "closed while a request was in flight");
    release.notify_one();
    assert_eq!(within(call).await.unwrap().unwrap(), "released");
    // Then, quiet with nothing in flight, it goes.
    let reason = within(client.closed()).await;
    assert!(reason.message.contains("closed"), "{reason}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_trickling_unix_peer_is_cut_at_the_message_read_timeout() {
    let release = Arc::new(Notify::new());
    let path = socket_path("trickle");
    let server = builder(release, LONG, SHORT).bind_unix(&path).unwrap();
    let socket = tokio::net::UnixStream::connect(&path).await.unwrap();
    let lasted = trickle(socket, &framed_head(), BODY).await;
    assert!(lasted >= SHORT, "cut after {lasted:?}");
    eventually("the connection is counted closed", || server.stats().closed == 1).await;
    let _ = std::fs::remove_file(path);
}

#[cfg(feature = "websocket")]
#[tokio::test]
async fn a_trickling_websocket_peer_is_cut_at_the_message_read_timeout_and_pings_are_no_message() {
    let release = Arc::new(Notify::new());
    let server = builder(release.clone(), LONG, SHORT).bind_websocket("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    // The handshake by hand, so the test owns every byte after it.
    let handshake = |mut socket: tokio::net::TcpStream| async move {
        let addr = socket.peer_addr().unwrap();
        let request = format!(
            "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        while !response.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            socket.read_exact(&mut byte).await.unwrap();
            response.push(byte[0]);
        }
        assert!(response.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&response));
        socket
    };
    // A masked text frame with a zero mask: the payload goes as it is.
    let mut frame = vec![0x81, 0x80 | BODY.len() as u8, 0, 0, 0, 0];
    frame.extend_from_slice(BODY);
    let mut socket = handshake(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
    let lasted = trickle(&mut socket, &frame[..2], &frame[2..]).await;
    drop(server);
    assert!(lasted >= SHORT, "cut after {lasted:?}");

    // Pings (control frames) are not a message in progress: a peer that only pings is idle,
    // and cut at the idle timeout, not mistaken for a trickler.
    let server = builder(release, SHORT, LONG).bind_websocket("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    let mut socket = handshake(tokio::net::TcpStream::connect(addr).await.unwrap()).await;
    let ping = [0x89u8, 0x80, 0, 0, 0, 0];
    let start = Instant::now();
    let mut received = Vec::new();
    within(async {
        let mut sink = [0u8; 256];
        loop {
            tokio::select! {
                read = socket.read(&mut sink) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => received.extend_from_slice(&sink[..n]),
                },
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if socket.write_all(&ping).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
    .await;
    assert!(start.elapsed() >= SHORT, "cut after {:?}", start.elapsed());
    // The close frame says why (pongs come before it).
    let received = String::from_utf8_lossy(&received);
    assert!(received.contains("(the idle timeout)"), "{received:?}");
}

#[test]
fn servers_time_out_by_default_and_plain_connections_do_not() {
    assert_eq!(
        (DEFAULT_IDLE_TIMEOUT, DEFAULT_MESSAGE_READ_TIMEOUT),
        (Duration::from_secs(300), Duration::from_secs(30))
    );
    let server = format!("{:?}", Server::builder());
    assert!(
        server.contains("idle_timeout: Some(300s)") && server.contains("message_read_timeout: Some(30s)"),
        "{server}"
    );
    let plain = format!("{:?}", Connection::builder());
    assert!(plain.contains("idle_timeout: None") && plain.contains("message_read_timeout: None"), "{plain}");
}

/// The idle timeout to the step, on paused time: a peer that sends a message at gaps up to just
/// under the timeout is never cut, however long it goes on; once it falls silent it is cut no
/// sooner than the timeout after its last message, and no later than an eighth of it more (the
/// idle timer runs in steps, so a pause in the input costs no clock reading). The last message
/// falls at sixteen points of a step in turn.
#[tokio::test(start_paused = true)]
async fn the_idle_timeout_counts_from_the_last_message_within_an_eighth_of_it() {
    let limit = Duration::from_secs(80);
    let note = format!("Content-Length: {}\r\n\r\n", BODY.len()).into_bytes();
    for k in 0..16 {
        let (ours, mut peer) = tokio::io::duplex(4096);
        let conn = Connection::builder().idle_timeout(limit).connect_io(ours);
        let gaps = [79_000, 1_000, 40_000, 79_000, 13_000, 78_000, 60_000, 5_000, 79_000, 30_000, 11_000, k * 625];
        for (i, gap) in gaps.into_iter().enumerate() {
            tokio::time::sleep(Duration::from_millis(gap)).await;
            assert!(!conn.is_closed(), "cut after gap {i} of {gap} ms (k = {k})");
            peer.write_all(&note).await.unwrap();
            peer.write_all(BODY).await.unwrap();
        }
        let last = tokio::time::Instant::now();
        let reason = tokio::time::timeout(limit * 2, conn.closed()).await.expect("cut at the idle timeout");
        let silent = last.elapsed();
        assert!(reason.message.contains("(the idle timeout)"), "{reason}");
        assert!(silent >= limit, "cut after {silent:?} of silence (k = {k})");
        let latest = limit + limit / 8 + Duration::from_millis(5);
        assert!(silent <= latest, "cut only after {silent:?} of silence (k = {k})");
    }
}
