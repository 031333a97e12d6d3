//! Streams on the wire (StreamJsonRpc's enumerator protocol), both sides, against a hand-written
//! raw-byte peer: the exact messages for a result stream pulled to its end, batches, read-ahead and
//! prefetch, unknown tokens, abort, a cancelled `next`, an error item, streams passed as arguments,
//! and the consumer side's `next`, abort and protocol checks.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jsonrpc_duplex::{CallOptions, CancellationToken, Connection, Error, ErrorObject, Framing, Router, StreamSettings};
use serde_json::{Value, json};
use support::raw_peer::{RawPeer, pair};
use support::time::within;
use tokio::sync::{mpsc, oneshot};

const SILENCE: Duration = Duration::from_millis(100);

/// Sends on `dropped` when the stream holding it is dropped.
struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// `countTo [n]`: 1..=n, each item reported on `made` as it is produced.
fn count_to(made: mpsc::UnboundedSender<u64>, settings: StreamSettings) -> Router {
    Router::new().request_raw("countTo", move |req, reply| {
        let made = made.clone();
        async move {
            let (n,): (u64,) = match req.decode_params() {
                Ok(p) => p,
                Err(e) => {
                    reply.err(e);
                    return;
                }
            };
            let items = futures::stream::iter(1..=n).inspect(move |i| {
                let _ = made.send(*i);
            });
            let mut offer = req.peer().offer_stream_with(items, settings);
            offer.prefetch(settings.prefetch).await;
            reply.ok(offer);
        }
    })
}

fn server(settings: StreamSettings) -> (Connection, RawPeer, mpsc::UnboundedReceiver<u64>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (conn, peer) = pair(Connection::builder().serve(count_to(tx, settings)), Framing::NewlineDelimited);
    (conn, peer, rx)
}

async fn call(peer: &mut RawPeer, id: u64, method: &str, params: Value) -> Value {
    peer.send_json(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})).await;
    peer.recv().await
}

fn gone(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"error":{"code":-32001,"message":"This remote object no longer exists."}})
}

#[tokio::test]
async fn a_result_stream_is_pulled_one_item_per_next_then_finished_then_unknown() {
    let (_conn, mut peer, _made) = server(StreamSettings::default());
    assert_eq!(call(&mut peer, 1, "countTo", json!([2])).await, json!({"jsonrpc":"2.0","id":1,"result":{"token":1}}));
    assert_eq!(
        call(&mut peer, 2, "$/enumerator/next", json!([1])).await,
        json!({"jsonrpc":"2.0","id":2,"result":{"values":[1],"finished":false}})
    );
    // The token may also come by name.
    assert_eq!(
        call(&mut peer, 3, "$/enumerator/next", json!({"token":1})).await,
        json!({"jsonrpc":"2.0","id":3,"result":{"values":[2],"finished":false}})
    );
    assert_eq!(
        call(&mut peer, 4, "$/enumerator/next", json!([1])).await,
        json!({"jsonrpc":"2.0","id":4,"result":{"values":[],"finished":true}})
    );
    // Finished: the generator released the token itself.
    assert_eq!(call(&mut peer, 5, "$/enumerator/next", json!([1])).await, gone(5));
    // Tokens come from a per-connection counter.
    assert_eq!(call(&mut peer, 6, "countTo", json!([1])).await, json!({"jsonrpc":"2.0","id":6,"result":{"token":2}}));
}

#[tokio::test]
async fn the_exact_bytes_of_a_batch() {
    let (_conn, mut peer, _made) = server(StreamSettings::default());
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"countTo","params":[1]}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":1,"result":{"token":1}}"#);
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"$/enumerator/next","params":[1]}"#).await;
    assert_eq!(peer.recv_text().await, r#"{"jsonrpc":"2.0","id":2,"result":{"values":[1],"finished":false}}"#);
}

#[tokio::test]
async fn min_batch_size_fills_each_answer_and_the_last_one_finishes() {
    let (_conn, mut peer, _made) = server(StreamSettings::new().min_batch_size(2));
    assert_eq!(call(&mut peer, 1, "countTo", json!([5])).await["result"], json!({"token":1}));
    for (id, values, finished) in [(2, json!([1, 2]), false), (3, json!([3, 4]), false), (4, json!([5]), true)] {
        let got = call(&mut peer, id, "$/enumerator/next", json!([1])).await;
        assert_eq!(got["result"], json!({"values":values,"finished":finished}), "{got}");
    }
}

#[tokio::test]
async fn read_ahead_produces_before_being_asked_and_answers_with_all_it_has() {
    let (_conn, mut peer, mut made) = server(StreamSettings::new().max_read_ahead(3));
    assert_eq!(call(&mut peer, 1, "countTo", json!([5])).await["result"], json!({"token":1}));
    // Three items are made before anyone asks, and no more.
    for i in 1..=3 {
        assert_eq!(within(made.recv()).await, Some(i));
    }
    assert!(tokio::time::timeout(SILENCE, made.recv()).await.is_err(), "produced past the read-ahead");
    let got = call(&mut peer, 2, "$/enumerator/next", json!([1])).await;
    assert_eq!(got["result"], json!({"values":[1,2,3],"finished":false}));
    for i in 4..=5 {
        assert_eq!(within(made.recv()).await, Some(i));
    }
    // The end is known by now: the last batch says so.
    let got = call(&mut peer, 3, "$/enumerator/next", json!([1])).await;
    assert_eq!(got["result"], json!({"values":[4,5],"finished":true}));
}

#[tokio::test]
async fn prefetch_puts_items_in_the_result_and_a_short_stream_needs_no_token() {
    let (_conn, mut peer, _made) = server(StreamSettings::new().prefetch(2));
    assert_eq!(call(&mut peer, 1, "countTo", json!([5])).await["result"], json!({"token":1,"values":[1,2]}));
    let got = call(&mut peer, 2, "$/enumerator/next", json!([1])).await;
    assert_eq!(got["result"], json!({"values":[3],"finished":false}));
    // Everything fits: no token, nothing to dispose.
    assert_eq!(call(&mut peer, 3, "countTo", json!([1])).await["result"], json!({"values":[1]}));
    assert_eq!(call(&mut peer, 4, "countTo", json!([0])).await["result"], json!({}));
}

#[tokio::test]
async fn unknown_tokens_are_answered_minus_32001_and_unknown_aborts_ignored() {
    let (conn, mut peer, _made) = server(StreamSettings::default());
    assert_eq!(call(&mut peer, 1, "$/enumerator/next", json!([42])).await, gone(1));
    assert_eq!(call(&mut peer, 2, "$/enumerator/next", json!(["not-ours"])).await, gone(2));
    assert_eq!(call(&mut peer, 3, "$/enumerator/next", json!({})).await, gone(3));
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[42]})).await;
    peer.expect_silence(SILENCE).await;
    assert!(!conn.is_closed());
}

/// `watch`: a stream whose items come from `items` (so the test decides when each is ready) and
/// that signals when it is dropped.
fn watch_router(
    items: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Result<u64, ErrorObject>>>>,
) -> (Router, oneshot::Receiver<()>) {
    let (dropped_tx, dropped) = oneshot::channel();
    let dropped_tx = Arc::new(std::sync::Mutex::new(Some(dropped_tx)));
    let router = Router::new().request_raw("watch", move |req, reply| {
        let items = items.clone();
        let signal = DropSignal(dropped_tx.lock().unwrap().take());
        async move {
            let stream = futures::stream::unfold((items, signal), |(items, signal)| async move {
                let next = items.lock().await.recv().await?;
                Some((next, (items, signal)))
            });
            reply.ok(req.peer().offer_try_stream(stream));
        }
    });
    (router, dropped)
}

#[tokio::test]
async fn abort_drops_the_producer_and_forgets_the_token() {
    let (tx, rx) = mpsc::unbounded_channel();
    let (router, dropped) = watch_router(Arc::new(tokio::sync::Mutex::new(rx)));
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    assert_eq!(call(&mut peer, 1, "watch", json!([])).await["result"], json!({"token":1}));
    tx.send(Ok(7)).unwrap();
    let got = call(&mut peer, 2, "$/enumerator/next", json!([1])).await;
    assert_eq!(got["result"], json!({"values":[7],"finished":false}));
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[1]})).await;
    within(dropped).await.expect("the producer's stream was dropped");
    peer.expect_silence(SILENCE).await;
    assert_eq!(call(&mut peer, 3, "$/enumerator/next", json!([1])).await, gone(3));
}

#[tokio::test]
async fn cancelling_a_next_ends_the_whole_sequence() {
    let (_tx, rx) = mpsc::unbounded_channel();
    let (router, dropped) = watch_router(Arc::new(tokio::sync::Mutex::new(rx)));
    let (_conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    assert_eq!(call(&mut peer, 1, "watch", json!([])).await["result"], json!({"token":1}));
    // No item is ready: the `next` waits, until it is cancelled.
    peer.send_json(json!({"jsonrpc":"2.0","id":2,"method":"$/enumerator/next","params":[1]})).await;
    peer.expect_silence(SILENCE).await;
    peer.send_json(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}})).await;
    within(dropped).await.expect("the producer's stream was dropped");
    assert_eq!(call(&mut peer, 3, "$/enumerator/next", json!([1])).await, gone(3));
}

#[tokio::test]
async fn an_error_item_answers_the_next_after_the_items_before_it_and_ends_the_stream() {
    let (tx, rx) = mpsc::unbounded_channel();
    let (router, dropped) = watch_router(Arc::new(tokio::sync::Mutex::new(rx)));
    let (conn, mut peer) = pair(
        Connection::builder().stream_settings(StreamSettings::new().min_batch_size(3)).serve(router),
        Framing::NewlineDelimited,
    );
    assert_eq!(call(&mut peer, 1, "watch", json!([])).await["result"], json!({"token":1}));
    tx.send(Ok(1)).unwrap();
    tx.send(Err(ErrorObject::new(-32050, "the disk is gone").with_data(json!({"disk": "d1"})))).unwrap();
    // The item before the failure goes first, in a short batch...
    let got = call(&mut peer, 2, "$/enumerator/next", json!([1])).await;
    assert_eq!(got["result"], json!({"values":[1],"finished":false}));
    // ...then the failure is the answer, and the stream is over.
    assert_eq!(
        call(&mut peer, 3, "$/enumerator/next", json!([1])).await,
        json!({"jsonrpc":"2.0","id":3,"error":{"code":-32050,"message":"the disk is gone","data":{"disk":"d1"}}})
    );
    within(dropped).await.expect("the producer's stream was dropped");
    assert_eq!(call(&mut peer, 4, "$/enumerator/next", json!([1])).await, gone(4));
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_stream_passed_as_an_argument_ends_when_its_request_is_answered() {
    let (conn, mut peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    let (signal, dropped) = oneshot::channel();
    let guard = DropSignal(Some(signal));
    let numbers = futures::stream::iter(1..=100u64).map(move |i| {
        let _keep = &guard;
        i
    });
    let offer = conn.handle().offer_stream(numbers);
    let h = conn.handle();
    let sum = tokio::spawn(async move { h.request::<u64>("sum", (offer,)).await });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"sum","params":[{"token":1}]})).await;
    // The peer pulls twice from our side (its own ids), then answers.
    assert_eq!(
        call(&mut peer, 100, "$/enumerator/next", json!([1])).await,
        json!({"jsonrpc":"2.0","id":100,"result":{"values":[1],"finished":false}})
    );
    assert_eq!(call(&mut peer, 101, "$/enumerator/next", json!([1])).await["result"]["values"], json!([2]));
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":3})).await;
    assert_eq!(within(sum).await.unwrap().unwrap(), 3);
    // The answer ended the argument stream.
    within(dropped).await.expect("the argument stream was dropped");
    assert_eq!(call(&mut peer, 102, "$/enumerator/next", json!([1])).await, gone(102));
}

#[tokio::test]
async fn a_stream_cannot_travel_in_a_notification_or_twice() {
    let (conn, peer) = pair(Connection::builder(), Framing::NewlineDelimited);
    let offer = conn.handle().offer_stream(futures::stream::iter([1]));
    let e = conn.handle().notify("update", (&offer,)).await.unwrap_err();
    assert!(matches!(&e, Error::Serialize(e) if e.to_string().contains("not in a notification")), "{e}");
    let e = serde_json::to_string(&offer).unwrap_err();
    assert!(e.to_string().contains("in the params of a request or in a result"), "{e}");
    peer.expect_silence(SILENCE).await;
}

// ---------------------------------------------------------------------------------------------
// The consumer side: we pull a stream the peer generates.
// ---------------------------------------------------------------------------------------------

fn consumer() -> (Connection, RawPeer) {
    pair(Connection::builder(), Framing::NewlineDelimited)
}

#[tokio::test]
async fn we_pull_with_next_echoing_the_token_and_stop_at_finished() {
    let (conn, mut peer) = consumer();
    let mut stream = conn.handle().request_stream::<u64>("search", ("x",), CallOptions::new());
    // Lazy: nothing is sent before the first poll.
    peer.expect_silence(SILENCE).await;
    let first = tokio::spawn(async move {
        let first = stream.next().await;
        (first, stream)
    });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"search","params":["x"]})).await;
    // Any JSON token works; it is echoed verbatim.
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":{"t":"a-1"},"values":[1]}})).await;
    let (first, stream) = within(first).await.unwrap();
    assert_eq!(first.unwrap().unwrap(), 1);
    let rest = tokio::spawn(async move { stream.collect::<Vec<_>>().await });
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"$/enumerator/next","params":[{"t":"a-1"}]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"result":{"values":[2,3],"finished":false}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"method":"$/enumerator/next","params":[{"t":"a-1"}]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":2,"result":{"values":[4]}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":3,"method":"$/enumerator/next","params":[{"t":"a-1"}]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":3,"result":{"values":[],"finished":true}})).await;
    let rest: Vec<u64> = within(rest).await.unwrap().into_iter().map(Result::unwrap).collect();
    assert_eq!(rest, [2, 3, 4]);
    // Finished: no abort.
    peer.expect_silence(SILENCE).await;
}

#[tokio::test]
async fn a_result_without_a_token_is_the_whole_sequence() {
    let (conn, mut peer) = consumer();
    let stream = conn.handle().request_stream::<String>("list", (), CallOptions::new());
    let all = tokio::spawn(stream.collect::<Vec<_>>());
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"list"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"values":["a","b"]}})).await;
    let all: Vec<String> = within(all).await.unwrap().into_iter().map(Result::unwrap).collect();
    assert_eq!(all, ["a", "b"]);
    peer.expect_silence(SILENCE).await;
}

#[tokio::test]
async fn dropping_our_stream_early_sends_abort_and_cancels_a_next_in_flight() {
    let (conn, mut peer) = consumer();
    let mut stream = conn.handle().request_stream::<u64>("watch", (), CallOptions::new());
    let first = tokio::spawn(async move { (stream.next().await, stream) });
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"watch"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":5,"values":[1]}})).await;
    let (first, stream) = within(first).await.unwrap();
    assert_eq!(first.unwrap().unwrap(), 1);
    drop(stream);
    peer.expect(json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[5]})).await;

    // Dropped while a `next` waits: the `next` is cancelled, then the sequence aborted.
    let mut stream = conn.handle().request_stream::<u64>("watch", (), CallOptions::new());
    let first = tokio::spawn(async move { (stream.next().await, stream) });
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"watch"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"result":{"token":6}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":2,"method":"$/enumerator/next","params":[6]})).await;
    first.abort();
    assert!(within(first).await.unwrap_err().is_cancelled());
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[6]})).await;
}

#[tokio::test]
async fn the_generators_error_is_one_err_item_then_the_end_without_abort() {
    let (conn, mut peer) = consumer();
    let stream = conn.handle().request_stream::<u64>("watch", (), CallOptions::new());
    let all = tokio::spawn(stream.collect::<Vec<_>>());
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"watch"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":1,"values":[1]}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"$/enumerator/next","params":[1]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"boom"}})).await;
    let all = within(all).await.unwrap();
    assert!(matches!(all.as_slice(), [Ok(1), Err(Error::Remote(e))] if e.code == -32050), "{all:?}");
    peer.expect_silence(SILENCE).await;
}

#[tokio::test]
async fn an_empty_batch_that_is_not_the_last_is_a_protocol_error_and_aborts() {
    let (conn, mut peer) = consumer();
    let stream = conn.handle().request_stream::<u64>("watch", (), CallOptions::new());
    let all = tokio::spawn(stream.collect::<Vec<_>>());
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"watch"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":1}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"$/enumerator/next","params":[1]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"result":{"values":[],"finished":false}})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[1]})).await;
    let all = within(all).await.unwrap();
    assert!(matches!(all.as_slice(), [Err(Error::Protocol(_))]), "{all:?}");
}

#[tokio::test]
async fn items_that_do_not_decode_are_an_error_and_abort() {
    let (conn, mut peer) = consumer();
    let stream = conn.handle().request_stream::<u64>("watch", (), CallOptions::new());
    let all = tokio::spawn(stream.collect::<Vec<_>>());
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"watch"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":1}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"$/enumerator/next","params":[1]})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"result":{"values":["one"],"finished":false}})).await;
    peer.expect(json!({"jsonrpc":"2.0","method":"$/enumerator/abort","params":[1]})).await;
    let all = within(all).await.unwrap();
    assert!(matches!(all.as_slice(), [Err(Error::Deserialize(_))]), "{all:?}");
}

#[tokio::test]
async fn cancelling_our_token_cancels_the_next_and_ends_the_stream() {
    let (conn, mut peer) = consumer();
    let token = CancellationToken::new();
    let stream = conn.handle().request_stream::<u64>("watch", (), CallOptions::new().cancel(token.clone()));
    let all = tokio::spawn(stream.collect::<Vec<_>>());
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"watch"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":1}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"$/enumerator/next","params":[1]})).await;
    token.cancel();
    peer.expect(json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"The task was cancelled."}})).await;
    let all = within(all).await.unwrap();
    assert!(matches!(all.as_slice(), [Err(Error::Cancelled)]), "{all:?}");
    peer.expect_silence(SILENCE).await;
}

#[tokio::test]
async fn the_connection_ending_ends_the_stream_with_connection_lost() {
    let (conn, mut peer) = consumer();
    let stream = conn.handle().request_stream::<u64>("watch", (), CallOptions::new());
    let all = tokio::spawn(stream.collect::<Vec<_>>());
    peer.expect(json!({"jsonrpc":"2.0","id":0,"method":"watch"})).await;
    peer.send_json(json!({"jsonrpc":"2.0","id":0,"result":{"token":1,"values":[1]}})).await;
    peer.expect(json!({"jsonrpc":"2.0","id":1,"method":"$/enumerator/next","params":[1]})).await;
    peer.close_write().await;
    let all = within(all).await.unwrap();
    assert!(matches!(all.as_slice(), [Ok(1), Err(Error::ConnectionLost(_))]), "{all:?}");
}

#[tokio::test]
async fn the_connection_ending_drops_every_producer() {
    let (tx, rx) = mpsc::unbounded_channel();
    let (router, dropped) = watch_router(Arc::new(tokio::sync::Mutex::new(rx)));
    let (conn, mut peer) = pair(Connection::builder().serve(router), Framing::NewlineDelimited);
    assert_eq!(call(&mut peer, 1, "watch", json!([])).await["result"], json!({"token":1}));
    peer.close_write().await;
    within(dropped).await.expect("the producer's stream was dropped");
    within(conn.closed()).await;
    drop(tx);
}

/// Streams offered and never pulled are bounded per connection: one beyond the limit is refused
/// with an error naming it, and one that ends makes room.
#[tokio::test]
async fn offered_streams_beyond_the_limit_are_refused_with_a_clear_error() {
    let (tx, _made) = mpsc::unbounded_channel();
    let limits = jsonrpc_duplex::Limits::new().max_offered_streams(2);
    let builder = Connection::builder().limits(limits).serve(count_to(tx, StreamSettings::new()));
    let (_conn, mut peer) = pair(builder, Framing::NewlineDelimited);
    assert_eq!(call(&mut peer, 1, "countTo", json!([5])).await, json!({"jsonrpc":"2.0","id":1,"result":{"token":1}}));
    assert_eq!(call(&mut peer, 2, "countTo", json!([5])).await, json!({"jsonrpc":"2.0","id":2,"result":{"token":2}}));
    let refused = call(&mut peer, 3, "countTo", json!([5])).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("2 live offered streams") && message.contains("max_offered_streams"), "{message}");
    // An abort ends one: the next offer fits again.
    peer.send(r#"{"jsonrpc":"2.0","method":"$/enumerator/abort","params":[1]}"#).await;
    let again = call(&mut peer, 4, "countTo", json!([5])).await;
    assert!(again["result"]["token"].is_u64(), "{again}");
}
