//! A slow consumer keeps the producer paused: over 100,000 items (20,000 with the defaults, a
//! round trip per item in a debug build), the producer is never more than
//! the read-ahead plus one batch ahead of what the consumer has taken, whatever the settings. Two
//! of our connections over an in-memory pair, on a multi-thread runtime so that the producer's
//! side really runs while the consumer dawdles.

use crate::support::time::quiescent;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use jsonrpc_duplex::{CallOptions, Connection, ErrorObject, Router, StreamSettings, transport::memory};

const ITEMS: usize = 100_000;

/// Stream `items` numbers paced by `settings` to a consumer that yields to the scheduler a few
/// times per item; check at every item that production stays within `bound` of consumption.
/// Returns the largest lead seen.
async fn slow_consumer(items: usize, settings: StreamSettings, bound: usize) -> usize {
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = produced.clone();
    let router = Router::new().request_raw("numbers", move |req, reply| {
        let counter = counter.clone();
        async move {
            let items = futures::stream::iter(0..items as u64).inspect(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
            });
            reply.ok(req.peer().offer_stream(items));
        }
    });
    let (client, _server) =
        memory::pair(Connection::builder(), Connection::builder().stream_settings(settings).serve(router));
    let mut stream = client.handle().request_stream::<u64>("numbers", (), CallOptions::new());
    let mut consumed = 0usize;
    let mut lead = 0usize;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while let Some(item) = tokio::time::timeout_at(deadline, stream.next()).await.expect("the stream stalled") {
        assert_eq!(item.expect("an item"), consumed as u64);
        consumed += 1;
        let ahead = produced.load(Ordering::SeqCst) - consumed;
        assert!(ahead <= bound, "item {consumed}: the producer is {ahead} items ahead (bound {bound}, {settings:?})");
        lead = lead.max(ahead);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
    }
    assert_eq!(consumed, items);
    assert_eq!(produced.load(Ordering::SeqCst), items);
    lead
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_read_ahead_and_batches_the_producer_stays_within_read_ahead_plus_one_batch() {
    // A batch holds at most max(min_batch_size, max_read_ahead) items.
    let (read_ahead, batch) = (64, 16);
    let lead =
        slow_consumer(ITEMS, StreamSettings::new().max_read_ahead(read_ahead).min_batch_size(batch), read_ahead + 64)
            .await;
    assert!(lead >= batch, "the read-ahead was used ({lead})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_batches_only_the_producer_is_one_batch_ahead_at_most() {
    slow_consumer(ITEMS, StreamSettings::new().min_batch_size(100), 100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_defaults_the_producer_makes_each_item_when_it_is_asked_for() {
    // One `next` per item: a round trip each.
    let lead = slow_consumer(20_000, StreamSettings::default(), 1).await;
    assert!(lead <= 1);
}

/// What the producer below could make: far more than it may (so that a producer that ignores
/// the read-ahead is caught), and finite (so that such a producer ends and the test fails
/// instead of hanging).
const PRODUCIBLE: u64 = 10_000;

#[tokio::test(start_paused = true)]
async fn a_consumer_that_stops_pulling_stops_the_producer() {
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = produced.clone();
    let router = Router::new().method("numbers", move |(): (), cx| {
        let counter = counter.clone();
        async move {
            let items = futures::stream::iter(0..PRODUCIBLE).inspect(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
            });
            Ok::<_, ErrorObject>(cx.peer().offer_stream(items))
        }
    });
    let settings = StreamSettings::new().max_read_ahead(10);
    let (client, _server) =
        memory::pair(Connection::builder(), Connection::builder().stream_settings(settings).serve(router));
    let mut stream = client.handle().request_stream::<u64>("numbers", (), CallOptions::new());
    for i in 0..25 {
        assert_eq!(stream.next().await.unwrap().unwrap(), i);
    }
    // The consumer stops here: the producer fills its read-ahead (at most one batch was taken
    // ahead into our buffer) and waits.
    // Paused time: the clock moves only once no task can make progress, so once it has, the
    // producer has stopped for good (not merely for a while).
    quiescent().await;
    let settled = produced.load(Ordering::SeqCst);
    assert!(settled <= 25 + 10 + 10, "{settled} items made for 25 taken");
}
