//! An `#[rpc]` server's service is shared by every connection a server serves it on: a
//! request does not clone its `Arc` (a count every worker thread would write, twice a request).
//! Each connection keeps one clone from its first request until it ends. Counted with
//! `Arc::strong_count` while requests run, on connections driven by a hand-written peer.

use crate::support;

use std::sync::Arc;

use jsonrpc_duplex::{Connection, Framing, RpcError, rpc};
use serde_json::json;
use support::raw_peer::pair;
use support::time::{eventually, within};
use tokio::sync::{Notify, Semaphore};

/// A service whose `wait` runs until the test lets it go.
#[rpc(server)]
pub trait Held {
    /// Answers once let go.
    async fn wait(&self) -> Result<u32, RpcError>;
    /// Answers at once.
    async fn now(&self, n: u32) -> u32;
    /// Answers nothing, at once.
    async fn nothing(&self);
}

struct Gate {
    entered: Notify,
    go: Semaphore,
}

impl Held for Gate {
    async fn wait(&self) -> Result<u32, RpcError> {
        self.entered.notify_one();
        self.go.acquire().await.expect("open").forget();
        Ok(7)
    }
    async fn now(&self, n: u32) -> u32 {
        n
    }
    async fn nothing(&self) {}
}

#[tokio::test]
async fn a_request_does_not_clone_the_service_and_a_connection_keeps_one_clone_until_it_ends() {
    let service = Arc::new(Gate { entered: Notify::new(), go: Semaphore::new(0) });
    let router = HeldServer::from_arc(service.clone()).into_router();
    // The router's own (one a method) and ours.
    let base = Arc::strong_count(&service);

    let (conn, mut peer) = pair(Connection::builder().serve(router.clone()), Framing::ContentLength);
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"now","params":[5]})).await;
    within(peer.expect(json!({"jsonrpc":"2.0","id":1,"result":5}))).await;
    // The connection's clone, taken at its first request.
    assert_eq!(Arc::strong_count(&service), base + 1);

    // Requests in flight (one waits, the others are answered meanwhile) take no clone.
    peer.send_json(json!({"jsonrpc":"2.0","id":2,"method":"wait"})).await;
    within(service.entered.notified()).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":3,"method":"now","params":[6]})).await;
    within(peer.expect(json!({"jsonrpc":"2.0","id":3,"result":6}))).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":4,"method":"nothing"})).await;
    within(peer.expect(json!({"jsonrpc":"2.0","id":4,"result":null}))).await;
    assert_eq!(Arc::strong_count(&service), base + 1, "no clone while a request runs");
    service.go.add_permits(1);
    within(peer.expect(json!({"jsonrpc":"2.0","id":2,"result":7}))).await;

    // A second connection on the same router keeps a clone of its own.
    let (other, mut other_peer) = pair(Connection::builder().serve(router.clone()), Framing::ContentLength);
    other_peer.send_json(json!({"jsonrpc":"2.0","id":1,"method":"now","params":[1]})).await;
    within(other_peer.expect(json!({"jsonrpc":"2.0","id":1,"result":1}))).await;
    assert_eq!(Arc::strong_count(&service), base + 2);

    // Each gives it back as it ends: once its tasks have let the connection go, which is after
    // `closed` resolves (that is the peer's EOF), so waited for.
    drop(peer);
    within(conn.closed()).await;
    drop(conn);
    eventually("the first connection's clone given back", || Arc::strong_count(&service) == base + 1).await;
    drop(other_peer);
    within(other.closed()).await;
    drop(other);
    eventually("the second connection's clone given back", || Arc::strong_count(&service) == base).await;
    drop(router);
    assert_eq!(Arc::strong_count(&service), 1);
}
