//! Isolation over TCP on loopback: a peer that never reads while the others keep their
//! throughput, measured before and during the stall (not slept). Alone in its test binary, so
//! that no other test's load skews the measurement (garbage and dying peers: `net_server`).
//! Every loop is bounded in count, every wait in time.

mod support;

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use jsonrpc_duplex::server::ServerBuilder;
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{Builder, Connection, Limits};
use support::kv::*;
use support::time::*;
use tokio::io::AsyncWriteExt;

fn client(side: &Arc<ClientSide>) -> Builder {
    Connection::builder().serve(WatcherServer::new(side.clone()))
}

/// Each of `clients` makes `calls` sequential calls; all run at once. Returns calls per second.
async fn throughput(clients: &[Connection], calls: i64) -> f64 {
    let start = Instant::now();
    let work = clients.iter().map(|conn| {
        let store = StoreClient::new(conn.handle());
        async move {
            for k in 0..calls {
                assert_eq!(store.add(k, 1).await.expect("add"), k + 1);
            }
        }
    });
    within(join_all(work)).await;
    (clients.len() as i64 * calls) as f64 / start.elapsed().as_secs_f64()
}

/// A peer that floods requests for large answers and never reads: its connection stalls (the
/// server stops taking its requests once its unread answers fill the outbound budget), and the
/// other clients' throughput, measured before and during the stall, holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_does_not_slow_the_others() {
    const BLOB: usize = 256 * 1024;
    const REQUESTS: usize = 200; // 50 MiB of answers: far beyond any buffer on the way
    let shared = Arc::new(Shared::default());
    let limits = Limits::new().outbound_buffer(1024 * 1024);
    let server = ServerBuilder::new(Connection::builder().limits(limits))
        .serve_with(Session::factory(shared.clone()))
        .bind_tcp("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    let mut clients = Vec::new();
    for i in 0..8 {
        let side = ClientSide::named(&format!("c{i}"));
        clients.push(within(client(&side).connect_tcp(addr)).await.unwrap());
    }
    throughput(&clients, 50).await; // warm up
    let before = throughput(&clients, 500).await;

    // The stalled peer: a 16 KiB receive buffer, 200 requests, and not one byte read.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 * 1024).unwrap();
    let mut stalled = socket.connect(addr).await.unwrap();
    let mut requests = String::new();
    for id in 0..REQUESTS {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"kv/blob","params":[{BLOB}]}}"#);
        requests.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    }
    within(stalled.write_all(requests.as_bytes())).await.unwrap();
    // 1.5 MiB of answers for a peer that takes none: beyond its outbound budget (1 MiB) and its
    // receive buffer, so its connection is backed up. (Always reached: the dispatcher starts
    // requests until more than the budget waits unwritten, and the writer holds one more.)
    reach(&shared.blobs_seen, 6).await;

    let during = throughput(&clients, 500).await;
    let answered = *shared.blobs_seen.borrow();
    eprintln!(
        "throughput of 8 clients: {before:.0} calls/s before, {during:.0} calls/s while a peer stalls \
         ({answered} of its {REQUESTS} large requests started)"
    );
    // The stall held for the whole measurement: the peer cannot have been answered.
    assert!(answered < REQUESTS, "the stalled peer was served everything ({answered})");
    // Generous (the machine is shared): the others keep at least a third of their throughput.
    assert!(during >= before / 3.0, "throughput fell from {before:.0} to {during:.0} calls/s");
    // And its connection is still open, just paused: nothing was dropped.
    assert_eq!(server.peers().len(), 9);
    drop(stalled);
}
