//! `CallOptions::after_notifications`: a call that resolves only once the notifications the peer
//! sent before its answer have been handled (answers otherwise bypass the ordered lane).

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jsonrpc_duplex::{CallOptions, Connection, ErrorObject, Framing, Router};
use serde_json::json;
use support::raw_peer;
use support::raw_peer::pair;
use support::time::within;
use tokio::sync::Notify;

/// A router whose `update` notification handler waits at a gate, then records that it ran.
fn gated_router(gate: Arc<Notify>, entered: Arc<Notify>, done: Arc<AtomicBool>) -> Router {
    Router::new().notification("update", move |(): (), _ctx| {
        let (gate, entered, done) = (gate.clone(), entered.clone(), done.clone());
        async move {
            entered.notify_one();
            gate.notified().await;
            done.store(true, Ordering::SeqCst);
        }
    })
}

/// The peer answers call 0 after an `update`, then answers call 1: once call 1 has resolved, the
/// reader has certainly read call 0's answer too.
async fn answer_after_update(peer: &mut raw_peer::RawPeer) {
    within(peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"prompt"}))).await;
    within(peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"ping"}))).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"update"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":"end_turn"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"result":"pong"})).await;
}

#[tokio::test]
async fn a_call_after_notifications_resolves_only_once_the_notifications_before_its_answer_are_handled() {
    let (gate, entered, done) = (Arc::new(Notify::new()), Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
    let router = gated_router(gate.clone(), entered.clone(), done.clone());
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    let handle = conn.handle();

    let h = handle.clone();
    let mut prompt = std::pin::pin!(async move {
        h.request_with::<String>("prompt", (), CallOptions::new().after_notifications()).await
    });
    // Start the call (it is sent on its first poll), then a second plain call behind it.
    assert!(futures::poll!(prompt.as_mut()).is_pending());
    let ping = tokio::spawn({
        let h = handle.clone();
        async move { h.request::<String>("ping", ()).await }
    });
    answer_after_update(&mut peer).await;
    within(entered.notified()).await;
    assert_eq!(within(ping).await.unwrap().unwrap(), "pong");

    // Its answer has been read, but the `update` before it is still being handled.
    assert!(futures::poll!(prompt.as_mut()).is_pending());
    assert!(!done.load(Ordering::SeqCst));
    gate.notify_one();
    assert_eq!(within(prompt).await.unwrap(), "end_turn");
    assert!(done.load(Ordering::SeqCst), "the update was handled before the call resolved");
}

/// Notifications and a request the reader works on the spot (their handlers finish in their
/// first poll), read in one go with the answer after them: the reader counts them with plain
/// stores and tells nobody, so a call after notifications must find them counted by its answer.
#[tokio::test]
async fn a_call_after_notifications_handled_on_the_spot_resolves_with_them_counted() {
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = seen.clone();
    let router = Router::new()
        .notification("update", move |(): (), _ctx| {
            counted.fetch_add(1, Ordering::SeqCst);
            async {}
        })
        .method("noop", |(): (), _ctx| async { Ok::<_, ErrorObject>(()) });
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    let handle = conn.handle();
    for round in 0..3u64 {
        let call = tokio::spawn({
            let h = handle.clone();
            async move { h.request_with::<String>("prompt", (), CallOptions::new().after_notifications()).await }
        });
        within(peer.expect(json!({"jsonrpc":"2.0","id":round,"method":"prompt"}))).await;
        let mut bytes = Vec::new();
        for _ in 0..3 {
            bytes.extend(peer.frame(json!({"jsonrpc":"2.0","method":"update"}).to_string().as_bytes()));
        }
        bytes.extend(peer.frame(json!({"jsonrpc":"2.0","id":"n","method":"noop"}).to_string().as_bytes()));
        bytes.extend(peer.frame(json!({"jsonrpc":"2.0","id":round,"result":"end_turn"}).to_string().as_bytes()));
        peer.send_raw(bytes).await;
        assert_eq!(within(call).await.unwrap().unwrap(), "end_turn");
        assert_eq!(seen.load(Ordering::SeqCst), 3 * (round as usize + 1), "every update before the answer ran");
        within(peer.expect(json!({"jsonrpc":"2.0","id":"n","result":null}))).await;
    }
}

#[tokio::test]
async fn a_plain_call_may_resolve_before_the_notifications_before_its_answer_are_handled() {
    let (gate, entered, done) = (Arc::new(Notify::new()), Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
    let router = gated_router(gate.clone(), entered.clone(), done.clone());
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    let handle = conn.handle();

    let prompt = tokio::spawn({
        let h = handle.clone();
        async move { h.request::<String>("prompt", ()).await }
    });
    within(peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"prompt"}))).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"update"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":"end_turn"})).await;
    within(entered.notified()).await;
    // The answer bypasses the lane: no waiting for the gated handler.
    assert_eq!(within(prompt).await.unwrap().unwrap(), "end_turn");
    assert!(!done.load(Ordering::SeqCst));
    gate.notify_one();
}

#[tokio::test]
async fn a_notification_handler_calling_after_notifications_does_not_wait_for_itself() {
    let router = Router::new().notification("update", |(): (), ctx| async move {
        let answer: String =
            ctx.peer().request_with("ask", (), CallOptions::new().after_notifications()).await.expect("ask");
        ctx.peer().notify("asked", [answer]).await.expect("notify");
    });
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    peer.send_json(json!({"jsonrpc":"2.0","method":"update"})).await;
    within(peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"ask"}))).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":"yes"})).await;
    within(peer.expect(json!({"jsonrpc":"2.0","method":"asked","params":["yes"]}))).await;
}

#[tokio::test]
async fn a_call_after_notifications_ends_when_the_connection_closes_while_waiting() {
    let (gate, entered, done) = (Arc::new(Notify::new()), Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
    let router =
        gated_router(gate, entered.clone(), done).method("unused", |(): (), _ctx| async { Ok::<_, ErrorObject>(()) });
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::ContentLength);
    let handle = conn.handle();
    let prompt = tokio::spawn({
        let h = handle.clone();
        async move { h.request_with::<String>("prompt", (), CallOptions::new().after_notifications()).await }
    });
    within(peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"prompt"}))).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"update"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":"end_turn"})).await;
    within(entered.notified()).await;
    // The gate never opens; closing ends the wait (the answer had arrived: it is returned).
    handle.close();
    assert_eq!(within(prompt).await.unwrap().unwrap(), "end_turn");
}
