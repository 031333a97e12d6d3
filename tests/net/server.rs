//! The server helper over TCP on loopback: the connection limit (refusals counted, with a reason
//! on the wire), graceful shutdown with calls in flight (every call answered or failed with a
//! reason), broadcast (a peer that does not read neither delays it nor silently misses a
//! message), per-connection services, and isolation from peers that send garbage or die.
//! Every wait is bounded.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use jsonrpc_duplex::server::{Server, ServerBuilder};
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{Builder, ClientError, CloseKind, Connection, Error, ErrorObject, Limits, Router, codes};
use serde_json::Value;
use support::kv::*;
use support::time::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn client(side: &Arc<ClientSide>) -> Builder {
    Connection::builder().serve(WatcherServer::new(side.clone()))
}

async fn tcp_server(builder: ServerBuilder) -> (Server, std::net::SocketAddr) {
    let server = builder.bind_tcp("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    (server, addr)
}

/// Read everything a raw socket gets until EOF (bounded).
async fn read_to_eof(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    within(stream.read_to_end(&mut out)).await.unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_beyond_the_limit_are_refused_with_a_reason_and_counted() {
    let shared = Arc::new(Shared::default());
    let (server, addr) = tcp_server(Server::builder().max_connections(3).serve_with(Session::factory(shared))).await;
    let sides: Vec<_> = (0..3).map(|i| ClientSide::named(&format!("c{i}"))).collect();
    let mut conns = Vec::new();
    for side in &sides {
        let conn = within(client(side).connect_tcp(addr)).await.unwrap();
        // A call proves the connection is served (not merely in the backlog).
        within(StoreClient::new(conn.handle()).add(1, 1)).await.unwrap();
        conns.push(conn);
    }
    assert_eq!(server.stats().active, 3);

    // A raw fourth peer reads the refusal: an error response with id null, then EOF.
    let mut raw = TcpStream::connect(addr).await.unwrap();
    let text = read_to_eof(&mut raw).await;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_else(|| panic!("a Content-Length frame: {text:?}"));
    assert!(text.starts_with(&format!("Content-Length: {}\r\n\r\n", body.len())), "{text:?}");
    let refusal: Value = serde_json::from_str(body).unwrap();
    assert_eq!(refusal["id"], Value::Null);
    assert_eq!(refusal["error"]["code"], codes::SERVER_BUSY);
    assert_eq!(refusal["error"]["message"], "the server is at its limit of 3 connections");

    // A typed client beyond the limit sees its connection end (its call fails with the reason).
    let side = ClientSide::named("late");
    let late = within(client(&side).connect_tcp(addr)).await.unwrap();
    match within(StoreClient::new(late.handle()).add(1, 2)).await {
        Err(ClientError::Call(Error::ConnectionLost(reason))) => {
            assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}")
        }
        other => panic!("expected the refused connection to end, got {other:?}"),
    }
    let stats = server.stats();
    assert_eq!((stats.accepted, stats.refused, stats.active), (3, 2, 3), "{stats:?}");

    // When one leaves, there is room again.
    conns.pop().unwrap().close().await;
    eventually("the closed connection stops counting", || server.stats().active == 2).await;
    let again = within(client(&side).connect_tcp(addr)).await.unwrap();
    assert_eq!(within(StoreClient::new(again.handle()).add(2, 2)).await.unwrap(), 4);
    assert_eq!(server.stats().accepted, 4);
}

/// Handlers running at shutdown finish and are answered; requests that arrive while draining
/// are answered -32000; after the close, calls fail with ConnectionLost. None is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_answers_every_call_in_flight() {
    let shared = Arc::new(Shared::default());
    let (server, addr) = tcp_server(Server::builder().serve_with(Session::factory(shared.clone()))).await;
    let sides: Vec<_> = (0..3).map(|i| ClientSide::named(&format!("c{i}"))).collect();
    let mut clients = Vec::new();
    for side in &sides {
        clients.push(within(client(side).connect_tcp(addr)).await.unwrap());
    }

    // 4 parked calls per client, all started on the server.
    let mut parked = Vec::new();
    for (i, conn) in clients.iter().enumerate() {
        for j in 0..4u64 {
            let store = StoreClient::new(conn.handle());
            parked.push(tokio::spawn(async move { store.parked(i as u64 * 10 + j).await }));
        }
    }
    reach(&shared.parked_started, 12).await;

    let shutdown = tokio::spawn(server.shutdown(Duration::from_secs(10)));

    // Draining: new requests are refused with a reason (quick calls until the first refusal).
    let store = StoreClient::new(clients[0].handle());
    let refusal = within(async {
        for _ in 0..100_000 {
            match store.add(1, 1).await {
                Ok(2) => tokio::task::yield_now().await,
                other => return other,
            }
        }
        panic!("the server never started draining");
    })
    .await;
    match refusal {
        Err(ClientError::Method(e)) => {
            assert_eq!(e.code, codes::SERVER_ERROR);
            assert_eq!(e.message, "the server is shutting down");
        }
        other => panic!("expected a shutting-down refusal, got {other:?}"),
    }
    // More calls pipelined while draining: each is answered (refused) or fails with a reason.
    let during: Vec<_> = (0..50)
        .map(|_| {
            let store = StoreClient::new(clients[1].handle());
            tokio::spawn(async move { store.add(1, 2).await })
        })
        .collect();
    assert!(!shutdown.is_finished());

    // Release the parked handlers: every one of them is answered with its result.
    shared.release_parked();
    for (k, call) in parked.into_iter().enumerate() {
        let expected = (k / 4) as u64 * 10 + (k % 4) as u64;
        assert_eq!(within(call).await.unwrap().unwrap(), expected);
    }
    for outcome in within(join_all(during)).await {
        match outcome.unwrap() {
            // Refused by the drain gate, or read but not started when the connection closed.
            Err(ClientError::Method(e)) => {
                assert!(e.message == "the server is shutting down" || e.code == codes::REQUEST_CANCELLED, "{e:?}")
            }
            Err(ClientError::Call(Error::ConnectionLost(_))) => {}
            other => panic!("a call during the drain must be refused or lost with a reason: {other:?}"),
        }
    }
    let report = within(shutdown).await.unwrap();
    assert_eq!(report.unfinished, 0);
    assert_eq!(report.closed_connections, 3);
    for conn in &clients {
        assert_eq!(within(conn.closed()).await.kind, CloseKind::RemoteClosed);
        match StoreClient::new(conn.handle()).add(1, 1).await {
            Err(ClientError::Call(Error::ConnectionLost(_))) => {}
            other => panic!("{other:?}"),
        }
    }
    // New peers are turned away by the OS now.
    assert!(TcpStream::connect(addr).await.is_err());
}

/// A handler that does not finish within the grace period is cancelled, and its request
/// answered -32800: failed with a reason, not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_deadline_cancels_the_stragglers_with_an_answer() {
    let shared = Arc::new(Shared::default());
    let (server, addr) = tcp_server(Server::builder().serve_with(Session::factory(shared.clone()))).await;
    let side = ClientSide::named("slow");
    let conn = within(client(&side).connect_tcp(addr)).await.unwrap();
    let store = StoreClient::new(conn.handle());
    let call = tokio::spawn(async move { store.parked(7).await });
    reach(&shared.parked_started, 1).await;
    let report = within(server.shutdown(Duration::from_millis(200))).await;
    assert_eq!(report.unfinished, 1);
    match within(call).await.unwrap() {
        Err(ClientError::Method(e)) => assert_eq!(e.code, codes::REQUEST_CANCELLED),
        other => panic!("expected -32800, got {other:?}"),
    }
    assert!(report.elapsed >= Duration::from_millis(200));
}

/// A feature of the connections' own that admits their requests takes the place of the drain
/// gate's admission: the gate then counts each handler itself, and shutdown still waits for the
/// one running (cancelled at the deadline, counted unfinished, answered -32800), and refuses
/// new requests meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_counts_running_handlers_when_a_feature_admits_the_requests() {
    use jsonrpc_duplex::seam::{Admission, Extension, Feature, Start};
    use std::task::{Context, Poll};

    /// Admits every request at once.
    #[derive(Clone)]
    struct Open;
    impl Feature for Open {
        fn start(&self, _: &Start<'_>) -> Arc<dyn Extension> {
            Arc::new(Open)
        }
    }
    impl Extension for Open {
        fn admission(self: Arc<Self>) -> Option<Arc<dyn Admission>> {
            Some(self)
        }
    }
    impl Admission for Open {
        fn try_admit(&self, _: usize) -> Option<u64> {
            Some(1)
        }
        fn poll_admit(&self, _: usize, _: &mut Context<'_>) -> Poll<u64> {
            Poll::Ready(1)
        }
        fn release(&self, _: u64) {}
    }

    let shared = Arc::new(Shared::default());
    let builder = ServerBuilder::new(Connection::builder().feature(Open)).serve_with(Session::factory(shared.clone()));
    let (server, addr) = tcp_server(builder).await;
    let side = ClientSide::named("admitted");
    let conn = within(client(&side).connect_tcp(addr)).await.unwrap();
    let store = StoreClient::new(conn.handle());
    let call = tokio::spawn(async move { store.parked(9).await });
    reach(&shared.parked_started, 1).await;
    let shutdown = tokio::spawn(server.shutdown(Duration::from_millis(300)));
    let store = StoreClient::new(conn.handle());
    let refusal = within(async {
        loop {
            match store.add(1, 1).await {
                Ok(2) => tokio::task::yield_now().await,
                other => return other,
            }
        }
    })
    .await;
    match refusal {
        Err(ClientError::Method(e)) => assert_eq!(e.message, "the server is shutting down"),
        other => panic!("expected a shutting-down refusal, got {other:?}"),
    }
    let report = within(shutdown).await.unwrap();
    assert_eq!(report.unfinished, 1, "the running handler was not counted");
    assert!(report.elapsed >= Duration::from_millis(300), "shutdown did not wait for the running handler");
    match within(call).await.unwrap() {
        Err(ClientError::Method(e)) => assert_eq!(e.code, codes::REQUEST_CANCELLED),
        other => panic!("expected -32800, got {other:?}"),
    }
}

/// Broadcast never waits for a peer that does not read: the others get every message in order
/// at once, and the stalled peer is disconnected after the broadcast timeout, counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_skips_past_a_stalled_peer_and_then_drops_it() {
    let shared = Arc::new(Shared::default());
    let limits = Limits::new().outbound_buffer(256 * 1024);
    let (server, addr) = tcp_server(
        ServerBuilder::new(Connection::builder().limits(limits))
            .broadcast_timeout(Duration::from_millis(300))
            .serve_with(Session::factory(shared)),
    )
    .await;
    let sides: Vec<_> = (0..3).map(|i| ClientSide::named(&format!("c{i}"))).collect();
    let mut clients = Vec::new();
    for side in &sides {
        let conn = within(client(side).connect_tcp(addr)).await.unwrap();
        within(StoreClient::new(conn.handle()).add(0, 0)).await.unwrap();
        clients.push(conn);
    }
    // The stalled peer: a small receive buffer, and it never reads.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 * 1024).unwrap();
    let _stalled = socket.connect(addr).await.unwrap();
    eventually("the stalled peer is served", || server.peers().len() == 4).await;

    let text = "n".repeat(32 * 1024);
    let mut sent = 0u64;
    let mut first_waiting = None;
    // Broadcast until the stalled peer's queue is full (bounded: 64 MiB at most). The readers
    // take each message before the next, so theirs always has room.
    while sent < 2048 {
        let report = server.broadcast("watcher/news", (sent, &text)).unwrap();
        sent += 1;
        for side in &sides {
            reach(&side.news_count, sent as usize).await;
        }
        if report.waiting == 1 {
            assert_eq!(report.queued, 3, "{report:?}");
            first_waiting = Some(sent);
            break;
        }
        assert_eq!(report.queued, 4, "{report:?}");
    }
    let first_waiting = first_waiting.expect("the stalled peer's queue never filled");
    // A few more: the stalled peer waits for each, the others get them at once.
    for _ in 0..5 {
        let report = server.broadcast("watcher/news", (sent, &text)).unwrap();
        assert_eq!((report.queued, report.waiting), (3, 1), "{report:?}");
        sent += 1;
        for side in &sides {
            reach(&side.news_count, sent as usize).await;
        }
    }
    for side in &sides {
        reach(&side.news_count, sent as usize).await;
        assert_eq!(*side.news.lock().unwrap(), (0..sent).collect::<Vec<_>>(), "in order, none missing");
    }
    eventually("the stalled peer is dropped after the broadcast timeout", || server.stats().lagged_out == 1).await;
    eventually("only the readers remain", || server.peers().len() == 3).await;
    eprintln!("the stalled peer's queue was full after {first_waiting} broadcasts of 32 KiB");
    for conn in &clients {
        assert!(!conn.is_closed());
    }
}

/// A peer that does not read may lag by its outbound buffer (for the broadcast timeout), never
/// by twice that: the broadcast that would take it there disconnects it at once, counted, while
/// the others get everything. What it can make the server hold is bounded in bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_peer_is_disconnected_at_once_at_twice_its_outbound_buffer() {
    let shared = Arc::new(Shared::default());
    let limits = Limits::new().outbound_buffer(256 * 1024);
    let (server, addr) = tcp_server(
        ServerBuilder::new(Connection::builder().limits(limits))
            // Long: only the byte bound can end the stalled peer within the test.
            .broadcast_timeout(Duration::from_secs(60))
            .serve_with(Session::factory(shared)),
    )
    .await;
    let side = ClientSide::named("reader");
    let reader = within(client(&side).connect_tcp(addr)).await.unwrap();
    within(StoreClient::new(reader.handle()).add(0, 0)).await.unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 * 1024).unwrap();
    let _stalled = socket.connect(addr).await.unwrap();
    eventually("the stalled peer is served", || server.peers().len() == 2).await;

    let text = "n".repeat(64 * 1024);
    let mut sent = 0u64;
    let mut disconnected_at = None;
    while sent < 1000 {
        let report = server.broadcast("watcher/news", (sent, &text)).unwrap();
        sent += 1;
        reach(&side.news_count, sent as usize).await;
        if report.disconnected == 1 {
            disconnected_at = Some(sent);
            break;
        }
    }
    let disconnected_at = disconnected_at.expect("the stalled peer was never disconnected");
    // The kernel's socket buffers take a few MiB on loopback, the writer holds a batch, the
    // queue at most 512 KiB; then it goes, without waiting for the broadcast timeout.
    eprintln!("the stalled peer was disconnected at broadcast {disconnected_at} of 64 KiB");
    assert!(disconnected_at < 256, "disconnected only after {disconnected_at} broadcasts of 64 KiB");
    assert_eq!(server.stats().lagged_out, 1);
    eventually("only the reader remains", || server.peers().len() == 1).await;
    assert_eq!(*side.news.lock().unwrap(), (0..sent).collect::<Vec<_>>(), "in order, none missing");
    assert!(!reader.is_closed());
}

/// A service built per connection sees its own peer; a clash with the shared service closes
/// that connection with a reason naming the method, and does not affect the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_connection_services_and_a_clash_reported_as_the_close_reason() {
    let (server, addr) = tcp_server(
        Server::builder()
            .serve(Router::new().method("shared", |(): (), _| async { Ok::<_, ErrorObject>("same for all") }))
            .serve_with(|peer| {
                let id = peer.id();
                let router = Router::new().method("mine", move |(): (), _| async move { Ok::<_, ErrorObject>(id) });
                // Connection 1 (the second) also registers `shared`: a clash.
                if id == 1 {
                    router.method("shared", |(): (), _| async { Ok::<_, ErrorObject>("clash") })
                } else {
                    router
                }
            }),
    )
    .await;
    let a = within(Connection::builder().connect_tcp(addr)).await.unwrap();
    assert_eq!(within(a.handle().request::<u64>("mine", ())).await.unwrap(), 0);
    assert_eq!(within(a.handle().request::<String>("shared", ())).await.unwrap(), "same for all");
    let b = within(Connection::builder().connect_tcp(addr)).await.unwrap();
    match within(b.handle().request::<u64>("mine", ())).await {
        Err(Error::ConnectionLost(reason)) => assert_eq!(reason.kind, CloseKind::RemoteClosed),
        other => panic!("{other:?}"),
    }
    let c = within(Connection::builder().connect_tcp(addr)).await.unwrap();
    assert_eq!(within(c.handle().request::<u64>("mine", ())).await.unwrap(), 2);
    assert_eq!(within(a.handle().request::<u64>("mine", ())).await.unwrap(), 0);
    drop(server);
}

/// Garbage, a broken frame and a peer that dies mid-call each end their own connection only;
/// a healthy client's calls go on throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_dying_peers_affect_only_themselves() {
    let shared = Arc::new(Shared::default());
    let (server, addr) = tcp_server(Server::builder().serve_with(Session::factory(shared.clone()))).await;
    let side = ClientSide::named("healthy");
    let healthy = within(client(&side).connect_tcp(addr)).await.unwrap();
    let store = StoreClient::new(healthy.handle());
    let calls = tokio::spawn(async move {
        for i in 0..2000i64 {
            assert_eq!(store.add(i, 1).await.unwrap(), i + 1);
        }
    });

    // Unparsable JSON in a valid frame: answered -32700, that connection goes on.
    let mut junk = TcpStream::connect(addr).await.unwrap();
    junk.write_all(b"Content-Length: 9\r\n\r\n{not json").await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = within(junk.read(&mut buf)).await.unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.contains("-32700"), "{text}");

    // A broken header: that connection is closed, as a protocol violation.
    let mut broken = TcpStream::connect(addr).await.unwrap();
    broken.write_all(b"Content-Length: banana\r\n\r\n").await.unwrap();
    assert_eq!(read_to_eof(&mut broken).await, "");

    // Random bytes without end: closed at the header limit.
    let mut noise = TcpStream::connect(addr).await.unwrap();
    let _ = noise.write_all(&[b'x'; 64 * 1024]).await;
    let mut rest = Vec::new();
    let _ = within(noise.read_to_end(&mut rest)).await;

    // A peer that dies with a call in flight (its socket just goes away): its connection ends.
    let mut dying = TcpStream::connect(addr).await.unwrap();
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"kv/parked","params":[1]}"#;
    dying.write_all(format!("Content-Length: {}\r\n\r\n{request}", request.len()).as_bytes()).await.unwrap();
    reach(&shared.parked_started, 1).await;
    let dying_peer = server.peers().into_iter().max_by_key(|p| p.id()).unwrap();
    drop(dying);
    let reason = within(dying_peer.handle().closed()).await;
    assert!(matches!(reason.kind, CloseKind::RemoteClosed | CloseKind::StreamError), "{reason}");

    within(calls).await.unwrap();
    eventually("the bad peers are gone", || server.peers().len() <= 2).await;
    assert!(!healthy.is_closed());
    assert_eq!(within(StoreClient::new(healthy.handle()).add(40, 2)).await.unwrap(), 42);
    drop(junk);
}

/// A peer is listed from before its first message is read: a broadcast made by the handler of
/// its very first request reaches it, ahead of that request's answer. Each raw client writes its
/// request before the server has even accepted it, so its connection reads the request as it
/// starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_from_a_peers_first_request_reaches_that_peer_first() {
    let (server, addr) = tcp_server(Server::builder().serve_with(|peer| {
        let server = peer.server().clone();
        Router::new().method("shout", move |(word,): (String,), _ctx| {
            let reached = server.broadcast("shouted", [&word]).map(|b| b.queued);
            async move { reached.map_err(ErrorObject::internal_error) }
        })
    }))
    .await;
    for run in 0..100 {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (read, write) = stream.into_split();
        let mut peer = support::raw_peer::RawPeer::new(read, write, jsonrpc_duplex::Framing::ContentLength);
        peer.send(br#"{"jsonrpc":"2.0","id":1,"method":"shout","params":["hi"]}"#).await;
        let first = within(peer.recv()).await;
        assert_eq!(first["method"], "shouted", "run {run}: the broadcast comes first: {first}");
        let answer = within(peer.recv()).await;
        assert_eq!(answer["id"], 1, "run {run}: {answer}");
        assert!(answer["result"].as_u64() >= Some(1), "run {run}: {answer}");
    }
    drop(server);
}

/// Write one Content-Length request on a raw socket and read its answer (bounded).
async fn raw_call(stream: &mut TcpStream, id: u64, method: &str, params: Value) -> Value {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    within(stream.write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes())).await.unwrap();
    let mut got = Vec::new();
    loop {
        let mut chunk = [0u8; 256];
        let n = within(stream.read(&mut chunk)).await.unwrap();
        assert!(n > 0, "EOF before the answer: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let len: usize = head.trim_start_matches("Content-Length: ").parse().unwrap();
            if rest.len() >= len {
                return serde_json::from_str(&rest[..len]).unwrap();
            }
        }
    }
}

/// An idle peer costs the server one task, its connection's reader: the task that starts a
/// peer ends once its connection runs (the connection holds what the server keeps for it), and
/// still the peer is unlisted and counted as closed when it goes, and a shutdown closes and
/// waits for every one left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_peer_costs_the_server_one_task() {
    let alive = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
    let (server, addr) = tcp_server(Server::builder().serve(router)).await;
    let listening = alive();
    let mut peers = Vec::new();
    for i in 0..5 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let answer = raw_call(&mut stream, i, "add", serde_json::json!([i, 1])).await;
        assert_eq!(answer["result"], i + 1, "{answer}");
        peers.push(stream);
    }
    eventually("the start tasks have ended, the readers wait", || alive() == listening + 5).await;
    assert_eq!(server.peers().len(), 5);
    assert_eq!(server.stats().active, 5);

    // A peer that leaves: its connection ends by itself, and the server unlists and counts it.
    drop(peers.pop());
    eventually("the peer that left is unlisted and counted", || {
        let stats = server.stats();
        server.peers().len() == 4 && stats.active == 4 && stats.closed == 1
    })
    .await;

    // A shutdown closes the peers left (no task of the server's waits on them) and waits for
    // their end: each raw peer reads EOF.
    let report = within(server.shutdown(Duration::from_secs(1))).await;
    assert_eq!(report.closed_connections, 4);
    assert_eq!((report.stats.active, report.stats.closed), (0, 5), "{:?}", report.stats);
    for mut stream in peers {
        assert_eq!(read_to_eof(&mut stream).await, "");
    }
}

/// Dropping the `Server` closes its running peers too, though no task of its own holds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_server_closes_its_idle_peers() {
    let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
    let (server, addr) = tcp_server(Server::builder().serve(router)).await;
    let mut peers = Vec::new();
    for i in 0..3 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        assert_eq!(raw_call(&mut stream, i, "add", serde_json::json!([i, 2])).await["result"], i + 2);
        peers.push(stream);
    }
    drop(server);
    for mut stream in peers {
        assert_eq!(read_to_eof(&mut stream).await, "");
    }
}
