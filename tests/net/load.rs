//! Load over TCP on loopback: 1,000 simultaneous connections each making typed calls (and taking
//! a call back and a push), all answered correctly. Every loop is bounded in count, every wait
//! in time.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use jsonrpc_duplex::server::Server;
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{Builder, Connection};
use support::host::*;
use support::kv::*;
use support::time::*;

fn client(side: &Arc<ClientSide>) -> Builder {
    Connection::builder().serve(WatcherServer::new(side.clone()))
}

/// Connections wanted; fewer if this process may not open two sockets per connection (both ends
/// live here) plus some slack.
const CONNECTIONS: usize = 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_simultaneous_tcp_connections_all_answered() {
    let limit = open_files_limit().unwrap_or(1024);
    let n = CONNECTIONS.min(limit.saturating_sub(128) as usize / 2);
    if n < CONNECTIONS {
        eprintln!("note: the open-files limit is {limit}: testing {n} connections instead of {CONNECTIONS}");
    }
    assert!(n >= 100, "the open-files limit ({limit}) is too low for a meaningful test");

    let shared = Arc::new(Shared::default());
    let server = Server::builder().serve_with(Session::factory(shared)).bind_tcp("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).unwrap();
    let rss_before = rss_kib();

    // All connect at once; each calls, is called back, and checks every answer.
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            tokio::spawn(async move {
                let side = ClientSide::named(&format!("client-{i}"));
                let conn = client(&side).connect_tcp(addr).await.expect("connect");
                let store = StoreClient::new(conn.handle());
                let id = store.whoami().await.expect("whoami");
                assert_eq!(store.hello().await.expect("hello"), format!("hello, client-{i} (connection {id})"));
                for k in 0..5i64 {
                    assert_eq!(store.add(i as i64, k).await.expect("add"), i as i64 + k);
                }
                (conn, side, id)
            })
        })
        .collect();
    let results = tokio::time::timeout(Duration::from_secs(180), join_all(tasks)).await.expect("all within 180 s");
    let connected = start.elapsed();
    let mut clients = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for r in results {
        let (conn, side, id) = r.expect("a client task");
        assert!(ids.insert(id), "connection ids are unique");
        clients.push((conn, side));
    }
    assert_eq!(server.peers().len(), n);
    let rss_after = rss_kib();

    // Everyone at once again: 20 calls each, pipelined per client.
    let start = Instant::now();
    let calls = clients.iter().enumerate().map(|(i, (conn, _))| {
        let store = StoreClient::new(conn.handle());
        async move {
            let answers = join_all((0..20i64).map(|k| store.add(i as i64, k))).await;
            for (k, a) in answers.into_iter().enumerate() {
                assert_eq!(a.expect("add"), i as i64 + k as i64);
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(180), join_all(calls)).await.expect("all calls within 180 s");
    let call_time = start.elapsed();

    // A push reaches every one of them.
    let report = server.broadcast("watcher/news", (1, "to everyone")).unwrap();
    assert_eq!(report.queued, n);
    for (_, side) in &clients {
        reach(&side.news_count, 1).await;
    }

    let per_conn = match (rss_before, rss_after) {
        (Some(b), Some(a)) => format!("{:.1} KiB per connection (both ends)", (a.saturating_sub(b)) as f64 / n as f64),
        _ => "RSS unavailable".into(),
    };
    eprintln!(
        "{n} connections: connected and 7 calls each in {connected:?}; then {} calls in {call_time:?} ({:.0} calls/s); {per_conn}",
        n * 20,
        (n * 20) as f64 / call_time.as_secs_f64()
    );

    let report = within(server.shutdown(Duration::from_secs(5))).await;
    assert_eq!(report.closed_connections, n);
    assert_eq!(report.stats.accepted as usize, n);
    for (conn, _) in &clients {
        within(conn.closed()).await;
    }
}
