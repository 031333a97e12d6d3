//! What a cancellation says and when none is sent: the caller's reason (MCP carries one), the
//! peer's reason as a handler reads it, a timeout that does not cancel, and MCP's `initialize`,
//! which is never cancelled.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jsonrpc_duplex::{
    CallOptions, CancelProtocol, CancellationToken, Connection, Error, ErrorObject, Framing, RequestContext, Router,
};
use serde_json::{Value, json};
use support::logs::capture_logs;
use support::raw_peer::{RawPeer, pair};
use support::time::within;
use tokio::sync::{Notify, mpsc};

/// Start `method` on its own task; return the task once the peer has seen the request, and its id.
async fn start_call(
    conn: &Connection,
    peer: &RawPeer,
    method: &'static str,
    options: CallOptions,
) -> (tokio::task::JoinHandle<Result<Value, Error>>, Value) {
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request_with::<Value>(method, (), options).await });
    let req = peer.recv().await;
    assert_eq!(req["method"], method, "{req}");
    (call, req["id"].clone())
}

fn mcp() -> jsonrpc_duplex::Builder {
    Connection::builder().cancel_protocol(CancelProtocol::mcp())
}

#[tokio::test]
async fn mcp_sends_the_callers_reason_and_says_why_when_it_gave_none() {
    let (conn, peer) = pair(mcp(), Framing::NewlineDelimited);
    // (the reason expected, the options, how the call stops: `true` by its token, `false` dropped)
    let cases = [
        ("the user pressed stop", CallOptions::new().cancel_reason("the user pressed stop"), true),
        ("cancelled by the caller", CallOptions::new(), true),
        ("the caller stopped waiting", CallOptions::new(), false),
        ("window closed", CallOptions::new().cancel_reason("window closed"), false),
    ];
    for (reason, options, by_token) in cases {
        let token = CancellationToken::new();
        let (call, id) = start_call(&conn, &peer, "slow", options.cancel(token.clone())).await;
        if by_token {
            token.cancel();
        } else {
            call.abort();
        }
        let _ = within(call).await;
        peer.expect(
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":reason}}),
        )
        .await;
    }
    let (call, id) = start_call(&conn, &peer, "slow", CallOptions::new().timeout(Duration::from_millis(20))).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Timeout(_))));
    peer.expect(
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"timed out after 20ms"}}),
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_may_time_out_without_cancelling_the_request() {
    let (_guard, logs) = capture_logs();
    for cancel in [CancelProtocol::lsp(), CancelProtocol::mcp()] {
        let (conn, mut peer) = pair(Connection::builder().cancel_protocol(cancel), Framing::ContentLength);
        let options = CallOptions::new().timeout(Duration::from_millis(20)).cancel_on_timeout(false);
        let (call, id) = start_call(&conn, &peer, "save", options).await;
        assert!(matches!(within(call).await.unwrap(), Err(Error::Timeout(_))));
        peer.expect_silence(Duration::from_millis(100)).await;
        // The peer finishes the request anyway: its answer is absorbed.
        peer.send_json(json!({"jsonrpc":"2.0","id":id,"result":"saved"})).await;
        let (call, id) = start_call(&conn, &peer, "next", CallOptions::new()).await;
        peer.send_json(json!({"jsonrpc":"2.0","id":id,"result":1})).await;
        assert_eq!(within(call).await.unwrap().unwrap(), json!(1));
    }
    let logs = logs.text();
    assert!(logs.contains("late answer to an abandoned call absorbed"), "{logs}");
    assert!(!logs.contains("never sent"), "{logs}");
}

/// A `work` handler that reports its request's cancellation reason once its token fires.
fn reporting_server(cancel: CancelProtocol, reasons: mpsc::UnboundedSender<Option<String>>) -> jsonrpc_duplex::Builder {
    Connection::builder().cancel_protocol(cancel).serve(Router::new().method(
        "work",
        move |(): (), ctx: RequestContext| {
            let reasons = reasons.clone();
            async move {
                ctx.cancellation().cancelled().await;
                let _ = reasons.send(ctx.cancel_reason().map(str::to_owned));
                Err::<(), _>(ErrorObject::request_cancelled())
            }
        },
    ))
}

#[tokio::test]
async fn a_handler_reads_the_reason_the_peer_gave() {
    let (tx, mut reasons) = mpsc::unbounded_channel();
    let (_conn, mut peer) = pair(reporting_server(CancelProtocol::mcp(), tx.clone()), Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"work"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"too slow"}}"#)
        .await;
    assert_eq!(within(reasons.recv()).await.unwrap().as_deref(), Some("too slow"));
    // No reason given (or not a string): none to read.
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"work"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":7}}"#).await;
    assert_eq!(within(reasons.recv()).await.unwrap(), None);

    let (_conn, mut peer) = pair(reporting_server(CancelProtocol::lsp(), tx), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":"a","method":"work"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"a"}}"#).await;
    assert_eq!(within(reasons.recv()).await.unwrap(), None);
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!("a"), -32800));
}

#[tokio::test(flavor = "current_thread")]
async fn mcp_never_cancels_initialize_in_either_direction() {
    let (_guard, logs) = capture_logs();
    // Outbound: the call stops waiting (token, timeout, drop), but nothing is sent.
    let (conn, peer) = pair(mcp(), Framing::NewlineDelimited);
    let token = CancellationToken::new();
    let (call, _) = start_call(&conn, &peer, "initialize", CallOptions::new().cancel(token.clone())).await;
    token.cancel();
    assert!(matches!(within(call).await.unwrap(), Err(Error::Cancelled)));
    let (call, _) = start_call(&conn, &peer, "initialize", CallOptions::new().timeout(Duration::from_millis(20))).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Timeout(_))));
    let (call, _) = start_call(&conn, &peer, "initialize", CallOptions::new()).await;
    call.abort();
    let _ = within(call).await;
    peer.expect_silence(Duration::from_millis(100)).await;
    // Other methods are cancelled as usual.
    let (call, id) = start_call(&conn, &peer, "tools/call", CallOptions::new()).await;
    call.abort();
    let _ = within(call).await;
    let cancel = peer.recv().await;
    assert_eq!((cancel["method"].as_str(), &cancel["params"]["requestId"]), (Some("notifications/cancelled"), &id));

    // Inbound: the peer's cancellation of `initialize` is ignored; the handler runs on and answers.
    let release = Arc::new(Notify::new());
    let go = release.clone();
    let server = mcp().serve(Router::new().method("initialize", move |(): (), _ctx| {
        let go = go.clone();
        async move {
            go.notified().await;
            Ok::<_, ErrorObject>(json!({"protocolVersion":"2025-06-18"}))
        }
    }));
    let (_server, mut peer) = pair(server, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0,"reason":"bored"}}"#)
        .await;
    peer.expect_silence(Duration::from_millis(50)).await;
    release.notify_one();
    peer.expect(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}})).await;
    let logs = logs.text();
    assert!(logs.contains("forbids cancelling"), "{logs}");
}
