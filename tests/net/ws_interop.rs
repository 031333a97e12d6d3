//! WebSocket interop with a third-party peer: node's `ws` package (`tests/interop/ws/`), speaking
//! JSON-RPC in raw frames written by hand.
//!
//! - `node_ws_client_drives_our_server`: the node client calls our server, is called back,
//!   receives a push, sends a batch, garbage, a binary frame, a ping and a close frame;
//! - `our_client_drives_a_node_ws_server`: our typed client against a node `ws` server that
//!   calls it back, pushes to it and pings it.
//!
//! Needs the `websocket` feature (`cargo test --all-features`), and `node` (>= 18) and `npm` on
//! the `PATH`; `npm ci` runs once when `node_modules` is missing. Loopback only; every wait is
//! bounded.
#![cfg(feature = "websocket")]

use crate::support;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::server::Server;
use jsonrpc_duplex::{CloseKind, Connection, Handle};
use support::interop;
use support::kv::*;
use support::time::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

fn ws_dir() -> PathBuf {
    interop::interop_dir("ws")
}

/// Node is on the `PATH` and `ws` is installed (`npm ci` runs once if it is not).
fn node_ready() {
    interop::npm_ready("ws", &["ws"]);
}

fn node(args: &[&str]) -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(ws_dir().join("ws_peer.js"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_ws_client_drives_our_server() {
    node_ready();
    let shared = Arc::new(Shared::default());
    let handles: Arc<Mutex<Vec<Handle>>> = Arc::default();
    let factory = Session::factory(shared);
    let seen = handles.clone();
    let server = Server::builder()
        .serve_with(move |peer| {
            seen.lock().unwrap().push(peer.handle().clone());
            factory(peer)
        })
        .bind_websocket("127.0.0.1:0")
        .await
        .unwrap();
    let url = format!("ws://{}/", server.local_addr().unwrap());

    let output = tokio::time::timeout(Duration::from_secs(30), node(&["client", &url]).output())
        .await
        .expect("the node client finished within 30 s")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "node client failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
    for step in ["add", "callback", "push", "batch", "garbage", "binary", "ping", "close"] {
        assert!(stdout.lines().any(|l| l == format!("ok {step}")), "step {step} missing:\n{stdout}");
    }

    // The node client's close frame is our connection's close reason.
    let handle = handles.lock().unwrap().pop().expect("the node client connected");
    let reason = within(handle.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteClosed);
    assert!(reason.message.contains("code 1000") && reason.message.contains("node is done"), "{reason}");
    eventually("the connection is gone", || server.stats().closed == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_drives_a_node_ws_server() {
    node_ready();
    let mut child = node(&["server"]).spawn().expect("node runs");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = within(stdout.next_line()).await.unwrap().expect("node prints its port");
    let port: u16 = first.strip_prefix("LISTENING ").and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{first}"));

    let side = ClientSide::named("rust");
    let conn = within(
        Connection::builder()
            .serve(WatcherServer::new(side.clone()))
            .connect_websocket(format!("ws://127.0.0.1:{port}/")),
    )
    .await
    .unwrap();
    let store = StoreClient::new(conn.handle());
    assert_eq!(within(store.add(2, 40)).await.unwrap(), 42);
    assert_eq!(within(store.hello()).await.unwrap(), "hello, rust (connection 0)");
    assert_eq!(within(store.set("lang".into(), "rust".into())).await.unwrap(), None);
    reach(&side.changed_count, 1).await;
    assert_eq!(*side.changes.lock().unwrap(), vec![("lang".to_string(), "rust".to_string())]);
    assert_eq!(within(store.get("lang".into())).await.unwrap(), Some("rust".into()));
    match within(store.whoami()).await {
        Err(jsonrpc_duplex::ClientError::Method(e)) => assert_eq!(e.code, jsonrpc_duplex::codes::METHOD_NOT_FOUND),
        other => panic!("{other:?}"),
    }

    // node pinged us when we connected: the pong came back before our calls were answered.
    let pong = within(stdout.next_line()).await.unwrap().expect("node reports the pong");
    assert_eq!(pong, "PONG from-node");

    // Our close frame reaches node with its code and reason.
    conn.close().await;
    let closed = within(stdout.next_line()).await.unwrap().expect("node reports the close");
    assert_eq!(closed, "CLOSED 1000 closed by this side");
    let status = within(child.wait()).await.unwrap();
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr).await;
    assert!(status.success(), "node server failed ({status}): {stderr}");
}
