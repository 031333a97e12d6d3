//! Streams, `$/progress` and `$/cancelRequest` against node's `vscode-jsonrpc@10.0.0`:
//!
//! - `vscode_client_pulls_streams_and_takes_progress`: a vscode-jsonrpc client
//!   (`tests/interop/node/vscode_streams.js`) spawns the `conformance_peer` example and pulls its
//!   streams by hand with `$/enumerator/next` / `$/enumerator/abort`, cancels a `next` with
//!   `$/cancelRequest`, and takes `withProgress` reports with `onProgress`;
//! - the other tests spawn the vscode-jsonrpc server `vscode_peer.js` and take its `$/progress`
//!   reports on tokens we issued.
//!
//! Needs `node` (>= 18); `npm ci` runs once when `node_modules` is missing. Every wait is bounded.

use crate::support;

use futures::StreamExt;
use jsonrpc_duplex::{CallOptions, CancellationToken, Connection, Error, ProgressToken, Router};
use serde_json::{Value, json};
use support::node::{node_dir, node_ready, run_client_script};
use support::time::within;
use tokio::process::Command;

#[tokio::test]
async fn vscode_client_pulls_streams_and_takes_progress() {
    let (summary, checks) = run_client_script("vscode_streams.js").await;
    for expected in [
        "withProgress reports reach onProgress, all before the answer",
        "countTo pulled with $/enumerator/next to finished, then -32001",
        "failAfter: the items, then the error, then -32001",
        "abort stops countToSlowly mid-item",
        "$/cancelRequest on a next ends the sequence with -32800",
        "$/cancelRequest on withProgress still answers",
        "exit 0 on EOF",
    ] {
        assert!(checks.iter().any(|c| c == expected), "check {expected:?} missing from {summary}");
    }
}

fn spawn_vscode_peer() -> Connection {
    node_ready();
    let mut cmd = Command::new("node");
    cmd.arg("vscode_peer.js").current_dir(node_dir());
    Connection::builder().serve(Router::new()).spawn_child(cmd).expect("spawning node vscode_peer.js")
}

#[tokio::test]
async fn vscode_jsonrpc_reports_on_our_token_all_before_its_answer() {
    let conn = spawn_vscode_peer();
    for _ in 0..3 {
        let h = conn.handle();
        let (token, receiver) = h.progress::<Value>();
        let call = h.request::<Value>("progress", json!({"token": token, "steps": 3, "delayMs": 1}));
        let mut seen = Vec::new();
        let answer = within(receiver.drive(call, |v| seen.push(v))).await.unwrap();
        assert_eq!(answer, json!({"done": 3}));
        let kinds: Vec<&str> = seen.iter().filter_map(|v| v["kind"].as_str()).collect();
        assert_eq!(kinds, ["begin", "report", "report", "report", "end"], "{seen:?}");
        assert_eq!(seen[3]["message"], "step 3/3");
    }
}

#[tokio::test]
async fn our_cancel_request_reaches_vscode_jsonrpc_while_our_receiver_waits() {
    let conn = spawn_vscode_peer();
    // `slow` reports nothing; the receiver of the token in its params ends with the -32800.
    let h = conn.handle();
    let (token, mut receiver) = h.progress::<Value>();
    let cancel = CancellationToken::new();
    let options = CallOptions::new().cancel(cancel.clone());
    // The token itself goes in the params (not a `json!` copy of it), so that it binds to the call.
    #[derive(serde::Serialize)]
    struct Slow {
        ms: u64,
        token: ProgressToken,
    }
    let slow = h.request_with::<Value>("slow", Slow { ms: 30_000, token }, options);
    let mut slow = std::pin::pin!(slow);
    assert!(futures::poll!(slow.as_mut()).is_pending());
    // vscode-jsonrpc takes messages in order: once this answer is back, `slow` has started.
    let echoed: Value = within(conn.handle().request("echo", json!(["ping"]))).await.unwrap();
    assert_eq!(echoed, json!(["ping"]));
    cancel.cancel();
    let outcome = within(slow).await;
    assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
    assert!(within(receiver.next()).await.is_none());
    let pending: u64 = within(conn.handle().request("pendingSlow", ())).await.unwrap();
    assert_eq!(pending, 0);
}
