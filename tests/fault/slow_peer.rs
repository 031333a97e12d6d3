//! A peer that stops reading: our writer blocks, what we hold stays within the configured
//! outbound budget (plus the writer's one batch and the pipe), and our reader is not starved:
//! the answer to our call, the peer's notifications and its requests are all still taken in
//! while the writer is stuck. When the peer reads again, everything arrives, in order.
//!
//! The clock is paused: a timeout here elapses only once every task is idle, so "the sender is
//! blocked" is a fact, not a guess.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonrpc_duplex::{Connection, ErrorObject, Framing, Limits, Router};
use serde_json::{Value, json};
use support::raw_peer::pair_with_buffer;
use support::time::within;
use tokio::sync::mpsc;

const BUDGET: usize = 16 * 1024;
const PIPE: usize = 4 * 1024;
/// The writer's batch buffer (outbound.rs: BATCH_BYTES) and the raw peer's read chunk: the most
/// either can hold beyond the budget and the pipe.
const WRITER_BATCH: usize = 64 * 1024;
const PEER_CHUNK: usize = 64 * 1024;
const N: usize = 2_000;

#[tokio::test(start_paused = true)]
async fn a_peer_that_stops_reading_blocks_our_writer_within_the_budget_and_our_reader_goes_on() {
    let (events_tx, mut events) = mpsc::unbounded_channel::<String>();
    let (t1, t2) = (events_tx.clone(), events_tx);
    let router = Router::new()
        .notification("from_peer", move |(n,): (u64,), _cx| {
            let _ = t1.send(format!("note {n}"));
            async {}
        })
        .method("ping", move |(): (), _cx| {
            let _ = t2.send("ping".to_owned());
            async { Ok::<_, ErrorObject>("pong") }
        });
    let limits = Limits::new().outbound_buffer(BUDGET);
    let (conn, mut peer) =
        pair_with_buffer(Connection::builder().limits(limits).serve(router), Framing::ContentLength, PIPE);

    // One call of ours is out, and the peer has read it; then it stops reading.
    let h = conn.handle();
    let question = tokio::spawn(async move { h.request::<Value>("question", ()).await });
    let asked = peer.recv().await;
    assert_eq!(asked["method"], "question");
    peer.set_reading(false);

    // Flood: 2,000 notifications of ~1 KiB.
    let pad = "p".repeat(1000);
    let one = serde_json::to_vec(&json!({"jsonrpc":"2.0","method":"item","params":[N, pad]})).unwrap().len();
    let sent = Arc::new(AtomicUsize::new(0));
    let (h, counter) = (conn.handle(), sent.clone());
    let mut sender = tokio::spawn(async move {
        for i in 0..N {
            h.notify("item", json!([i, pad])).await.expect("notify");
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let blocked = tokio::time::timeout(Duration::from_secs(60), &mut sender).await;
    assert!(blocked.is_err(), "2,000 notifications went out to a peer that reads nothing");
    let stalled = sent.load(Ordering::SeqCst);
    let bound = (BUDGET + WRITER_BATCH + PIPE + PEER_CHUNK) / one + 2;
    eprintln!("{stalled} notifications of {one} bytes taken while the peer reads nothing (bound {bound})");
    assert!(stalled <= bound, "{stalled} notifications of {one} bytes taken, more than the limits allow ({bound})");

    // The reader still reads: the answer to our call, the peer's notifications, its request.
    peer.send_json(json!({"jsonrpc":"2.0","id":asked["id"],"result":"answer"})).await;
    assert_eq!(within(question).await.unwrap().unwrap(), json!("answer"));
    for n in 0..10 {
        peer.send_json(json!({"jsonrpc":"2.0","method":"from_peer","params":[n]})).await;
    }
    peer.send_json(json!({"jsonrpc":"2.0","id":99,"method":"ping"})).await;
    for n in 0..10 {
        assert_eq!(within(events.recv()).await.unwrap(), format!("note {n}"));
    }
    assert_eq!(within(events.recv()).await.unwrap(), "ping");
    assert!(!conn.is_closed());

    // The peer reads again: every notification arrives, in order, and the answer to its ping.
    peer.set_reading(true);
    let mut next = 0;
    let mut pong = false;
    while next < N || !pong {
        let msg = peer.recv().await;
        if msg["method"] == "item" {
            assert_eq!(msg["params"][0], next, "notification out of order");
            next += 1;
        } else {
            assert_eq!(msg, json!({"jsonrpc":"2.0","id":99,"result":"pong"}));
            assert!(!pong, "answered twice");
            pong = true;
        }
    }
    within(sender).await.unwrap();
}
