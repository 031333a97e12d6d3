//! Isolation over TCP on loopback: while a peer that never reads is stalled, the other clients'
//! calls all complete, each within the bound of a wait (how fast they go is the benches' to
//! measure). Garbage and dying peers: `server`. Every loop is bounded in count, every wait
//! in time.

use crate::support;

use std::sync::Arc;

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

/// Each of `clients` makes `calls` sequential calls, all clients at once; every call must be
/// answered, and answered within [`WAIT`] (a call stuck behind the stalled peer fails here).
async fn every_call_completes(clients: &[Connection], calls: i64) {
    let work = clients.iter().map(|conn| {
        let store = StoreClient::new(conn.handle());
        async move {
            for k in 0..calls {
                assert_eq!(within(store.add(k, 1)).await.expect("add"), k + 1);
            }
        }
    });
    join_all(work).await;
}

/// A peer that floods requests for large answers and never reads: its connection stalls (the
/// server stops taking its requests once its unread answers fill the outbound budget), and the
/// other clients' calls, made while it stays stalled, are all answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_does_not_hold_up_the_others_calls() {
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
    every_call_completes(&clients, 50).await;

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

    every_call_completes(&clients, 500).await;
    // The stall held for the whole time the others were served: the peer cannot have been
    // answered (nothing of its was read).
    let answered = *shared.blobs_seen.borrow();
    assert!(answered < REQUESTS, "the stalled peer was served everything ({answered})");
    // And its connection is still open, just paused: nothing was dropped.
    assert_eq!(server.peers().len(), 9);
    drop(stalled);
}
