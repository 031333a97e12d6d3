//! Interop with node's `vscode-jsonrpc@10.0.0`, the JSON-RPC library of VS Code and most LSP
//! servers (see `tests/interop/node/`).
//!
//! - `vscode_client_drives_conformance_peer`: a vscode-jsonrpc client (`vscode_client.js`) spawns
//!   the `conformance_peer` example and exercises it;
//! - every other test spawns the vscode-jsonrpc server `vscode_peer.js` with
//!   `Connection::builder().spawn_child(...)` and calls it from Rust.
//!
//! Needs `node` (>= 18) and `npm` on the `PATH`; `npm ci` runs once when `node_modules` is missing.
//! Every wait is bounded, so a hang fails in seconds.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonrpc_duplex::{
    CallOptions, CancellationToken, CloseKind, Connection, Error, ErrorObject, Id, RequestContext, Router, codes,
};
use serde_json::{Value, json};
use support::node::{STEP, node_dir, node_ready, run_client_script};
use support::time::within;
use tokio::process::Command;
use tokio::sync::mpsc;

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,jsonrpc_duplex::child=info"));
    let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter(filter).try_init();
}

// ---------------------------------------------------------------------------------------------
// (b) vscode-jsonrpc client → our conformance_peer
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn vscode_client_drives_conformance_peer() {
    init_tracing();
    let (summary, checks) = run_client_script("vscode_client.js").await;
    for expected in [
        "echo (first request, id 0)",
        "echo with string ids",
        "add by name",
        "add by position",
        "add with wrong params -> -32602",
        "fail error shape",
        "unknown method -> -32601",
        "notifyMe ticks in order before the answer",
        "record/recorded",
        "callBack answered by this side",
        "callBack error passes through",
        "slow completes",
        "slow cancelled -> -32800, others served meanwhile",
        "panic -> -32603, connection survives",
        "exit 0 on EOF",
    ] {
        assert!(checks.iter().any(|c| c == expected), "check {expected:?} missing from {summary}");
    }
    assert_eq!(summary["ticks"], json!(25));
}

// ---------------------------------------------------------------------------------------------
// (c) our Connection → vscode_peer.js
// ---------------------------------------------------------------------------------------------

/// What our router saw from the peer.
#[derive(Default)]
struct Seen {
    /// `(id, params)` of each `client/ask`.
    asks: Mutex<Vec<(Id, Value)>>,
}

/// A `client/ask` that answers `{"answer":42,"got":params}`; `{"refuse":true}` is answered with an
/// error; `{"wait":true}` waits for its cancellation (its token is sent to `tokens`).
fn router_with_client_ask(seen: Arc<Seen>, tokens: mpsc::UnboundedSender<CancellationToken>) -> Router {
    Router::new().method("client/ask", move |params: Value, ctx: RequestContext| {
        seen.asks.lock().unwrap().push((ctx.id().clone(), params.clone()));
        let tokens = tokens.clone();
        async move {
            if params["refuse"] == json!(true) {
                return Err(ErrorObject::new(-32042, "refused by the Rust side").with_data(json!({"why": "asked to"})));
            }
            if params["wait"] == json!(true) {
                let token = ctx.cancellation().clone();
                let _ = tokens.send(token.clone());
                // The peer cancels on this notification: the handler runs before the
                // cancellation whatever the machine's load (a timer could fire first).
                let _ = ctx.peer().notify("client/started", ()).await;
                return tokio::select! {
                    _ = token.cancelled() => Err(ErrorObject::request_cancelled()),
                    _ = tokio::time::sleep(STEP) => Ok(json!("never cancelled")),
                };
            }
            Ok(json!({ "answer": 42, "got": params }))
        }
    })
}

struct Peer {
    conn: Connection,
    seen: Arc<Seen>,
    tokens: mpsc::UnboundedReceiver<CancellationToken>,
}

fn spawn_vscode_peer(extra: Router) -> Peer {
    init_tracing();
    node_ready();
    let seen = Arc::new(Seen::default());
    let (tx, tokens) = mpsc::unbounded_channel();
    let mut cmd = Command::new("node");
    cmd.arg("vscode_peer.js").current_dir(node_dir());
    let conn = Connection::builder()
        .serve(router_with_client_ask(seen.clone(), tx))
        .serve(extra)
        .spawn_child(cmd)
        .expect("spawning node vscode_peer.js");
    Peer { conn, seen, tokens }
}

fn remote(result: Result<Value, Error>) -> ErrorObject {
    match result {
        Err(Error::Remote(e)) => e,
        other => panic!("expected an error answer, got {other:?}"),
    }
}

#[tokio::test]
async fn echo_add_fail_and_unknown_method() {
    let peer = spawn_vscode_peer(Router::new());
    let h = peer.conn.handle();

    let params = json!({"nested": {"list": [1, "two", null, 3.5]}, "text": "ünïcödé ✓"});
    let echoed: Value = within(h.request("echo", &params)).await.unwrap();
    assert_eq!(echoed, params);
    // No params member at all: the peer answers `"result": null`.
    let echoed: Value = within(h.request("echo", ())).await.unwrap();
    assert_eq!(echoed, Value::Null);
    let echoed: Value = within(h.request("echo", [1, 2, 3])).await.unwrap();
    assert_eq!(echoed, json!([1, 2, 3]), "positional params arrive unspread");

    let sum: i64 = within(h.request("add", json!({"a": 2, "b": 40}))).await.unwrap();
    assert_eq!(sum, 42);
    let e = remote(within(h.request("add", json!({"a": "two"}))).await);
    assert_eq!(e.code, codes::INVALID_PARAMS);

    let e =
        remote(within(h.request("fail", json!({"code": -32099, "message": "custom", "data": {"k": [1, 2]}}))).await);
    assert_eq!((e.code, e.message.as_str()), (-32099, "custom"));
    assert_eq!(e.data_as::<Value>().expect("data").unwrap(), json!({"k": [1, 2]}));

    let e = remote(within(h.request("no/such/method", json!({"x": 1}))).await);
    assert_eq!(e.code, codes::METHOD_NOT_FOUND);
    assert_eq!(e.message, "Unhandled method no/such/method");

    // A typed call whose answer does not decode is a local error; the connection goes on.
    let bad: Result<u32, Error> = within(h.request("echo", json!({"not": "a number"}))).await;
    assert!(matches!(bad, Err(Error::Deserialize(_))), "{bad:?}");

    // Twenty pipelined calls come back matched to their ids.
    let calls = (0..20).map(|i| {
        let h = h.clone();
        async move { h.request::<i64>("add", json!({"a": i, "b": 1000})).await.unwrap() }
    });
    let sums = within(futures::future::join_all(calls)).await;
    assert_eq!(sums, (0..20).map(|i| i + 1000).collect::<Vec<i64>>());
}

#[tokio::test]
async fn callback_is_answered_by_our_router() {
    let peer = spawn_vscode_peer(Router::new());
    let h = peer.conn.handle();

    let question = json!({"question": "what is six times seven?"});
    let answer: Value = within(h.request("callBack", &question)).await.unwrap();
    assert_eq!(answer, json!({"answer": 42, "got": question}));
    {
        let asks = peer.seen.asks.lock().unwrap();
        // vscode-jsonrpc numbers its own requests from 0: id 0 is a real id.
        assert_eq!(asks.as_slice(), &[(Id::from(0u64), question.clone())]);
    }

    // Our error object travels back through the peer unchanged.
    let e = remote(within(h.request("callBack", json!({"refuse": true}))).await);
    assert_eq!((e.code, e.message.as_str()), (-32042, "refused by the Rust side"));
    assert_eq!(e.data_as::<Value>().expect("data").unwrap(), json!({"why": "asked to"}));
}

#[tokio::test]
async fn peer_cancels_our_handler() {
    let mut peer = spawn_vscode_peer(Router::new());
    let h = peer.conn.handle();

    let outcome: Value =
        within(h.request("callBackAndCancel", json!({"cancelOn": "client/started", "params": {"wait": true}})))
            .await
            .unwrap();
    assert_eq!(
        outcome,
        json!({"cancelled": true, "error": {"code": -32800, "message": "Request cancelled"}}),
        "the peer's $/cancelRequest reached our handler, which answered -32800"
    );
    // The handler sent its token before it answered, so before the peer's answer to us.
    let token = peer.tokens.try_recv().expect("our client/ask handler ran before the peer cancelled it");
    assert!(token.is_cancelled(), "the handler's cancellation token fired");

    // The connection is fine afterwards.
    let sum: i64 = within(h.request("add", json!({"a": 1, "b": 2}))).await.unwrap();
    assert_eq!(sum, 3);
}

#[tokio::test]
async fn slow_cancelled_from_our_side() {
    let peer = spawn_vscode_peer(Router::new());
    let h = peer.conn.handle();

    // By token, while the peer is running it: `$/cancelRequest` → the peer answers -32800.
    let token = CancellationToken::new();
    let started = Instant::now();
    let options = CallOptions::new().cancel(token.clone());
    let mut slow = std::pin::pin!(h.request_with::<Value>("slow", json!({"ms": 30_000}), options));
    // Polled once, the call is queued ahead of the `echo` below.
    assert!(futures::poll!(slow.as_mut()).is_pending());
    // vscode-jsonrpc takes messages in order: once this answer is back, `slow` has started.
    // (Params are an array or an object: JSON-RPC 2.0 has no scalar params.)
    let echoed: Value = within(h.request("echo", json!(["ping"]))).await.unwrap();
    assert_eq!(echoed, json!(["ping"]));
    token.cancel();
    let outcome = within(slow).await;
    assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
    assert!(started.elapsed() < STEP);

    // By timeout: the call fails at once; the peer's late -32800 is absorbed.
    let started = Instant::now();
    let outcome: Result<Value, Error> =
        within(h.request_with("slow", json!({"ms": 30_000}), CallOptions::new().timeout(Duration::from_millis(100))))
            .await;
    assert!(matches!(outcome, Err(Error::Timeout(_))), "{outcome:?}");
    assert!(started.elapsed() < STEP);

    // By dropping the call's future.
    let dropped = tokio::time::timeout(Duration::from_millis(100), h.request::<Value>("slow", json!({"ms": 30_000})));
    assert!(dropped.await.is_err(), "slow answered early");

    // Both abandoned calls were cancelled on the peer: vscode-jsonrpc applies `$/cancelRequest`
    // on receipt, before it takes the next request, and the peer's -32800 answers were absorbed.
    let pending: u64 = within(h.request("pendingSlow", ())).await.unwrap();
    assert_eq!(pending, 0, "the timed-out and the dropped call were cancelled on the peer");
    // A short `slow` still works and the peer is responsive.
    let slept: Value = within(h.request("slow", json!({"ms": 5}))).await.unwrap();
    assert_eq!(slept, json!({"slept": 5}));
    let notes: Value = within(h.request("getNotifications", ())).await.unwrap();
    assert_eq!(notes, json!([]), "$/cancelRequest is not a recorded notification");
}

#[tokio::test]
async fn progress_notifications_arrive_in_order() {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let log = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen_log = log.clone();
    let router = Router::new().notification("$/progress", move |p: Value, _ctx| {
        seen_log.lock().unwrap().push(p.clone());
        let _ = tx.send(p);
        async {}
    });
    let peer = spawn_vscode_peer(router);
    let h = peer.conn.handle();

    let done: Value = within(h.request("progress", json!({"token": "tok-1", "steps": 3, "delayMs": 1}))).await.unwrap();
    assert_eq!(done, json!({"done": 3}));
    let handled_when_answered = log.lock().unwrap().len();

    let mut kinds = Vec::new();
    for _ in 0..5 {
        let p = within(rx.recv()).await.expect("progress");
        assert_eq!(p["token"], json!("tok-1"));
        kinds.push(match p["value"]["kind"].as_str() {
            Some("report") => format!("report {}", p["value"]["message"].as_str().unwrap_or_default()),
            other => other.unwrap_or_default().to_owned(),
        });
    }
    assert_eq!(kinds, ["begin", "report step 1/3", "report step 2/3", "report step 3/3", "end"]);
    // The peer wrote all five before its answer (it awaits each send), and our reader queued them
    // for dispatch before it delivered the answer. Whether their handlers had also *run* when the
    // call resolved is not promised: answers bypass the dispatch queue (a handler that takes a
    // while is still running when the call returns).
    assert!(handled_when_answered <= 5);
}

#[tokio::test]
async fn emit_log_and_notifications_both_ways() {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let router = Router::new().notification("log", move |p: Value, _ctx| {
        let _ = tx.send(p);
        async {}
    });
    let peer = spawn_vscode_peer(router);
    let h = peer.conn.handle();

    let params = json!({"message": "hi", "level": "info"});
    within(h.request::<()>("emitLog", &params)).await.unwrap();
    assert_eq!(within(rx.recv()).await.unwrap(), params);

    h.notify("pleaseLog", json!({"message": "by notification"})).await.unwrap();
    assert_eq!(within(rx.recv()).await.unwrap(), json!({"message": "by notification", "via": "notification"}));

    // Our notifications arrive before our next request (one ordered outbound queue).
    h.notify("hello", json!({"n": 1})).await.unwrap();
    h.notify("hello", [2]).await.unwrap();
    h.notify("bye", ()).await.unwrap();
    let notes: Value = within(h.request("getNotifications", ())).await.unwrap();
    assert_eq!(
        notes,
        json!([
            {"method": "hello", "params": {"n": 1}},
            {"method": "hello", "params": [2]},
            {"method": "bye", "params": null},
        ])
    );
}

#[tokio::test]
async fn shutdown_then_exit_ends_the_connection() {
    let peer = spawn_vscode_peer(Router::new());
    let h = peer.conn.handle();

    within(h.request::<()>("shutdown", ())).await.unwrap();
    h.notify("exit", ()).await.unwrap();
    let reason = within(peer.conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteClosed, "{reason}");
    assert!(reason.message.contains("exit status: 0"), "the close reason carries the exit status: {reason}");
    assert!(h.is_closed());
    let after: Result<Value, Error> = within(h.request("echo", ())).await;
    assert!(matches!(after, Err(Error::ConnectionLost(_))), "{after:?}");
}

#[tokio::test]
async fn closing_our_side_fails_pending_calls() {
    let peer = spawn_vscode_peer(Router::new());
    let h = peer.conn.handle();

    let mut slow = std::pin::pin!(h.request::<Value>("slow", json!({"ms": 30_000})));
    assert!(futures::poll!(slow.as_mut()).is_pending());
    let echoed: Value = within(h.request("echo", json!([1]))).await.unwrap();
    assert_eq!(echoed, json!([1]));
    let reason = within(peer.conn.close()).await;
    assert_eq!(reason.kind, CloseKind::LocallyClosed, "{reason}");
    let outcome = within(slow).await;
    assert!(matches!(outcome, Err(Error::ConnectionLost(_))), "{outcome:?}");
}
