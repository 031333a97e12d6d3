//! A soak run: two connections in one process under mixed load for N minutes — calls both ways,
//! streams pulled to the end or dropped midway, cancelled calls, timed-out calls, numbered
//! notifications both ways — plus a short-lived connection opened and closed every second. Every
//! report interval it prints the resident memory (VmRSS), the live tokio tasks, the calls done
//! and the latency percentiles of plain calls; at the end, start and end memory. It exits non-zero
//! if any call ended wrongly, any notification was lost or reordered, or memory or tasks grew
//! without bound.
//!
//! ```text
//! scripts/soak.sh 3                                    # 3 minutes, release build
//! cargo run --release --example soak -- --seconds 30 --report-secs 5 --framing newline
//! ```
//!
//! Not part of `cargo test` (it only has to build there).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use jsonrpc_duplex::{
    CallOptions, CancellationToken, Connection, Error, ErrorObject, Framing, Handle, RequestContext, Router,
};

/// Workers per side, each making one call at a time.
const WORKERS: usize = 48;
const HANG_TIMEOUT: Duration = Duration::from_millis(20);

struct Options {
    duration: Duration,
    report: Duration,
    framing: Framing,
}

fn options() -> Options {
    let mut opts =
        Options { duration: Duration::from_secs(60), report: Duration::from_secs(10), framing: Framing::ContentLength };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--minutes" => opts.duration = Duration::from_secs_f64(number(&value()) * 60.0),
            "--seconds" => opts.duration = Duration::from_secs_f64(number(&value())),
            "--report-secs" => opts.report = Duration::from_secs_f64(number(&value()).max(0.1)),
            "--framing" => opts.framing = value().parse().unwrap_or_else(|e: String| usage(&e)),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    opts
}

fn number(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| usage(&format!("not a number: {s:?}")))
}

fn usage(why: &str) -> ! {
    eprintln!("{why}\nusage: soak [--minutes M | --seconds S] [--report-secs S] [--framing content-length|newline]");
    std::process::exit(2)
}

/// Resident memory of this process, in KiB.
fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// What the run counts; a failure is anything a correct connection never does.
#[derive(Default)]
struct Stats {
    calls: AtomicU64,
    streams: AtomicU64,
    cancelled: AtomicU64,
    timed_out: AtomicU64,
    notes_received: AtomicU64,
    failures: AtomicU64,
    /// Latencies of plain calls in this interval, in microseconds.
    latencies: Mutex<Vec<u32>>,
}

impl Stats {
    fn fail(&self, what: String) {
        if self.failures.fetch_add(1, Ordering::Relaxed) < 20 {
            eprintln!("FAILURE: {what}");
        }
    }
}

fn service(stats: Arc<Stats>, last_seq: Arc<AtomicI64>) -> Router {
    Router::new()
        .method("add", |(a, b): (i64, i64), _cx| async move { Ok::<_, ErrorObject>(a + b) })
        .method("work", |(n, yields): (i64, u32), _cx| async move {
            for _ in 0..yields {
                tokio::task::yield_now().await;
            }
            Ok::<_, ErrorObject>(n * 2)
        })
        .method("hang", |(): (), cx: RequestContext| async move {
            cx.cancellation().cancelled().await;
            Err::<(), _>(ErrorObject::new(jsonrpc_duplex::codes::REQUEST_CANCELLED, "cancelled"))
        })
        .request_raw("count", |req, reply| async move {
            let (n,): (u64,) = match req.decode_params() {
                Ok(n) => n,
                Err(e) => {
                    reply.err(e);
                    return;
                }
            };
            let stream = req.peer().offer_stream(futures::stream::iter(0..n));
            reply.ok(stream);
        })
        .notification("seq", move |(n,): (i64,), _cx| {
            let previous = last_seq.swap(n, Ordering::Relaxed);
            if previous + 1 != n {
                stats.fail(format!("notification {n} arrived after {previous}"));
            }
            stats.notes_received.fetch_add(1, Ordering::Relaxed);
            async {}
        })
}

/// One worker: calls in a loop until `stop`, a mix of kinds.
async fn worker(peer: Handle, stats: Arc<Stats>, seed: u64, stop: Arc<AtomicBool>) {
    let mut rng = Rng(seed | 1);
    let mut i: i64 = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        match rng.below(100) {
            0..60 => {
                let started = Instant::now();
                match peer.request::<i64>("add", (i, 1)).await {
                    Ok(sum) if sum == i + 1 => {
                        let us = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                        stats.latencies.lock().unwrap().push(us);
                        stats.calls.fetch_add(1, Ordering::Relaxed);
                    }
                    other => stats.fail(format!("add({i}, 1) gave {other:?}")),
                }
            }
            60..75 => match peer.request::<i64>("work", (i, rng.below(4) as u32)).await {
                Ok(v) if v == i * 2 => {
                    stats.calls.fetch_add(1, Ordering::Relaxed);
                }
                other => stats.fail(format!("work({i}) gave {other:?}")),
            },
            75..83 => {
                // A stream pulled to its end (or dropped midway, one time in three).
                let n = 1 + rng.below(30);
                let take = if rng.below(3) == 0 { rng.below(n) } else { n };
                let mut items = peer.request_stream::<u64>("count", (n,), CallOptions::default()).take(take as usize);
                let mut expected = 0;
                while let Some(item) = items.next().await {
                    match item {
                        Ok(v) if v == expected => expected += 1,
                        other => {
                            stats.fail(format!("stream item {expected} of {n}: {other:?}"));
                            break;
                        }
                    }
                }
                if expected != take {
                    stats.fail(format!("stream of {n}: {expected} items instead of {take}"));
                }
                stats.streams.fetch_add(1, Ordering::Relaxed);
            }
            83..95 => {
                // Cancelled after a few yields: the right answer, or `Cancelled`.
                let token = CancellationToken::new();
                let firing = token.clone();
                let after = rng.below(6);
                tokio::spawn(async move {
                    for _ in 0..after {
                        tokio::task::yield_now().await;
                    }
                    firing.cancel();
                });
                match peer.request_with::<i64>("work", (i, 2), CallOptions::new().cancel(token)).await {
                    Ok(v) if v == i * 2 => {
                        stats.calls.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(Error::Cancelled) => {
                        stats.cancelled.fetch_add(1, Ordering::Relaxed);
                    }
                    other => stats.fail(format!("cancelled work({i}) gave {other:?}")),
                }
            }
            _ => match peer.request_with::<()>("hang", (), CallOptions::new().timeout(HANG_TIMEOUT)).await {
                Err(Error::Timeout(_)) => {
                    stats.timed_out.fetch_add(1, Ordering::Relaxed);
                }
                other => stats.fail(format!("hang gave {other:?}")),
            },
        }
    }
}

/// Numbered notifications, as fast as the connection takes them, until `stop`.
async fn notifier(peer: Handle, stats: Arc<Stats>, stop: Arc<AtomicBool>) -> i64 {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        if let Err(e) = peer.notify("seq", (n,)).await {
            stats.fail(format!("notify {n}: {e}"));
            break;
        }
        if n % 32 == 0 {
            // Leave room for the calls.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    n
}

/// A short-lived pair: a few calls, then both ends closed.
async fn churn(framing: Framing, stats: &Stats) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let server = Connection::builder().framing(framing).serve(service(Arc::default(), Arc::default())).connect_io(x);
    let client = Connection::builder().framing(framing).connect_io(y);
    for i in 0..50 {
        match client.handle().request::<i64>("add", (i, 1)).await {
            Ok(v) if v == i + 1 => {}
            other => stats.fail(format!("churn add gave {other:?}")),
        }
    }
    client.close().await;
    server.closed().await;
    server.close().await;
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let opts = options();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    let metrics = rt.metrics();
    let ok = rt.block_on(async {
        let stats = Arc::new(Stats::default());
        let (seq_a, seq_b) = (Arc::new(AtomicI64::new(0)), Arc::new(AtomicI64::new(0)));
        let (x, y) = tokio::io::duplex(64 * 1024);
        let a = Connection::builder().framing(opts.framing).serve(service(stats.clone(), seq_a.clone())).connect_io(x);
        let b = Connection::builder().framing(opts.framing).serve(service(stats.clone(), seq_b.clone())).connect_io(y);
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for w in 0..WORKERS as u64 {
            tasks.push(tokio::spawn(worker(a.handle(), stats.clone(), 0x1000 + w, stop.clone())));
            tasks.push(tokio::spawn(worker(b.handle(), stats.clone(), 0x2000 + w, stop.clone())));
        }
        let notifiers = [
            tokio::spawn(notifier(a.handle(), stats.clone(), stop.clone())),
            tokio::spawn(notifier(b.handle(), stats.clone(), stop.clone())),
        ];
        let churner = {
            let (stats, stop, framing) = (stats.clone(), stop.clone(), opts.framing);
            tokio::spawn(async move {
                let mut churned = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    churn(framing, &stats).await;
                    churned += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                churned
            })
        };

        let start = Instant::now();
        let rss_start = vm_rss_kib();
        let mut rss_max = rss_start;
        let mut tasks_first: Option<usize> = None;
        let mut tasks_last = 0;
        println!(
            "soak: {:?}, {} workers per side, framing {:?}, reports every {:?}",
            opts.duration, WORKERS, opts.framing, opts.report
        );
        println!(
            "{:>7} {:>9} {:>6} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6}",
            "t(s)", "rss(KiB)", "tasks", "calls/s", "streams", "p50us", "p90us", "p99us", "maxus", "cancel", "timeout", "fail"
        );
        let mut last_calls = 0;
        let mut last_at = start;
        while start.elapsed() < opts.duration {
            let left = opts.duration.saturating_sub(start.elapsed());
            tokio::time::sleep(opts.report.min(left)).await;
            let mut lat = std::mem::take(&mut *stats.latencies.lock().unwrap());
            lat.sort_unstable();
            let calls = stats.calls.load(Ordering::Relaxed);
            let rate = (calls - last_calls) as f64 / last_at.elapsed().as_secs_f64();
            (last_calls, last_at) = (calls, Instant::now());
            let rss = vm_rss_kib();
            rss_max = rss_max.max(rss);
            let alive = metrics.num_alive_tasks();
            tasks_first.get_or_insert(alive);
            tasks_last = alive;
            println!(
                "{:>7.1} {:>9} {:>6} {:>9.0} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6}",
                start.elapsed().as_secs_f64(),
                rss,
                alive,
                rate,
                stats.streams.load(Ordering::Relaxed),
                percentile(&lat, 0.5),
                percentile(&lat, 0.9),
                percentile(&lat, 0.99),
                lat.last().copied().unwrap_or(0),
                stats.cancelled.load(Ordering::Relaxed),
                stats.timed_out.load(Ordering::Relaxed),
                stats.failures.load(Ordering::Relaxed),
            );
        }
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            if tokio::time::timeout(Duration::from_secs(10), t).await.is_err() {
                stats.fail("a worker did not stop within 10 s".into());
            }
        }
        let mut sent = [0i64; 2];
        for (i, n) in notifiers.into_iter().enumerate() {
            sent[i] = tokio::time::timeout(Duration::from_secs(10), n).await.map(|r| r.unwrap_or(-1)).unwrap_or(-1);
        }
        let churned = tokio::time::timeout(Duration::from_secs(10), churner).await.map(|r| r.unwrap_or(0)).unwrap_or(0);
        // A call answered means every notification sent before it has been handled (they run to
        // completion in arrival order): one each way, then count.
        for (side, h) in [("a", a.handle()), ("b", b.handle())] {
            match tokio::time::timeout(Duration::from_secs(10), h.request::<i64>("add", (0, 1))).await {
                Ok(Ok(1)) => {}
                other => stats.fail(format!("the last call from {side} gave {other:?}")),
            }
        }
        // a's notifications are counted by b, and b's by a.
        let (got_by_b, got_by_a) = (seq_b.load(Ordering::Relaxed), seq_a.load(Ordering::Relaxed));
        if got_by_b != sent[0] || got_by_a != sent[1] {
            stats.fail(format!(
                "notifications sent {sent:?}, last received in order: by b {got_by_b}, by a {got_by_a}"
            ));
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), a.close()).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), b.close()).await;
        let rss_end = vm_rss_kib();
        println!(
            "done in {:.1}s: {} calls, {} streams, {} cancelled, {} timed out, {} + {} notifications, {} short-lived connections",
            start.elapsed().as_secs_f64(),
            stats.calls.load(Ordering::Relaxed),
            stats.streams.load(Ordering::Relaxed),
            stats.cancelled.load(Ordering::Relaxed),
            stats.timed_out.load(Ordering::Relaxed),
            sent[0],
            sent[1],
            churned,
        );
        println!(
            "memory: VmRSS {rss_start} KiB at the start, {rss_end} KiB at the end (max {rss_max} KiB); live tasks {} at the first report, {tasks_last} at the last",
            tasks_first.unwrap_or(0)
        );
        let failures = stats.failures.load(Ordering::Relaxed);
        // Growth checks: memory may settle (allocator pools), but not grow without bound.
        let grew = rss_end > rss_start.max(1) * 4 && rss_end > rss_start + 64 * 1024;
        if grew {
            println!("memory grew more than fourfold");
        }
        let tasks_grew = tasks_last > tasks_first.unwrap_or(0) * 2 + 64;
        if tasks_grew {
            println!("live tasks grew without bound");
        }
        println!("failures: {failures}");
        failures == 0 && !grew && !tasks_grew
    });
    drop(rt);
    std::process::exit(if ok { 0 } else { 1 });
}
