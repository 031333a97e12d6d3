//! Calls per second over an in-memory pair, through the raw core API and through `#[rpc]`,
//! interleaved in one process:
//! A: one call at a time; B: 64 calls in flight; C: one-way notifications until all are handled.
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench calls` (`BENCH_QUICK=1`: a hundredth of the
//! sizes, one repetition)

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use jsonrpc_duplex::{Connection, ErrorObject, Handle, Router, RpcError, rpc, transport::memory};
use jsonrpc_duplex_benches::{per_sec, reps, sized};
use tokio::sync::Notify;

const REPS: usize = 5;

/// The service measured through generated code.
#[rpc]
pub trait Calc {
    /// Add two numbers.
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;
    /// Count one tick.
    #[notification]
    async fn tick(&self, total: u64);
}

struct Counter {
    seen: Arc<AtomicUsize>,
    all_seen: Arc<Notify>,
}

impl Counter {
    fn count(&self, total: u64) {
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == total as usize {
            self.all_seen.notify_one();
        }
    }
}

impl Calc for Counter {
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError> {
        Ok(a + b)
    }
    async fn tick(&self, total: u64) {
        self.count(total)
    }
}

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One way of making the calls: raw core API or generated client.
trait Contender: Sync {
    fn add(&self, a: i64) -> BoxFut<'_, i64>;
    fn tick(&self, total: u64) -> BoxFut<'_, ()>;
}

struct Raw(Handle);
impl Contender for Raw {
    fn add(&self, a: i64) -> BoxFut<'_, i64> {
        Box::pin(async move { self.0.request("add", (a, 1)).await.expect("call") })
    }
    fn tick(&self, total: u64) -> BoxFut<'_, ()> {
        Box::pin(async move { self.0.notify("tick", [total]).await.expect("notify") })
    }
}

struct Generated(CalcClient);
impl Contender for Generated {
    fn add(&self, a: i64) -> BoxFut<'_, i64> {
        Box::pin(async move { self.0.add(a, 1).await.expect("call") })
    }
    fn tick(&self, total: u64) -> BoxFut<'_, ()> {
        Box::pin(async move { self.0.tick(total).await.expect("notify") })
    }
}

fn sequential(rt: &tokio::runtime::Runtime, c: &dyn Contender, n: i64) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        for i in 0..n {
            assert_eq!(c.add(i).await, i + 1);
        }
        start.elapsed()
    })
}

fn in_flight(rt: &tokio::runtime::Runtime, c: &dyn Contender, n: i64, width: i64) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        let mut inflight = FuturesUnordered::new();
        let mut sent = 0i64;
        while sent < width.min(n) {
            inflight.push(c.add(sent));
            sent += 1;
        }
        while inflight.next().await.is_some() {
            if sent < n {
                inflight.push(c.add(sent));
                sent += 1;
            }
        }
        start.elapsed()
    })
}

fn notifications(rt: &tokio::runtime::Runtime, c: &dyn Contender, counter: &Counter, n: usize) -> Duration {
    rt.block_on(async {
        counter.seen.store(0, Ordering::Relaxed);
        let done = counter.all_seen.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        let start = Instant::now();
        for _ in 0..n {
            c.tick(n as u64).await;
        }
        done.await;
        start.elapsed()
    })
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let seen = Arc::new(AtomicUsize::new(0));
    let all_seen = Arc::new(Notify::new());
    let counter = Arc::new(Counter { seen: seen.clone(), all_seen: all_seen.clone() });

    // The raw server: a Router written by hand; the generated one: `CalcServer`.
    let (raw_client, _raw_server, gen_client, _gen_server) = rt.block_on(async {
        let c = counter.clone();
        let router = Router::new()
            .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
            .notification("tick", move |(total,): (u64,), _| {
                c.count(total);
                async {}
            });
        let (rc, rs) = memory::pair(Connection::builder(), Connection::builder().serve(router));
        let (gc, gs) =
            memory::pair(Connection::builder(), Connection::builder().serve(CalcServer::from_arc(counter.clone())));
        (rc, rs, gc, gs)
    });
    let raw = Raw(raw_client.handle());
    let generated = Generated(CalcClient::new(gen_client.handle()));
    let contenders: [(&str, &dyn Contender); 2] = [("core API", &raw), ("#[rpc]", &generated)];

    let mut table: Vec<(String, [f64; 2])> = Vec::new();
    let mut row = |name: &str, f: &mut dyn FnMut(&dyn Contender) -> f64| {
        // Interleave the contenders: each repetition runs both, so drift hits both alike.
        let mut samples = [Vec::new(), Vec::new()];
        for _ in 0..reps(REPS) {
            for (i, (_, c)) in contenders.iter().enumerate() {
                samples[i].push(f(*c));
            }
        }
        let med = samples.map(|mut s| {
            s.sort_by(|a, b| a.total_cmp(b));
            s[s.len() / 2]
        });
        table.push((name.to_owned(), med));
    };

    let n = sized(20_000) as i64;
    row("A sequential calls/s", &mut |c| per_sec(n as usize, sequential(&rt, c, n)));
    let n = sized(64_000) as i64;
    row("B 64 in flight calls/s", &mut |c| per_sec(n as usize, in_flight(&rt, c, n, 64)));
    let n = sized(100_000);
    row("C notifications msgs/s", &mut |c| per_sec(n, notifications(&rt, c, &counter, n)));

    println!("{:<26} {:>12} {:>12} {:>8}", "in-memory pair, medians of 5", contenders[0].0, contenders[1].0, "ratio");
    for (name, [a, b]) in table {
        println!("{name:<26} {a:>12.0} {b:>12.0} {:>8.2}", b / a);
    }
    println!("(ratio = #[rpc] / core API; 1.00 means the generated code costs nothing extra)");
}
