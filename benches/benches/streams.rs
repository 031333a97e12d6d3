//! Stream items per second over an in-memory pair, next to one-way notifications per second in
//! the same run (the ceiling: a notification is one message, an item shares its message with the
//! rest of its batch but needs a `next` round trip per batch).
//!
//! - items/s pulling a 1,000,000-item stream to its end through `Handle::request_stream`, under
//!   StreamJsonRpc's defaults (one item per `$/enumerator/next`) and with batches and read-ahead;
//! - the same through a generated `#[rpc]` client and server;
//! - notifications/s: 1,000,000 notifications until the peer has handled them all.
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench streams` (`BENCH_QUICK=1`: a hundredth of the
//! items, one repetition)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use jsonrpc_duplex::{CallOptions, Connection, Handle, Router, StreamSettings, rpc, transport::memory};
use jsonrpc_duplex_benches::{per_sec, reps, sized};
use tokio::sync::Notify;

const ITEMS: u64 = 1_000_000;
const REPS: usize = 3;

/// The service measured through generated code.
#[rpc]
pub trait Numbers {
    /// `0..n`.
    fn numbers(&self, n: u64) -> impl Stream<Item = u64> + Send;
}

struct Service;

impl Numbers for Service {
    fn numbers(&self, n: u64) -> impl Stream<Item = u64> + Send {
        futures::stream::iter(0..n)
    }
}

/// A server serving `numbers [n]` by hand and through `#[rpc]` (`NumbersServer`), paced by
/// `settings`, and `tick` notifications counted into `seen`.
fn server(settings: StreamSettings, seen: Arc<(AtomicUsize, Notify)>) -> jsonrpc_duplex::Builder {
    let router = Router::new()
        .request_raw("raw/numbers", |req, reply| async move {
            match req.decode_params::<(u64,)>() {
                Ok((n,)) => reply.ok(req.peer().offer_stream(futures::stream::iter(0..n))),
                Err(e) => reply.err(e),
            };
        })
        .notification("tick", move |(total,): (usize,), _| {
            if seen.0.fetch_add(1, Ordering::Relaxed) + 1 == total {
                seen.1.notify_one();
            }
            async {}
        });
    Connection::builder().stream_settings(settings).serve(router).serve(NumbersServer::new(Service))
}

async fn pull(handle: &Handle, method: &str, n: u64) -> Duration {
    let start = Instant::now();
    let mut stream = handle.request_stream::<u64>(method, (n,), CallOptions::new());
    let mut expected = 0;
    while let Some(item) = stream.next().await {
        assert_eq!(item.expect("an item"), expected);
        expected += 1;
    }
    assert_eq!(expected, n);
    start.elapsed()
}

async fn pull_generated(client: &NumbersClient, n: u64) -> Duration {
    let start = Instant::now();
    let mut stream = client.numbers(n);
    let mut expected = 0;
    while let Some(item) = stream.next().await {
        assert_eq!(item.expect("an item"), expected);
        expected += 1;
    }
    assert_eq!(expected, n);
    start.elapsed()
}

async fn notifications(handle: &Handle, seen: &(AtomicUsize, Notify), n: usize) -> Duration {
    seen.0.store(0, Ordering::Relaxed);
    let done = seen.1.notified();
    tokio::pin!(done);
    done.as_mut().enable();
    let start = Instant::now();
    for _ in 0..n {
        handle.notify("tick", [n]).await.expect("notify");
    }
    done.await;
    start.elapsed()
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let configs: [(&str, StreamSettings); 3] = [
        ("defaults (1 per next)", StreamSettings::default()),
        ("batch 100", StreamSettings::new().min_batch_size(100)),
        ("batch 1000, read-ahead 4000", StreamSettings::new().min_batch_size(1000).max_read_ahead(4000)),
    ];
    let (items, reps) = (sized(ITEMS as usize) as u64, reps(REPS));
    println!("in-memory pair, 2 worker threads, medians of {reps}; {items} items or notifications each");
    println!("{:<56} {:>14}", "", "per second");
    let seen = Arc::new((AtomicUsize::new(0), Notify::new()));
    for (name, settings) in configs {
        let (client, _server) =
            rt.block_on(async { memory::pair(Connection::builder(), server(settings, seen.clone())) });
        let handle = client.handle();
        let generated = NumbersClient::new(client.handle());
        let mut core = Vec::new();
        let mut macro_ = Vec::new();
        for _ in 0..reps {
            core.push(per_sec(items as usize, rt.block_on(pull(&handle, "raw/numbers", items))));
            macro_.push(per_sec(items as usize, rt.block_on(pull_generated(&generated, items))));
        }
        println!("{:<56} {:>14.0}", format!("stream items/s, {name}, core API"), median(core));
        println!("{:<56} {:>14.0}", format!("stream items/s, {name}, #[rpc]"), median(macro_));
    }
    let (client, _server) =
        rt.block_on(async { memory::pair(Connection::builder(), server(StreamSettings::default(), seen.clone())) });
    let handle = client.handle();
    let samples =
        (0..reps).map(|_| per_sec(items as usize, rt.block_on(notifications(&handle, &seen, items as usize))));
    println!("{:<56} {:>14.0}", "notifications/s (one-way, all handled)", median(samples.collect()));
}
