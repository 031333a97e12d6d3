//! The contest: what every contender offers ([`Contender`], [`Client`]), the transports they run
//! over ([`Link`]), the scenarios A–F measured on them ([`Runner`]), and the table.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::net::UnixStream;
use tokio::runtime::Runtime;
use tokio::sync::Notify;

use crate::alloc;

/// Counts handled notifications (`tick`) and wakes the bench once a target is reached.
#[derive(Debug, Default)]
pub struct Tally {
    seen: AtomicU64,
    target: AtomicU64,
    done: Notify,
}

impl Tally {
    /// A new tally, shared by a contender's servers and its runner.
    pub fn new() -> Arc<Self> {
        Arc::new(Tally::default())
    }

    /// One notification handled (called by every contender's `tick` handler).
    pub fn hit(&self) {
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == self.target.load(Ordering::Relaxed) {
            self.done.notify_one();
        }
    }

    fn arm(&self, target: u64) {
        self.seen.store(0, Ordering::Relaxed);
        self.target.store(target, Ordering::Relaxed);
    }

    async fn wait(&self) {
        loop {
            let done = self.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.seen.load(Ordering::Relaxed) >= self.target.load(Ordering::Relaxed) {
                return;
            }
            done.await;
        }
    }
}

/// The client side of one connected pair: the same work for every contender.
pub trait Client: Send + Sync + 'static {
    /// Call `add [a, b]` and return the sum.
    fn add(&self, a: i64, b: i64) -> impl Future<Output = i64> + Send;
    /// Call `echo [text]` and return the length of the string that came back.
    fn echo(&self, text: &str) -> impl Future<Output = usize> + Send;
    /// Send the notification `tick [seq]` (returns once it is queued or written).
    fn tick(&self, seq: u64) -> impl Future<Output = ()> + Send;
    /// Whether [`Client::stream`] is supported.
    const STREAMS: bool = false;
    /// Pull the stream `0..n` to its end and return how many items arrived.
    fn stream(&self, n: u64) -> impl Future<Output = u64> + Send {
        async move {
            let _ = n;
            0
        }
    }
}

/// A way to build connected pairs: a client and whatever keeps the server end alive.
pub trait Contender: Send + Sync + 'static {
    /// The client end.
    type Client: Client;
    /// Everything else of one pair (server connection, tasks, the other end of the link).
    type Guard: Send + Sync + 'static;
    /// Open one connected pair (inside the runtime).
    fn open(&self) -> impl Future<Output = (Self::Client, Self::Guard)> + Send;
}

/// The byte transport between the two ends of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// `tokio::io::duplex` with 64 KiB each way (what `memory::pair` uses).
    Duplex,
    /// A Unix-domain socket pair (`socketpair(2)`): real syscalls, one per read or write.
    UnixPair,
}

impl Link {
    /// Two connected ends (call inside the runtime: a socket pair registers with the reactor).
    pub fn pair(self) -> (Io, Io) {
        match self {
            Link::Duplex => {
                let (a, b) = tokio::io::duplex(64 * 1024);
                (Io::Duplex(a), Io::Duplex(b))
            }
            Link::UnixPair => {
                let (a, b) = UnixStream::pair().expect("socketpair");
                (Io::Unix(a), Io::Unix(b))
            }
        }
    }

    /// How the table names it.
    pub fn label(self) -> &'static str {
        match self {
            Link::Duplex => "in-memory duplex (tokio::io::duplex, 64 KiB)",
            Link::UnixPair => "Unix socket pair (socketpair(2))",
        }
    }
}

/// One end of a [`Link`].
#[derive(Debug)]
pub enum Io {
    /// In memory.
    Duplex(DuplexStream),
    /// A Unix socket.
    Unix(UnixStream),
    /// A TCP connection (the `connections` bench's hand-written server).
    Tcp(tokio::net::TcpStream),
}

impl AsyncRead for Io {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Duplex(s) => Pin::new(s).poll_read(cx, buf),
            Io::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tcp(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Duplex(s) => Pin::new(s).poll_write(cx, buf),
            Io::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tcp(s) => Pin::new(s).poll_write(cx, buf),
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Duplex(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Duplex(s) => s.is_write_vectored(),
            Io::Unix(s) => s.is_write_vectored(),
            Io::Tcp(s) => s.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Duplex(s) => Pin::new(s).poll_flush(cx),
            Io::Unix(s) => Pin::new(s).poll_flush(cx),
            Io::Tcp(s) => Pin::new(s).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Duplex(s) => Pin::new(s).poll_shutdown(cx),
            Io::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tcp(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Scenario A's figures for one repetition.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sequential {
    /// Median latency of one round trip.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Round trips per second over the whole run.
    pub per_sec: f64,
    /// Heap allocations per round trip, both ends and every task together.
    pub allocs_per_call: f64,
    /// Heap bytes requested per round trip, both ends together.
    pub bytes_per_call: f64,
    /// The run's calls split in two modes.
    pub modes: Modes,
}

/// Row A's calls in two modes: with two workers a run's round trips take either about the
/// time of the work itself or several times that (most often, the runtime woke its idle worker on
/// the way, see the README's "slow spells"), and the share of slow ones swings from run to run
/// for every contender alike. A call is slow here when it took over twice the run's tenth
/// percentile; each mode's mean then compares the contenders' own work apart from that share.
#[derive(Debug, Clone, Copy, Default)]
pub struct Modes {
    /// The share of the run's calls that were slow.
    pub slow_share: f64,
    /// The mean time of the fast calls.
    pub fast_mean: Duration,
    /// The mean time of the slow calls (zero when there were none).
    pub slow_mean: Duration,
}

impl Modes {
    /// The modes of `sorted`, a run's call times in increasing order (not empty).
    pub fn of(sorted: &[Duration]) -> Modes {
        let line = sorted[sorted.len() / 10] * 2;
        let fast = sorted.partition_point(|d| *d <= line);
        let mean =
            |s: &[Duration]| if s.is_empty() { Duration::ZERO } else { s.iter().sum::<Duration>() / s.len() as u32 };
        Modes {
            slow_share: (sorted.len() - fast) as f64 / sorted.len() as f64,
            fast_mean: mean(&sorted[..fast]),
            slow_mean: mean(&sorted[fast..]),
        }
    }
}

/// One contender with one open pair, measured through scenarios A–F (object-safe, so the
/// contenders of a table can sit in one list).
pub trait Runner {
    /// The column's name.
    fn name(&self) -> &str;
    /// A: `n` calls one at a time.
    fn sequential(&self, rt: &Runtime, n: usize) -> Sequential;
    /// B: `n` calls, `width` in flight at any time; calls/s.
    fn in_flight(&self, rt: &Runtime, n: usize, width: usize) -> f64;
    /// C: `n` notifications until the server has handled them all; msgs/s.
    fn notifications(&self, rt: &Runtime, n: usize) -> f64;
    /// D: `n` echoes of `payload`; MB/s counting the payload both ways.
    fn echo(&self, rt: &Runtime, payload: Arc<str>, n: usize) -> f64;
    /// E: a stream of `n` items pulled to its end; items/s (None: not supported).
    fn stream(&self, rt: &Runtime, n: u64) -> Option<f64>;
    /// F: heap bytes per idle connected pair, `n` pairs open at once (each after one call).
    fn idle(&self, rt: &Runtime, n: usize) -> f64;
}

/// A [`Contender`] with its pair open. Every scenario runs as a task spawned on the runtime's
/// workers (not on the thread that blocks on it), so no round trip pays for waking a thread
/// outside the pool.
pub struct Live<C: Contender> {
    name: Arc<str>,
    inner: Arc<Inner<C>>,
}

struct Inner<C: Contender> {
    contender: C,
    client: C::Client,
    _guard: C::Guard,
    tally: Arc<Tally>,
}

impl<C: Contender> Live<C> {
    /// Open the pair used by scenarios A–E; `tally` must be the one `contender`'s servers count into.
    pub fn start(rt: &Runtime, name: &str, contender: C, tally: Arc<Tally>) -> Box<dyn Runner> {
        let (client, guard) = rt.block_on(contender.open());
        let live = Live { name: name.into(), inner: Arc::new(Inner { contender, client, _guard: guard, tally }) };
        // A first call proves the pair works before anything is timed.
        let sum = live.run(rt, |inner, _| async move { inner.client.add(40, 2).await });
        assert_eq!(sum, 42, "{name}: first call");
        Box::new(live)
    }

    /// Run `f` as a task on the runtime and wait for it.
    fn run<T, F, Fut>(&self, rt: &Runtime, f: F) -> T
    where
        T: Send + 'static,
        F: FnOnce(Arc<Inner<C>>, Arc<str>) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        let task = rt.spawn(f(self.inner.clone(), self.name.clone()));
        match rt.block_on(task) {
            Ok(t) => t,
            Err(e) => panic!("{}: {e}", self.name),
        }
    }
}

impl<C: Contender> Runner for Live<C> {
    fn name(&self) -> &str {
        &self.name
    }

    fn sequential(&self, rt: &Runtime, n: usize) -> Sequential {
        self.run(rt, |inner, _| async move {
            let mut samples = Vec::with_capacity(n);
            let before = alloc::snapshot();
            let start = Instant::now();
            for i in 0..n as i64 {
                let t = Instant::now();
                let sum = inner.client.add(i, 1).await;
                samples.push(t.elapsed());
                assert_eq!(sum, i + 1);
            }
            let elapsed = start.elapsed();
            let after = alloc::snapshot();
            samples.sort_unstable();
            Sequential {
                p50: samples[n / 2],
                p99: samples[(n * 99 / 100).min(n - 1)],
                per_sec: n as f64 / elapsed.as_secs_f64(),
                allocs_per_call: (after.allocs - before.allocs) as f64 / n as f64,
                bytes_per_call: (after.allocated - before.allocated) as f64 / n as f64,
                modes: Modes::of(&samples),
            }
        })
    }

    fn in_flight(&self, rt: &Runtime, n: usize, width: usize) -> f64 {
        self.run(rt, |inner, _| async move {
            let start = Instant::now();
            let mut inflight = FuturesUnordered::new();
            let mut sent = 0i64;
            let n = n as i64;
            let client = &inner.client;
            let call = |i: i64| async move { (i, client.add(i, 1).await) };
            while sent < (width as i64).min(n) {
                inflight.push(call(sent));
                sent += 1;
            }
            while let Some((i, sum)) = inflight.next().await {
                assert_eq!(sum, i + 1);
                if sent < n {
                    inflight.push(call(sent));
                    sent += 1;
                }
            }
            n as f64 / start.elapsed().as_secs_f64()
        })
    }

    fn notifications(&self, rt: &Runtime, n: usize) -> f64 {
        self.run(rt, |inner, name| async move {
            inner.tally.arm(n as u64);
            let start = Instant::now();
            for i in 0..n as u64 {
                inner.client.tick(i).await;
            }
            tokio::time::timeout(Duration::from_secs(120), inner.tally.wait())
                .await
                .unwrap_or_else(|_| panic!("{name}: notifications not all handled"));
            n as f64 / start.elapsed().as_secs_f64()
        })
    }

    fn echo(&self, rt: &Runtime, payload: Arc<str>, n: usize) -> f64 {
        self.run(rt, |inner, _| async move {
            let start = Instant::now();
            for _ in 0..n {
                assert_eq!(inner.client.echo(&payload).await, payload.len());
            }
            (2 * payload.len() * n) as f64 / 1e6 / start.elapsed().as_secs_f64()
        })
    }

    fn stream(&self, rt: &Runtime, n: u64) -> Option<f64> {
        if !C::Client::STREAMS {
            return None;
        }
        self.run(rt, |inner, name| async move {
            let start = Instant::now();
            let got = inner.client.stream(n).await;
            assert_eq!(got, n, "{name}: stream items");
            Some(n as f64 / start.elapsed().as_secs_f64())
        })
    }

    fn idle(&self, rt: &Runtime, n: usize) -> f64 {
        self.run(rt, |inner, _| async move {
            let mut pairs = Vec::with_capacity(n);
            tokio::time::sleep(Duration::from_millis(50)).await;
            let before = alloc::snapshot().live_bytes;
            for i in 0..n as i64 {
                let (client, guard) = inner.contender.open().await;
                assert_eq!(client.add(i, 1).await, i + 1);
                pairs.push((client, guard));
            }
            // Let every task settle into its idle state.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let after = alloc::snapshot().live_bytes;
            drop(pairs);
            tokio::time::sleep(Duration::from_millis(300)).await;
            (after - before) as f64 / n as f64
        })
    }
}

/// Median of a sample (NaN-free).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A confidence interval of at least 95% for the median of a sample, free of any assumption on
/// its distribution: the `k`-th smallest and the `k`-th largest values, `k` the largest rank with
/// P(Binomial(n, ½) < k) ≤ 2.5% (the chance that fewer than `k` values fall below the median, or
/// above it). `None` under six values, where no rank qualifies. Of 15 values, the 4th and the
/// 12th (96.5%); of the 40 pairs of loads the `connections` bench runs by default, the 14th and
/// the 27th; of 60, the 22nd and the 39th.
pub fn median_interval(mut v: Vec<f64>) -> Option<(f64, f64)> {
    let n = v.len();
    // ln C(n, i) - n ln 2, summed up term by term, in logs (no underflow at large n).
    let mut ln_term = -(n as f64) * std::f64::consts::LN_2;
    let mut below = 0.0;
    let mut k = 0;
    for i in 0..n {
        below += ln_term.exp();
        if below > 0.025 {
            break;
        }
        // P(B <= i) <= 2.5%: rank i + 1 qualifies.
        k = i + 1;
        ln_term += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    if k == 0 {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some((v[k - 1], v[n - k]))
}

/// A 1 MiB-ish ASCII payload with nothing to escape.
pub fn payload(len: usize) -> String {
    (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_takes_the_ranks_of_the_binomial_tails() {
        let sample = |n: usize| (1..=n).rev().map(|i| i as f64).collect::<Vec<_>>();
        // P(B(5, ½) = 0) = 1/32 > 2.5%: no interval.
        assert_eq!(median_interval(sample(5)), None);
        // P(B(6, ½) = 0) = 1/64: the extremes.
        assert_eq!(median_interval(sample(6)), Some((1.0, 6.0)));
        // P(B(15, ½) <= 3) = 1.76%, P(<= 4) = 5.9%: the 4th and the 12th.
        assert_eq!(median_interval(sample(15)), Some((4.0, 12.0)));
        // P(B(40, ½) <= 13) = 1.92%, P(<= 14) = 4.0%: the 14th and the 27th.
        assert_eq!(median_interval(sample(40)), Some((14.0, 27.0)));
        // P(B(60, ½) <= 21) = 1.36%, P(<= 22) = 2.6%: the 22nd and the 39th.
        assert_eq!(median_interval(sample(60)), Some((22.0, 39.0)));
    }

    #[test]
    fn calls_over_twice_the_tenth_percentile_are_the_slow_mode() {
        let us = Duration::from_micros;
        // Tenth percentile 1 µs: the line is at 2 µs, which is still fast.
        let mut times = vec![us(1); 6];
        times.extend([us(2), us(5), us(7), us(9)]);
        let modes = Modes::of(&times);
        assert_eq!(modes.slow_share, 0.3);
        assert_eq!(modes.fast_mean, Duration::from_nanos(8_000 / 7));
        assert_eq!(modes.slow_mean, us(7));
        let steady = Modes::of(&[us(3); 4]);
        assert_eq!((steady.slow_share, steady.fast_mean, steady.slow_mean), (0.0, us(3), Duration::ZERO));
    }
}
