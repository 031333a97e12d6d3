//! Read-ahead and backpressure: a flooding peer is paused, or the connection closes with a reason;
//! a peer that stops reading slows our sends down; nothing wedges.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonrpc_duplex::{CloseKind, Connection, Error, ErrorObject, Framing, Limits, Router};
use serde_json::{Value, json};
use support::raw_peer::{pair, pair_with_buffer};
use support::time::{eventually, quiescent, within};
use tokio::sync::Notify;

/// `block` (a notification that holds the ordered lane until `release` fires), `flood` (counted)
/// and `count`.
fn server(release: Arc<Notify>, counted: Arc<AtomicUsize>) -> jsonrpc_duplex::Builder {
    let c = counted.clone();
    Connection::builder().serve(
        Router::new()
            .notification("block", move |(): (), _ctx| {
                let release = release.clone();
                async move { release.notified().await }
            })
            .notification("flood", move |(): (), _ctx| {
                let c = c.clone();
                async move {
                    c.fetch_add(1, Ordering::SeqCst);
                }
            })
            .method("count", move |(): (), _ctx| {
                let c = counted.clone();
                async move { Ok::<_, ErrorObject>(c.load(Ordering::SeqCst)) }
            }),
    )
}

const FLOOD: &[u8] = br#"{"jsonrpc":"2.0","method":"flood"}"#;

#[tokio::test(start_paused = true)]
async fn a_flooding_peer_is_paused_at_the_read_ahead_limit_and_everything_is_handled_afterwards() {
    let release = Arc::new(Notify::new());
    let counted = Arc::new(AtomicUsize::new(0));
    let limits = Limits::new().read_ahead(8).max_buffered_inbound(100_000);
    let builder = server(release.clone(), counted.clone()).limits(limits);
    let (conn, mut peer) = pair_with_buffer(builder, Framing::ContentLength, 1024);
    peer.send(r#"{"jsonrpc":"2.0","method":"block"}"#).await;

    // Flood from another task, counting the messages the pipe has taken.
    const N: usize = 5_000;
    let (flood, written) = peer.flood(N, |_| FLOOD.to_vec());
    // While the lane is blocked the reader stops taking more: the flood stalls far short of N
    // (what is buffered: the read-ahead queue, the reader's own buffer and the pipe's).
    quiescent().await;
    let stalled = written.load(Ordering::SeqCst);
    assert!(stalled < N / 2, "the flood was not paused: {stalled} of {N} messages taken");
    assert_eq!(counted.load(Ordering::SeqCst), 0);
    assert!(!conn.is_closed());

    release.notify_one();
    peer.put_writer(within(flood).await.unwrap());
    assert_eq!(written.load(Ordering::SeqCst), N);
    // Everything was handled, in order, once the lane moved again.
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"count"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":N})).await;
}

#[tokio::test]
async fn a_flood_beyond_max_buffered_inbound_closes_with_a_protocol_violation() {
    let release = Arc::new(Notify::new());
    let counted = Arc::new(AtomicUsize::new(0));
    let limits = Limits::new().read_ahead(4).max_buffered_inbound(50);
    let builder = server(release.clone(), counted.clone()).limits(limits);
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","method":"block"}"#).await;
    // One of our calls is pending, so the reader keeps reading past the read-ahead limit (the
    // answer may be behind the flood) — up to the hard limit.
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<Value>("question", ()).await });
    assert_eq!(peer.recv().await["method"], "question");
    let mut bytes = Vec::new();
    for _ in 0..200 {
        bytes.extend(peer.frame(FLOOD));
    }
    peer.send_raw(bytes).await;
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteProtocolViolation, "{reason}");
    assert!(reason.message.contains("50"), "{reason}");
    match within(call).await.unwrap() {
        Err(Error::ConnectionLost(r)) => assert_eq!(r.kind, CloseKind::RemoteProtocolViolation),
        other => panic!("{other:?}"),
    }
    peer.expect_eof().await;
}

#[tokio::test]
async fn an_answer_behind_a_flood_is_read_while_the_lane_is_blocked() {
    let release = Arc::new(Notify::new());
    let counted = Arc::new(AtomicUsize::new(0));
    let limits = Limits::new().read_ahead(4).max_buffered_inbound(10_000);
    let builder = server(release.clone(), counted.clone()).limits(limits);
    let (conn, mut peer) = pair(builder, Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","method":"block"}"#).await;
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<Value>("question", ()).await });
    let question = peer.recv().await;
    let mut bytes = Vec::new();
    for _ in 0..300 {
        bytes.extend(peer.frame(FLOOD));
    }
    bytes.extend(peer.frame(json!({"jsonrpc":"2.0","id":question["id"],"result":"here"}).to_string().as_bytes()));
    peer.send_raw(bytes).await;
    // The lane is still blocked, yet the answer arrives.
    assert_eq!(within(call).await.unwrap().unwrap(), json!("here"));
    assert_eq!(counted.load(Ordering::SeqCst), 0);
    release.notify_one();
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"count"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":300})).await;
}

#[tokio::test]
async fn requests_beyond_the_concurrency_limit_wait_their_turn_and_are_all_answered() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = gate.clone();
    let router = Router::new().method("wait", move |(i,): (i64,), _ctx| {
        let g = g.clone();
        async move {
            g.acquire().await.unwrap().forget();
            Ok::<_, ErrorObject>(i)
        }
    });
    let builder = Connection::builder().max_concurrent_requests(2).serve(router);
    let (_conn, mut peer) = pair(builder, Framing::ContentLength);
    let mut bytes = Vec::new();
    for i in 0..10 {
        bytes.extend(peer.frame(json!({"jsonrpc":"2.0","id":i,"method":"wait","params":[i]}).to_string().as_bytes()));
    }
    peer.send_raw(bytes).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    gate.add_permits(10);
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(peer.recv().await["id"].as_i64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
}

/// A handler that finishes in its first poll runs within the limit too, and one that goes on
/// holds its place until it ends: with room for two, two that wait keep a third, quick one,
/// from starting, and it starts once one of them ends.
#[tokio::test]
async fn the_concurrency_limit_counts_handlers_that_finish_at_once_and_those_that_go_on() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (g, r, p) = (gate.clone(), running.clone(), peak.clone());
    let router = Router::new().method("run", move |(wait,): (bool,), _ctx| {
        let now = r.fetch_add(1, Ordering::SeqCst) + 1;
        p.fetch_max(now, Ordering::SeqCst);
        let (g, r) = (g.clone(), r.clone());
        async move {
            if wait {
                g.acquire().await.unwrap().forget();
            }
            r.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, ErrorObject>(wait)
        }
    });
    let builder = Connection::builder().max_concurrent_requests(2).serve(router);
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    // One quick call first: it runs at once, alone.
    peer.send(r#"{"jsonrpc":"2.0","id":0,"method":"run","params":[false]}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":0,"result":false})).await;
    let mut bytes = Vec::new();
    for (id, wait) in [(1, true), (2, true), (3, false)] {
        bytes
            .extend(peer.frame(json!({"jsonrpc":"2.0","id":id,"method":"run","params":[wait]}).to_string().as_bytes()));
    }
    peer.send_raw(bytes).await;
    eventually("the two that wait started", || running.load(Ordering::SeqCst) >= 2).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(running.load(Ordering::SeqCst), 2, "the quick call ran beside the two that wait");
    gate.add_permits(1);
    let mut ids: Vec<i64> = Vec::new();
    for _ in 0..2 {
        ids.push(peer.recv().await["id"].as_i64().unwrap());
    }
    ids.sort();
    assert_eq!(ids[1], 3, "the quick call did not run once a place was free: {ids:?}");
    gate.add_permits(1);
    let last = peer.recv().await;
    assert!(!ids.contains(&last["id"].as_i64().unwrap()));
    assert_eq!(peak.load(Ordering::SeqCst), 2, "more handlers ran at once than the limit");
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_stops_reading_slows_our_sends_down_and_nothing_is_lost() {
    let limits = Limits::new().outbound_buffer(2048);
    let (conn, peer) = pair_with_buffer(Connection::builder().limits(limits), Framing::ContentLength, 1024);
    peer.set_reading(false);
    const N: usize = 2_000;
    let sent = Arc::new(AtomicUsize::new(0));
    let (h, s) = (conn.handle(), sent.clone());
    let pad = "p".repeat(200);
    let sender = tokio::spawn(async move {
        for i in 0..N {
            h.notify("item", json!([i, pad])).await.unwrap();
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    quiescent().await;
    let stalled = sent.load(Ordering::SeqCst);
    assert!(stalled < N / 2, "sends were not slowed down: {stalled} of {N} queued");
    peer.set_reading(true);
    for i in 0..N {
        let msg = peer.recv().await;
        assert_eq!(msg["params"][0], i);
    }
    within(sender).await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_a_call_that_was_never_sent_sends_no_cancellation() {
    let limits = Limits::new().outbound_buffer(4096);
    let (conn, peer) = pair(Connection::builder().limits(limits), Framing::ContentLength);
    let pad = "q".repeat(1000);
    // Fill the outbound budget without letting the writer run (nothing here yields): the
    // notification that does not fit stays pending.
    let mut queued = 0;
    let h = conn.handle();
    let mut blocked = loop {
        let mut note = Box::pin(h.notify("fill", json!([queued, pad])));
        if futures::poll!(note.as_mut()).is_pending() {
            break note;
        }
        queued += 1;
        assert!(queued < 100, "the outbound budget never filled up");
    };
    // A call behind it waits for room in the budget: it has not been sent.
    let mut call = Box::pin(h.request::<Value>("never_sent", ()));
    assert!(futures::poll!(call.as_mut()).is_pending());
    drop(call);
    within(blocked.as_mut()).await.unwrap();
    for i in 0..=queued {
        assert_eq!(peer.recv().await["params"][0], i);
    }
    // No cancellation for a request the peer never saw.
    peer.expect_silence(Duration::from_millis(100)).await;
    // The next call is sent and answered normally.
    let h = conn.handle();
    let next = tokio::spawn(async move { h.request::<Value>("next", ()).await });
    let req = peer.recv().await;
    assert_eq!(req["method"], "next", "{req}");
    let mut peer = peer;
    peer.send_json(json!({"jsonrpc":"2.0","id":req["id"],"result":true})).await;
    assert_eq!(within(next).await.unwrap().unwrap(), json!(true));
}

#[tokio::test(start_paused = true)]
async fn a_peer_flooding_requests_without_reading_our_answers_is_paused() {
    let router = Router::new().method("add", |(a, b): (i64, i64), _ctx| async move { Ok::<_, ErrorObject>(a + b) });
    let limits = Limits::new().max_concurrent_requests(4).read_ahead(4).outbound_buffer(2048);
    let builder = Connection::builder().limits(limits).serve(router);
    let (conn, mut peer) = pair_with_buffer(builder, Framing::ContentLength, 1024);
    peer.set_reading(false);
    const N: usize = 5_000;
    let (flood, written) =
        peer.flood(N, |i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"add","params":[{i},1]}}"#).into_bytes());
    quiescent().await;
    let stalled = written.load(Ordering::SeqCst);
    assert!(stalled < N / 2, "answers piled up unread: {stalled} of {N} requests taken");
    peer.set_reading(true);
    for i in 0..N {
        // Requests start in order and answer at once: their answers leave in order.
        peer.expect(json!({"jsonrpc":"2.0","id":i,"result":i + 1})).await;
    }
    peer.put_writer(within(flood).await.unwrap());
    assert!(!conn.is_closed());
}

#[tokio::test(start_paused = true)]
async fn a_peer_flooding_garbage_without_reading_our_errors_is_paused() {
    let limits = Limits::new().outbound_buffer(2048);
    let (conn, mut peer) = pair_with_buffer(Connection::builder().limits(limits), Framing::NewlineDelimited, 1024);
    peer.set_reading(false);
    const N: usize = 5_000;
    let (flood, written) = peer.flood(N, |_| b"{not json".to_vec());
    quiescent().await;
    let stalled = written.load(Ordering::SeqCst);
    assert!(stalled < N / 2, "error answers piled up unread: {stalled} of {N} frames taken");
    peer.set_reading(true);
    for _ in 0..N {
        let (id, code, _) = peer.recv_error().await;
        assert_eq!((id, code), (Value::Null, -32700));
    }
    peer.put_writer(within(flood).await.unwrap());
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn calls_beyond_max_pending_calls_wait_for_a_slot_and_are_sent_when_one_frees() {
    let limits = Limits::new().max_pending_calls(2);
    let (conn, mut peer) = pair(Connection::builder().limits(limits), Framing::ContentLength);
    let calls: Vec<_> = (0..3)
        .map(|i| {
            let h = conn.handle();
            tokio::spawn(async move { h.request::<i64>("slow", [i]).await })
        })
        .collect();
    // Two calls take the two slots and go out; the third waits, unsent.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let frame = within(peer.recv()).await;
        ids.push(frame["id"].as_u64().expect("a request id"));
    }
    peer.expect_silence(Duration::from_millis(100)).await;
    // One answer frees a slot: the third call is sent.
    peer.send_json(json!({"jsonrpc":"2.0","id":ids[0],"result":10})).await;
    let third = within(peer.recv()).await;
    assert_eq!(third["method"], "slow");
    peer.send_json(json!({"jsonrpc":"2.0","id":ids[1],"result":11})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":third["id"],"result":12})).await;
    let mut results = Vec::new();
    for call in calls {
        results.push(within(call).await.unwrap().unwrap());
    }
    results.sort();
    assert_eq!(results, vec![10, 11, 12]);
}

#[tokio::test]
async fn a_call_waiting_for_a_slot_fails_when_the_connection_closes() {
    let limits = Limits::new().max_pending_calls(1);
    let (conn, peer) = pair(Connection::builder().limits(limits), Framing::ContentLength);
    let h = conn.handle();
    let first = tokio::spawn({
        let h = h.clone();
        async move { h.request::<i64>("slow", [1]).await }
    });
    within(peer.recv()).await;
    let second = tokio::spawn(async move { h.request::<i64>("slow", [2]).await });
    peer.expect_silence(Duration::from_millis(50)).await;
    conn.handle().close();
    assert!(matches!(within(first).await.unwrap(), Err(Error::ConnectionLost(_))));
    assert!(matches!(within(second).await.unwrap(), Err(Error::ConnectionLost(_))));
}

/// On one thread, a task that sends a burst of notifications lets the writer and the peer run
/// while it sends: a sent notification spends a unit of tokio's cooperative budget, and the
/// sender yields once it is spent. (Before, the burst was queued whole, up to the 8 MiB budget,
/// before the writer task first ran.)
#[tokio::test(flavor = "current_thread")]
async fn a_burst_of_notifications_yields_to_the_writer_and_the_peer_while_it_is_sent() {
    use tokio::io::AsyncReadExt;
    let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
    let conn = Connection::builder().framing(Framing::NewlineDelimited).connect_io(ours);
    // A hand-written peer that counts the lines it reads.
    let lines = Arc::new(AtomicUsize::new(0));
    let counted = lines.clone();
    let peer = tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        while let Ok(n @ 1..) = theirs.read(&mut buf).await {
            counted.fetch_add(buf[..n].iter().filter(|b| **b == b'\n').count(), Ordering::SeqCst);
        }
    });
    const N: usize = 2_000;
    let h = conn.handle();
    for i in 0..N {
        h.notify("tick", [i]).await.unwrap();
    }
    // Nothing else in this task waited: what the peer has read, it read while the burst was
    // being sent (2,000 lines are about 90 KB, far under the budget).
    let seen = lines.load(Ordering::SeqCst);
    assert!(seen > 0, "the peer read nothing while {N} notifications were sent");
    within(async {
        while lines.load(Ordering::SeqCst) < N {
            tokio::task::yield_now().await;
        }
    })
    .await;
    drop(conn);
    within(peer).await.unwrap();
}
