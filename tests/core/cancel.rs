//! Cancellation both ways, in the three wire spellings (LSP, ACP, MCP).

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpc_duplex::{CallOptions, CancelProtocol, CancellationToken, Connection, Error, ErrorObject, Framing, Router};
use serde_json::{Value, json};
use support::logs::capture_logs;
use support::raw_peer::{RawPeer, pair};
use support::time::within;
use tokio::sync::{Notify, mpsc};

async fn assert_alive(peer: &mut RawPeer, id: i64) {
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":"add","params":[id,1]})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":id,"result":id + 1})).await;
}

/// `add`, a `hang` that never finishes, and a `watch` whose reply handle reports when its
/// cancellation fires (on `fired`) and then drops unanswered.
fn router(fired: mpsc::UnboundedSender<Value>) -> Router {
    Router::new()
        .method("add", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a + b) })
        .method("hang", |(): (), _ctx| async move {
            std::future::pending::<()>().await;
            Ok::<(), ErrorObject>(())
        })
        .request_raw("watch", move |req, responder| {
            let fired = fired.clone();
            async move {
                tokio::spawn(async move {
                    responder.cancellation().cancelled().await;
                    let _ = fired.send(serde_json::to_value(req.id()).unwrap());
                    drop(responder);
                });
            }
        })
}

fn server(cancel: CancelProtocol) -> (jsonrpc_duplex::Builder, mpsc::UnboundedReceiver<Value>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Connection::builder().cancel_protocol(cancel).serve(router(tx)), rx)
}

/// Start a call on its own task; return its handle once the peer has seen the request, and its id.
async fn start_call(
    conn: &Connection,
    peer: &RawPeer,
    options: CallOptions,
) -> (tokio::task::JoinHandle<Result<Value, Error>>, Value) {
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request_with::<Value>("slow", (), options).await });
    let req = peer.recv().await;
    assert_eq!(req["method"], "slow", "{req}");
    (call, req["id"].clone())
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_a_calls_future_sends_cancel_request_and_a_late_answer_is_absorbed_quietly() {
    let (_guard, logs) = capture_logs();
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    let (call, id) = start_call(&conn, &peer, CallOptions::new()).await;
    call.abort();
    assert!(within(call).await.unwrap_err().is_cancelled());
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":id}})).await;

    // The peer answers anyway: nothing is sent back, nothing is logged as garbage.
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"error":{"code":-32800,"message":"Request cancelled"}})).await;
    let (call, id2) = start_call(&conn, &peer, CallOptions::new()).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":id2,"result":"fine"})).await;
    assert_eq!(within(call).await.unwrap().unwrap(), json!("fine"));
    let logs = logs.text();
    assert!(logs.contains("late answer to an abandoned call absorbed"), "{logs}");
    assert!(!logs.contains("never sent"), "{logs}");
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_per_call_timeout_sends_cancel_request_and_returns_timeout() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    let (call, id) = start_call(&conn, &peer, CallOptions::new().timeout(Duration::from_millis(50))).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":id}})).await;
    match within(call).await.unwrap() {
        Err(Error::Timeout(t)) => assert_eq!(t, Duration::from_millis(50)),
        other => panic!("{other:?}"),
    }
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"result":"too late"})).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn the_connections_default_timeout_applies_to_calls_without_their_own() {
    let (conn, peer) = pair(Connection::builder().default_timeout(Duration::from_millis(30)), Framing::ContentLength);
    let (call, id) = start_call(&conn, &peer, CallOptions::new()).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Timeout(_))));
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":id}})).await;
    // A call's own timeout wins over the default.
    let (call, id) = start_call(&conn, &peer, CallOptions::new().timeout(Duration::from_secs(60))).await;
    peer.expect_silence(Duration::from_millis(100)).await;
    let mut peer = peer;
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"result":1})).await;
    assert_eq!(within(call).await.unwrap().unwrap(), json!(1));
}

#[tokio::test]
async fn a_cancel_token_sends_cancel_request_and_the_peers_answer_decides_the_outcome() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::ContentLength);
    // The peer confirms with -32800: the call fails as cancelled.
    let token = CancellationToken::new();
    let (call, id) = start_call(&conn, &peer, CallOptions::new().cancel(token.clone())).await;
    token.cancel();
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":id}})).await;
    assert!(!call.is_finished(), "under LSP rules the call waits for the peer's answer");
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"error":{"code":-32800,"message":"Request cancelled"}})).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Cancelled)));

    // The peer had finished anyway: its result wins.
    let token = CancellationToken::new();
    let (call, id) = start_call(&conn, &peer, CallOptions::new().cancel(token.clone())).await;
    token.cancel();
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":id}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"result":"finished first"})).await;
    assert_eq!(within(call).await.unwrap().unwrap(), json!("finished first"));

    // A token cancelled before the call starts still sends the request, then the cancellation.
    let token = CancellationToken::new();
    token.cancel();
    let (call, id) = start_call(&conn, &peer, CallOptions::new().cancel(token)).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":id}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"error":{"code":-32800,"message":"c"}})).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Cancelled)));
}

#[tokio::test]
async fn an_inbound_cancel_request_fires_the_handlers_token_and_is_answered_request_cancelled() {
    let (builder, mut fired) = server(CancelProtocol::lsp());
    let (_conn, mut peer) = pair(builder, Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hang"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":"w","method":"watch"}"#).await;
    assert_alive(&mut peer, 5).await;

    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(1), -32800));

    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"w"}}"#).await;
    assert_eq!(within(fired.recv()).await.unwrap(), json!("w"));
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!("w"), -32800));
    assert_alive(&mut peer, 6).await;
}

#[tokio::test]
async fn a_request_whose_reply_was_handed_to_another_task_stays_in_flight() {
    // `watch` finishes its first poll at once, its reply handle moved to a task of its own: the
    // request is still unanswered, so its id stays taken and a cancellation still reaches it.
    let (builder, mut fired) = server(CancelProtocol::lsp());
    let (_conn, mut peer) = pair(builder, Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":7,"method":"watch"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[1,2]}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(7), -32600));
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}"#).await;
    assert_eq!(within(fired.recv()).await.unwrap(), json!(7));
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(7), -32800));
    // Answered: the id is free again.
    assert_alive(&mut peer, 7).await;
}

#[tokio::test]
async fn cancel_params_are_accepted_positionally() {
    let (builder, _fired) = server(CancelProtocol::lsp());
    let (_conn, mut peer) = pair(builder, Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":"x","method":"hang"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":["x"]}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!("x"), -32800));
}

#[tokio::test]
async fn a_cancel_for_an_unknown_or_finished_request_is_ignored() {
    let (builder, _fired) = server(CancelProtocol::lsp());
    let (_conn, mut peer) = pair(builder, Framing::ContentLength);
    assert_alive(&mut peer, 1).await;
    for params in [r#"{"id":1}"#, r#"{"id":"1"}"#, r#"{"id":77}"#, r#"[]"#, r#"{"other":1}"#, r#"{"id":{}}"#] {
        peer.send(format!(r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{params}}}"#)).await;
    }
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest"}"#).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert_alive(&mut peer, 2).await;
}

#[tokio::test]
async fn a_cancel_bypasses_the_ordered_lane_answers_the_queued_request_at_once_and_it_never_runs() {
    let release = Arc::new(Notify::new());
    let ran = Arc::new(Mutex::new(false));
    let (r, ran2) = (release.clone(), ran.clone());
    let router = Router::new()
        .notification("block", move |(): (), _ctx| {
            let r = r.clone();
            async move { r.notified().await }
        })
        .method("queued", move |(): (), _ctx| {
            let ran = ran2.clone();
            async move {
                *ran.lock().unwrap() = true;
                Ok::<_, ErrorObject>("ran")
            }
        });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","method":"block"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"queued"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#).await;
    // Answered when the cancellation is read, while the lane is still blocked.
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(1), -32800));
    release.notify_one();
    peer.expect_silence(Duration::from_millis(50)).await;
    assert!(!*ran.lock().unwrap(), "a request cancelled before it started must not run");
}

#[tokio::test]
async fn acp_spells_cancellation_dollar_cancel_request_with_request_id_both_ways() {
    let (builder, _fired) = server(CancelProtocol::acp());
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    // Inbound.
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"hang"}"#).await;
    // The LSP spelling means nothing here.
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(3), -32800));
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"hang"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":[4]}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(4), -32800));

    // Outbound.
    let (call, id) = start_call(&conn, &peer, CallOptions::new()).await;
    call.abort();
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":id}})).await;
    let token = CancellationToken::new();
    let (call, id) = start_call(&conn, &peer, CallOptions::new().cancel(token.clone())).await;
    token.cancel();
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":id}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"error":{"code":-32800,"message":"cancelled"}})).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Cancelled)));
}

#[tokio::test]
async fn mcp_never_answers_a_cancelled_inbound_request() {
    let (builder, mut fired) = server(CancelProtocol::mcp());
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hang"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"watch"}"#).await;
    // Requests start in order: once this one is answered, both above are running.
    assert_alive(&mut peer, 0).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#).await;
    assert_eq!(within(fired.recv()).await.unwrap(), json!(2));
    // Cancelled right after it arrived (the reader may already have started it): not answered
    // either. (A request cancelled while still queued never runs: see the test above with a
    // notification holding the lane.)
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"watch"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[3]}"#).await;
    peer.expect_silence(Duration::from_millis(100)).await;
    if let Ok(id) = fired.try_recv() {
        assert_eq!(id, json!(3), "only the cancelled request's handler may report");
    }
    assert_alive(&mut peer, 4).await;
}

#[tokio::test]
async fn mcp_a_cancelled_request_inside_a_batch_leaves_only_the_others_in_the_answer() {
    let (builder, _fired) = server(CancelProtocol::mcp());
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"[{"jsonrpc":"2.0","id":1,"method":"hang"},{"jsonrpc":"2.0","id":2,"method":"add","params":[1,1]}]"#)
        .await;
    assert_alive(&mut peer, 0).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#).await;
    peer.expect(json!([{"jsonrpc":"2.0","id":2,"result":2}])).await;
}

#[tokio::test]
async fn mcp_releases_our_cancelled_call_at_once_and_absorbs_the_late_answer() {
    let (builder, _fired) = server(CancelProtocol::mcp());
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    let token = CancellationToken::new();
    let (call, id) = start_call(&conn, &peer, CallOptions::new().cancel(token.clone())).await;
    token.cancel();
    // Released without waiting for the peer.
    assert!(matches!(within(call).await.unwrap(), Err(Error::Cancelled)));
    let cancel = peer.recv().await;
    assert_eq!(cancel["method"], "notifications/cancelled", "{cancel}");
    assert_eq!(cancel["params"]["requestId"], id, "{cancel}");
    assert!(cancel["params"]["reason"].is_string(), "{cancel}");
    assert!(cancel.get("id").is_none());
    // A late answer is absorbed.
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"result":1})).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert_alive(&mut peer, 1).await;

    // Dropping and timing out use the same spelling.
    let (call, id) = start_call(&conn, &peer, CallOptions::new().timeout(Duration::from_millis(20))).await;
    assert!(matches!(within(call).await.unwrap(), Err(Error::Timeout(_))));
    let cancel = peer.recv().await;
    assert_eq!((cancel["method"].as_str(), &cancel["params"]["requestId"]), (Some("notifications/cancelled"), &id));
}

#[tokio::test]
async fn a_custom_cancel_protocol_is_a_setting_not_code() {
    let cancel = CancelProtocol::new("custom/cancel", "which");
    let (builder, _fired) = server(cancel);
    let (conn, mut peer) = pair(builder, Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"hang"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"custom/cancel","params":{"which":1}}"#).await;
    let (id, code, _) = peer.recv_error().await;
    assert_eq!((id, code), (json!(1), -32800));
    let (call, id) = start_call(&conn, &peer, CallOptions::new()).await;
    call.abort();
    peer.expect(json!({"jsonrpc":"2.0","method":"custom/cancel","params":{"which":id}})).await;
}

#[tokio::test]
async fn cancelling_between_two_connections_reaches_the_handler() {
    let (fired_tx, mut fired) = mpsc::unbounded_channel();
    let server = Connection::builder().serve(router(fired_tx));
    let (a, b) = tokio::io::duplex(64 * 1024);
    let _server = server.connect_io(a);
    let client = Connection::builder().connect_io(b);
    let token = CancellationToken::new();
    let h = client.handle();
    let t = token.clone();
    let call = tokio::spawn(async move { h.request_with::<()>("watch", (), CallOptions::new().cancel(t)).await });
    // Make sure the request is in flight before cancelling: a round trip behind it.
    let three: i64 = within(client.handle().request("add", (1, 2))).await.unwrap();
    assert_eq!(three, 3);
    token.cancel();
    assert!(within(fired.recv()).await.unwrap().is_number());
    assert!(matches!(within(call).await.unwrap(), Err(Error::Cancelled)));
}

/// A request answered in its first poll leaves its reply slot to the connection's next request
/// (the slot is reused, not made anew): a cancellation token its handler made, and here
/// cancelled, is never the next request's.
#[tokio::test]
async fn a_handlers_token_is_its_own_when_the_next_request_reuses_its_reply_slot() {
    let router = Router::new().method("spent", |(): (), ctx: jsonrpc_duplex::RequestContext| async move {
        let token = ctx.cancellation();
        let cancelled_at_start = token.is_cancelled();
        token.cancel();
        Ok::<_, ErrorObject>(cancelled_at_start)
    });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    for id in 1..=3 {
        peer.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"spent"}}"#)).await;
        peer.expect(json!({"jsonrpc":"2.0","id":id,"result":false})).await;
    }
}
