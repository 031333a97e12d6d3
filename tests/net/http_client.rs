//! Our HTTP client (`Builder::connect_http`) against a peer written here on raw sockets: every
//! pending call ends, whatever ends it (a cancel, its timeout, the client closed, the peer
//! gone), and its `POST` is abandoned with it (the peer sees its connection close); calls are
//! in flight together, each `POST` on a pooled connection of its own. Every wait is bounded.
#![cfg(feature = "http")]

use crate::support;

use std::time::Duration;

use jsonrpc_duplex::transport::http::client::TRANSPORT_ERROR;
use jsonrpc_duplex::{CallOptions, CancellationToken, Connection, Error};
use support::time::within;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What the peer does with a `POST` once it has read it.
#[derive(Clone, Copy)]
enum Peer {
    /// Never answer; report when the client closes the connection.
    Hold,
    /// Close the connection at once, unanswered.
    Hang,
}

/// One request read off `stream`: its body (`Content-Length` framed, as hyper writes it).
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().expect("a length")))
                .expect("Content-Length");
            if buf.len() >= end + 4 + len {
                let body = buf[end + 4..end + 4 + len].to_vec();
                buf.drain(..end + 4 + len);
                return Some(body);
            }
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A peer on loopback: each connection's requests are reported on `bodies` as they arrive, and
/// `closed` hears when a held connection is closed by the client.
async fn peer(mode: Peer) -> (String, mpsc::UnboundedReceiver<Vec<u8>>, mpsc::UnboundedReceiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (bodies_tx, bodies) = mpsc::unbounded_channel();
    let (closed_tx, closed) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (bodies_tx, closed_tx) = (bodies_tx.clone(), closed_tx.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let Some(body) = read_request(&mut stream, &mut buf).await else { return };
                let _ = bodies_tx.send(body);
                match mode {
                    Peer::Hang => drop(stream),
                    Peer::Hold => {
                        // The client abandons the exchange: its connection closes.
                        let mut rest = [0u8; 64];
                        while matches!(stream.read(&mut rest).await, Ok(n) if n > 0) {}
                        let _ = closed_tx.send(());
                    }
                }
            });
        }
    });
    (url, bodies, closed)
}

#[tokio::test]
async fn a_cancelled_call_ends_and_its_post_is_abandoned() {
    let (url, mut bodies, mut closed) = peer(Peer::Hold).await;
    let client = Connection::builder().connect_http(&url).unwrap();
    let token = CancellationToken::new();
    let call = tokio::spawn({
        let (handle, token) = (client.handle(), token.clone());
        async move { handle.request_with::<i64>("held", (), CallOptions::new().cancel(token)).await }
    });
    within(bodies.recv()).await.expect("the POST arrived");
    token.cancel();
    let outcome = within(call).await.unwrap();
    assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
    within(closed.recv()).await.expect("the abandoned POST's connection closed");
}

#[tokio::test]
async fn a_call_past_its_timeout_ends_and_its_post_is_abandoned() {
    let (url, mut bodies, mut closed) = peer(Peer::Hold).await;
    let client = Connection::builder().connect_http(&url).unwrap();
    let options = CallOptions::new().timeout(Duration::from_millis(200));
    let outcome = within(client.handle().request_with::<i64>("held", (), options)).await;
    assert!(matches!(outcome, Err(Error::Timeout(_))), "{outcome:?}");
    within(bodies.recv()).await.expect("the POST arrived");
    within(closed.recv()).await.expect("the abandoned POST's connection closed");
}

#[tokio::test]
async fn closing_the_client_ends_its_pending_calls_and_abandons_their_posts() {
    let (url, mut bodies, mut closed) = peer(Peer::Hold).await;
    let client = Connection::builder().connect_http(&url).unwrap();
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let handle = client.handle();
            tokio::spawn(async move { handle.request::<i64>("held", ()).await })
        })
        .collect();
    for _ in 0..3 {
        within(bodies.recv()).await.expect("the POSTs arrived, in flight together");
    }
    client.handle().close();
    for call in calls {
        let outcome = within(call).await.unwrap();
        assert!(matches!(outcome, Err(Error::ConnectionLost(_))), "{outcome:?}");
    }
    for _ in 0..3 {
        within(closed.recv()).await.expect("each abandoned POST's connection closed");
    }
}

#[tokio::test]
async fn a_peer_that_hangs_up_fails_the_call_with_the_transport_error() {
    let (url, mut bodies, _closed) = peer(Peer::Hang).await;
    let client = Connection::builder().connect_http(&url).unwrap();
    let outcome = within(client.handle().request::<i64>("dropped", ())).await;
    match outcome {
        Err(Error::Remote(e)) => assert_eq!(e.code, TRANSPORT_ERROR, "{e}"),
        other => panic!("a transport error, not {other:?}"),
    }
    within(bodies.recv()).await.expect("the POST arrived");
    // The connection is still usable: the next call is another POST, failing the same way.
    let outcome = within(client.handle().request::<i64>("again", ())).await;
    assert!(matches!(outcome, Err(Error::Remote(ref e)) if e.code == TRANSPORT_ERROR), "{outcome:?}");
}

/// Dropping a call's future abandons its `POST` too.
#[tokio::test]
async fn a_dropped_call_abandons_its_post() {
    let (url, mut bodies, mut closed) = peer(Peer::Hold).await;
    let client = Connection::builder().connect_http(&url).unwrap();
    let handle = client.handle();
    let call = tokio::spawn(async move { handle.request::<i64>("held", ()).await });
    within(bodies.recv()).await.expect("the POST arrived");
    call.abort();
    let _ = call.await;
    within(closed.recv()).await.expect("the abandoned POST's connection closed");
}
