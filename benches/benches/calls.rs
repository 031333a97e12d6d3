//! Calls per second over an in-memory pair through the raw core API:
//! A: one call at a time; B: 64 calls in flight; C: one-way notifications until all are handled.
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench calls`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures::stream::{FuturesUnordered, StreamExt};
use jsonrpc_duplex::{Connection, ErrorObject, Router, transport::memory};
use jsonrpc_duplex_benches::{median_of, per_sec};
use tokio::sync::Notify;

const REPS: usize = 5;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let seen = Arc::new(AtomicUsize::new(0));
    let all_seen = Arc::new(Notify::new());
    let (client, _server) = rt.block_on(async {
        let (seen, all_seen) = (seen.clone(), all_seen.clone());
        let router = Router::new()
            .method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
            .notification("tick", move |(n,): (u64,), _| {
                let (seen, all_seen) = (seen.clone(), all_seen.clone());
                async move {
                    if seen.fetch_add(1, Ordering::Relaxed) + 1 == n as usize {
                        all_seen.notify_one();
                    }
                }
            });
        memory::pair(Connection::builder(), Connection::builder().serve(router))
    });
    let handle = client.handle();

    let n = 20_000;
    let a = median_of(REPS, || {
        rt.block_on(async {
            let start = Instant::now();
            for i in 0..n {
                let r: i64 = handle.request("add", (i, 1)).await.expect("call");
                assert_eq!(r, i + 1);
            }
            start.elapsed()
        })
    });
    println!("A sequential calls          {:>10.0} calls/s  ({:.2} µs per call)", per_sec(n as usize, a), a.as_secs_f64() * 1e6 / n as f64);

    let n = 64_000;
    let b = median_of(REPS, || {
        rt.block_on(async {
            let start = Instant::now();
            let mut inflight = FuturesUnordered::new();
            let mut sent = 0i64;
            while sent < 64 {
                inflight.push(handle.request::<i64>("add", (sent, 1)));
                sent += 1;
            }
            while let Some(r) = inflight.next().await {
                r.expect("call");
                if sent < n {
                    inflight.push(handle.request::<i64>("add", (sent, 1)));
                    sent += 1;
                }
            }
            start.elapsed()
        })
    });
    println!("B 64 calls in flight        {:>10.0} calls/s", per_sec(n as usize, b));

    let n = 100_000usize;
    let c = median_of(REPS, || {
        rt.block_on(async {
            seen.store(0, Ordering::Relaxed);
            let done = all_seen.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            let start = Instant::now();
            for _ in 0..n {
                handle.notify("tick", [n as u64]).await.expect("notify");
            }
            done.await;
            start.elapsed()
        })
    });
    println!("C notifications             {:>10.0} msgs/s", per_sec(n, c));
}
