//! What a peer can make us hold of its input is bounded in bytes, not only in messages: the
//! messages read ahead of dispatch and the progress reports for our tokens not taken yet. At the
//! read-ahead the reader pauses; reading on for a pending call, the connection closes at the
//! hard limit with a reason; queued requests a peer cancels are answered at once.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jsonrpc_duplex::{CloseKind, Connection, Error, ErrorObject, Framing, Limits, Router};
use serde_json::{Value, json};
use support::raw_peer::{frame, pair, pair_with_buffer};
use support::time::{quiescent, within};
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;

const KIB: usize = 1024;

/// `block` holds the ordered lane until released; `big` (a notification) is counted; `slow`
/// (a request) holds a concurrency slot until released; `count` says how many `big` ran.
fn server(release: Arc<Notify>, counted: Arc<AtomicUsize>) -> jsonrpc_duplex::Builder {
    let (r1, r2, c) = (release.clone(), release, counted.clone());
    Connection::builder().serve(
        Router::new()
            .notification("block", move |(): (), _ctx| {
                let release = r1.clone();
                async move { release.notified().await }
            })
            .method("slow", move |(): (), _ctx| {
                let release = r2.clone();
                async move {
                    release.notified().await;
                    Ok::<_, ErrorObject>("slow done")
                }
            })
            .method("quick", |(): (), _ctx| async { Ok::<_, ErrorObject>("quick done") })
            .notification("big", move |_: Value, _ctx| {
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

/// A `big` notification carrying `size` bytes of params.
fn big(size: usize) -> Vec<u8> {
    json!({"jsonrpc":"2.0","method":"big","params":["x".repeat(size)]}).to_string().into_bytes()
}

#[tokio::test(start_paused = true)]
async fn the_reader_pauses_at_the_byte_read_ahead_though_few_messages_are_queued() {
    let release = Arc::new(Notify::new());
    let counted = Arc::new(AtomicUsize::new(0));
    // Far below the message read-ahead: only the byte bound can pause this flood.
    let limits = Limits::new().read_ahead(10_000).read_ahead_bytes(64 * KIB);
    let builder = server(release.clone(), counted.clone()).limits(limits);
    let (conn, mut peer) = pair_with_buffer(builder, Framing::ContentLength, 16 * KIB);
    peer.send(r#"{"jsonrpc":"2.0","method":"block"}"#).await;
    const N: usize = 200;
    let one = big(16 * KIB);
    let (flood, written) = peer.flood(N, move |_| one.clone());
    // 64 KiB of read-ahead is four of these, plus what the pipe and the read buffer hold.
    quiescent().await;
    let stalled = written.load(Ordering::SeqCst);
    assert!(stalled < 20, "the flood was not paused: {stalled} of {N} messages of 16 KiB taken");
    assert!(!conn.is_closed());
    release.notify_one();
    peer.put_writer(within(flood).await.unwrap());
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"count"}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":N})).await;
}

#[tokio::test]
async fn reading_on_for_a_pending_call_closes_at_the_byte_limit() {
    let release = Arc::new(Notify::new());
    let counted = Arc::new(AtomicUsize::new(0));
    let limits = Limits::new().read_ahead_bytes(64 * KIB).max_buffered_inbound_bytes(512 * KIB);
    let builder = server(release.clone(), counted.clone()).limits(limits);
    let (conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    peer.send(r#"{"jsonrpc":"2.0","method":"block"}"#).await;
    // One of our calls is pending: the reader reads past the read-ahead (the answer may be
    // behind the flood), up to the hard limit, far below the message limit of 65,536.
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<Value>("question", ()).await });
    assert_eq!(peer.recv().await["method"], "question");
    let mut writer = peer.take_writer();
    let flood = tokio::spawn(async move {
        let one = frame(Framing::NewlineDelimited, &big(32 * KIB));
        for _ in 0..100 {
            if writer.write_all(&one).await.is_err() {
                break;
            }
        }
    });
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteProtocolViolation, "{reason}");
    assert!(reason.message.contains(&format!("{} bytes", 512 * KIB)), "{reason}");
    match within(call).await.unwrap() {
        Err(Error::ConnectionLost(r)) => assert_eq!(r.kind, CloseKind::RemoteProtocolViolation),
        other => panic!("{other:?}"),
    }
    assert_eq!(counted.load(Ordering::SeqCst), 0);
    flood.abort();
}

#[tokio::test]
async fn progress_reports_nobody_takes_count_against_the_byte_limit() {
    let limits = Limits::new().read_ahead_bytes(64 * KIB).max_buffered_inbound_bytes(512 * KIB);
    let (conn, mut peer) = pair(Connection::builder().limits(limits), Framing::NewlineDelimited);
    // Our call carries a progress token whose receiver is never polled.
    let (token, _receiver) = conn.handle().progress::<Value>();
    let h = conn.handle();
    let call = tokio::spawn(async move { h.request::<Value>("work", json!({"progress": token})).await });
    assert_eq!(peer.recv().await["method"], "work");
    let report = json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":"x".repeat(32 * KIB)}});
    let mut writer = peer.take_writer();
    let flood = tokio::spawn(async move {
        let one = frame(Framing::NewlineDelimited, report.to_string().as_bytes());
        for _ in 0..100 {
            if writer.write_all(&one).await.is_err() {
                break;
            }
        }
    });
    let reason = within(conn.closed()).await;
    assert_eq!(reason.kind, CloseKind::RemoteProtocolViolation, "{reason}");
    assert!(reason.message.contains("progress reports"), "{reason}");
    assert!(matches!(within(call).await.unwrap(), Err(Error::ConnectionLost(_))));
    flood.abort();
}

#[tokio::test]
async fn progress_reports_that_are_taken_are_not_counted_any_more() {
    let limits = Limits::new().read_ahead_bytes(64 * KIB).max_buffered_inbound_bytes(256 * KIB);
    let (conn, mut peer) = pair(Connection::builder().limits(limits), Framing::NewlineDelimited);
    let (token, receiver) = conn.handle().progress::<String>();
    let h = conn.handle();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let call = tokio::spawn(async move {
        let call = h.request::<Value>("work", json!({"progress": token}));
        receiver
            .drive(call, |_| {
                s.fetch_add(1, Ordering::SeqCst);
            })
            .await
    });
    assert_eq!(peer.recv().await["method"], "work");
    // Four times the hard limit in all, taken as they come.
    let report = json!({"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":"x".repeat(16 * KIB)}});
    for _ in 0..64 {
        peer.send_json(report.clone()).await;
    }
    peer.send(r#"{"jsonrpc":"2.0","id":0,"result":"done"}"#).await;
    assert_eq!(within(call).await.unwrap().unwrap(), json!("done"));
    assert_eq!(seen.load(Ordering::SeqCst), 64);
    assert!(!conn.is_closed());
}

/// A request waiting for a concurrency slot is answered `-32800` as soon as its cancellation is
/// read, not when a slot frees; the lane moves on to what follows it.
#[tokio::test]
async fn a_queued_request_cancelled_is_answered_at_once() {
    let release = Arc::new(Notify::new());
    let counted = Arc::new(AtomicUsize::new(0));
    let builder = server(release.clone(), counted.clone()).max_concurrent_requests(1);
    let (_conn, mut peer) = pair(builder, Framing::ContentLength);
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#).await;
    // Waits for the slot `slow` holds; then one queued behind it.
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"quick"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"quick"}"#).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"Request cancelled"}})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}"#).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}})).await;
    // The lane is free again: a notification behind them runs while `slow` still holds the slot.
    peer.send(r#"{"jsonrpc":"2.0","method":"big","params":[1]}"#).await;
    tokio::time::timeout(Duration::from_secs(5), async {
        while counted.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the notification behind the cancelled requests ran");
    release.notify_one();
    peer.expect(json!({"jsonrpc":"2.0","id":1,"result":"slow done"})).await;
    peer.expect_silence(Duration::from_millis(50)).await;
}

/// Running handlers hold what their requests carried: beyond the byte limit of running requests,
/// further ones wait their turn (one always runs, however large).
#[tokio::test]
async fn requests_beyond_the_running_byte_limit_wait_their_turn() {
    let release = Arc::new(Notify::new());
    let started = Arc::new(AtomicUsize::new(0));
    let (r, s) = (release.clone(), started.clone());
    let router = Router::new().method("hold", move |_: Value, _ctx| {
        let (release, started) = (r.clone(), s.clone());
        async move {
            started.fetch_add(1, Ordering::SeqCst);
            release.notified().await;
            Ok::<_, ErrorObject>("done")
        }
    });
    let limits = Limits::new().max_concurrent_request_bytes(64 * KIB);
    let (_conn, mut peer) = pair(Connection::builder().limits(limits).serve(router), Framing::ContentLength);
    // One larger than the whole limit runs alone; then four of 16 KiB fit at once.
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"method":"hold","params":["x".repeat(100 * KIB)]})).await;
    for id in 1..=8 {
        peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":"hold","params":["x".repeat(15 * KIB)]})).await;
    }
    let reach = |n: usize| {
        let started = started.clone();
        async move {
            within(async {
                while started.load(Ordering::SeqCst) < n {
                    tokio::task::yield_now().await;
                }
            })
            .await
        }
    };
    reach(1).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(started.load(Ordering::SeqCst), 1, "the large request runs alone");
    release.notify_one();
    assert_eq!(peer.recv().await["id"], 0);
    reach(5).await;
    peer.expect_silence(Duration::from_millis(50)).await;
    assert_eq!(started.load(Ordering::SeqCst), 5, "four of 16 KiB fit in 64 KiB");
    for _ in 0..8 {
        release.notify_one();
        let _ = peer.recv().await;
    }
    assert_eq!(started.load(Ordering::SeqCst), 9);
}
