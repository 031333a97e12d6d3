//! 10,000 calls at once in each direction between two of our connections, with random
//! cancellations (a token fired at a random moment), timeouts (calls to a method that never
//! answers by itself) and dropped calls, while both sides also stream numbered notifications
//! (then a barrier call: its answer comes after every notification before it was handled).
//!
//! Every call ends exactly once with the right result or the right error, every handler that
//! started ends, no notification is lost or reordered, and once both connections are closed no
//! task of theirs is left on the (dedicated) runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use jsonrpc_duplex::{CallOptions, CancellationToken, Connection, Error, ErrorObject, Handle, RequestContext, Router};

const CALLS: usize = 10_000;
const NOTIFICATIONS: i64 = 2_000;
const WAIT: Duration = Duration::from_secs(120);
const TIMEOUT: Duration = Duration::from_millis(50);

/// A tiny deterministic generator (xorshift64*): the same "random" run every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Counts handlers that started and that ended (finished, failed or were dropped on cancel).
#[derive(Default)]
struct Handlers {
    started: AtomicUsize,
    ended: AtomicUsize,
}

struct Running(Arc<Handlers>);

impl Running {
    fn start(h: &Arc<Handlers>) -> Self {
        h.started.fetch_add(1, Ordering::SeqCst);
        Running(h.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
    }
}

/// What each side serves: `add` (after a few yields, so that cancellations land mid-handler),
/// `hang` (answers only when cancelled) and the numbered notification `seq`.
fn service(handlers: Arc<Handlers>, last_seq: Arc<AtomicI64>) -> Router {
    let h1 = handlers.clone();
    Router::new()
        .method("add", move |(a, b, yields): (i64, i64, u32), _cx: RequestContext| {
            let running = Running::start(&h1);
            async move {
                let _running = running;
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
                Ok::<_, ErrorObject>(a + b)
            }
        })
        .method("hang", move |(): (), cx: RequestContext| {
            let running = Running::start(&handlers);
            async move {
                let _running = running;
                cx.cancellation().cancelled().await;
                Err::<(), _>(ErrorObject::new(jsonrpc_duplex::codes::REQUEST_CANCELLED, "cancelled"))
            }
        })
        // Answered after every message before it is dispatched: notifications run to completion
        // in arrival order, so its answer means every earlier notification has been handled.
        .method("barrier", |(): (), _cx: RequestContext| async { Ok::<_, ErrorObject>(()) })
        .notification("seq", move |(n,): (i64,), _cx| {
            let previous = last_seq.swap(n, Ordering::SeqCst);
            assert_eq!(previous + 1, n, "notification {n} arrived after {previous}");
            async {}
        })
}

#[derive(Debug, Default)]
struct Tally {
    ok: usize,
    cancelled: usize,
    timed_out: usize,
    dropped: usize,
}

/// One call, chosen by `rng`; panics unless it ends with an outcome its kind allows.
async fn one_call(h: Handle, i: i64, kind: u64, yields: u32, cancel_after: u32) -> &'static str {
    match kind {
        // A plain call: exactly the sum.
        0..70 => {
            let sum: i64 = h.request("add", (i, 1, yields)).await.unwrap_or_else(|e| panic!("call {i}: {e}"));
            assert_eq!(sum, i + 1);
            "ok"
        }
        // Cancelled at a random moment: the sum if the answer won, else `Cancelled`.
        70..85 => {
            let token = CancellationToken::new();
            let firing = token.clone();
            tokio::spawn(async move {
                for _ in 0..cancel_after {
                    tokio::task::yield_now().await;
                }
                firing.cancel();
            });
            let options = CallOptions::new().cancel(token);
            match h.request_with::<i64>("add", (i, 1, yields), options).await {
                Ok(sum) => {
                    assert_eq!(sum, i + 1);
                    "ok"
                }
                Err(Error::Cancelled) => "cancelled",
                Err(e) => panic!("cancelled call {i}: {e}"),
            }
        }
        // A call nobody answers until it is cancelled: it times out.
        85..95 => {
            let options = CallOptions::new().timeout(TIMEOUT);
            match h.request_with::<()>("hang", (), options).await {
                Err(Error::Timeout(t)) => {
                    assert_eq!(t, TIMEOUT);
                    "timed out"
                }
                other => panic!("hanging call {i}: {other:?}"),
            }
        }
        // The caller stops waiting after a few yields (the future is dropped).
        _ => {
            let call = h.request::<i64>("add", (i, 1, yields));
            let give_up = async {
                for _ in 0..cancel_after {
                    tokio::task::yield_now().await;
                }
            };
            tokio::select! {
                sum = call => {
                    assert_eq!(sum.unwrap_or_else(|e| panic!("call {i}: {e}")), i + 1);
                    "ok"
                }
                () = give_up => "dropped",
            }
        }
    }
}

/// 10,000 concurrent calls from `h`, plus the numbered notifications in between.
async fn load(h: Handle, seed: u64) -> Tally {
    let mut rng = Rng(seed);
    let mut calls = FuturesUnordered::new();
    for i in 0..CALLS as i64 {
        let kind = rng.below(100);
        let yields = rng.below(4) as u32;
        let cancel_after = rng.below(8) as u32;
        calls.push(tokio::spawn(one_call(h.clone(), i, kind, yields, cancel_after)));
    }
    let notifier = {
        let h = h.clone();
        tokio::spawn(async move {
            for n in 1..=NOTIFICATIONS {
                h.notify("seq", (n,)).await.expect("notify");
                if n % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let mut tally = Tally::default();
    let mut ended = 0;
    while let Some(outcome) = calls.next().await {
        ended += 1;
        match outcome.expect("a call panicked") {
            "ok" => tally.ok += 1,
            "cancelled" => tally.cancelled += 1,
            "timed out" => tally.timed_out += 1,
            "dropped" => tally.dropped += 1,
            other => unreachable!("{other}"),
        }
    }
    assert_eq!(ended, CALLS, "every call ends exactly once");
    notifier.await.expect("the notifier");
    h.request::<()>("barrier", ()).await.expect("the barrier call");
    tally
}

/// Wait (bounded) until `f` holds, checking after each short pause.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "{what} did not happen within {WAIT:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn ten_thousand_calls_each_way_with_cancellations_and_timeouts_all_end_once_and_leak_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let metrics = rt.metrics();
    let baseline = metrics.num_alive_tasks();

    let (handlers_a, handlers_b) = (Arc::new(Handlers::default()), Arc::new(Handlers::default()));
    let (seq_a, seq_b) = (Arc::new(AtomicI64::new(0)), Arc::new(AtomicI64::new(0)));
    let (tally_a, tally_b) = rt.block_on(async {
        let (x, y) = tokio::io::duplex(64 * 1024);
        let a = Connection::builder().serve(service(handlers_a.clone(), seq_a.clone())).connect_io(x);
        let b = Connection::builder().serve(service(handlers_b.clone(), seq_b.clone())).connect_io(y);
        let both =
            futures::future::join(load(a.handle(), 0x9e37_79b9_7f4a_7c15), load(b.handle(), 0xd1b5_4a32_d192_ed03));
        let tallies = tokio::time::timeout(WAIT, both).await.expect("all calls end within the wait");
        // Each side's notifications were all handled before its barrier call was answered.
        assert_eq!(seq_a.load(Ordering::SeqCst), NOTIFICATIONS, "a lost notifications");
        assert_eq!(seq_b.load(Ordering::SeqCst), NOTIFICATIONS, "b lost notifications");
        tokio::time::timeout(WAIT, a.close()).await.expect("a closes");
        tokio::time::timeout(WAIT, b.close()).await.expect("b closes");
        tallies
    });
    for (side, tally) in [("a", &tally_a), ("b", &tally_b)] {
        eprintln!("{side}: {tally:?}");
        assert_eq!(tally.ok + tally.cancelled + tally.timed_out + tally.dropped, CALLS, "{side}: {tally:?}");
        // The mix really happened (the generator is fixed, so these are not luck).
        assert!(tally.timed_out > 500 && tally.ok > 5000, "{side}: {tally:?}");
    }
    for (side, h) in [("a", &handlers_a), ("b", &handlers_b)] {
        eventually(&format!("every handler on {side} ending"), || {
            h.started.load(Ordering::SeqCst) == h.ended.load(Ordering::SeqCst)
        });
    }
    eventually("the connections' tasks ending", || metrics.num_alive_tasks() <= baseline);
    drop(rt);
}
