//! What many simultaneous TCP connections cost, and the calls/s they sustain, on loopback.
//!
//! The process is the server; it re-runs itself as the client process (`--client`), so that each
//! side's memory is measured alone (VmRSS from /proc/self/status, before and after the
//! connections are open, and after the load). Then every connection makes calls one at a time,
//! all connections at once.
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench connections` (env `CONNECTIONS`, default 1000;
//! `CALLS`, calls per connection, default 100; `BENCH_QUICK=1`: a hundredth of both). Fewer connections are used if the open-files
//! limit (`ulimit -n`) does not allow that many.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::future::join_all;
use jsonrpc_duplex::server::Server;
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{Connection, ErrorObject, Router};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn open_files_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| if n == "unlimited" { Some(u64::MAX) } else { n.parse().ok() })
        .unwrap_or(1024)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--client") {
        let addr = args[i + 1].clone();
        let n: usize = args[i + 2].parse().expect("connections");
        let calls: i64 = args[i + 3].parse().expect("calls");
        return client(&addr, n, calls);
    }
    if args.iter().any(|a| a == "--bench" || a == "--test") && args.iter().any(|a| a == "--list") {
        return;
    }

    let limit = open_files_limit();
    let wanted = env_usize("CONNECTIONS", jsonrpc_duplex_benches::sized(1000));
    let n = wanted.min(limit.saturating_sub(64) as usize);
    if n < wanted {
        println!("note: open-files limit {limit}: {n} connections instead of {wanted}");
    }
    let calls = env_usize("CALLS", jsonrpc_duplex_benches::sized(100));

    let rt = runtime();
    let rss_start = rss_kib();
    let server = rt.block_on(async {
        let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
        Server::builder().max_connections(n + 16).serve(router).bind_tcp("127.0.0.1:0").await.expect("bind")
    });
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).expect("a TCP address");
    let rss_idle = rss_kib();

    let mut child = Command::new(std::env::current_exe().expect("this binary"))
        .args(["--client", &addr.to_string(), &n.to_string(), &calls.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the client process");
    let mut to_child = child.stdin.take().expect("stdin");
    let mut from_child = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut line = || from_child.next().expect("a line from the client").expect("read");

    let connected = line();
    let rss_connected = rss_kib();
    assert_eq!(server.stats().active, n, "all connected: {connected}");
    writeln!(to_child, "go").expect("tell the client");
    let result = line();
    let rss_loaded = rss_kib();
    drop(to_child);
    let _ = child.wait();

    let per = |a: u64, b: u64| (a.saturating_sub(b)) as f64 / n as f64;
    println!("{n} TCP connections on loopback (2 worker threads each side)");
    println!("  server: RSS {rss_start} KiB at start, {rss_idle} KiB listening");
    println!(
        "  server: +{} KiB with {n} idle connections = {:.1} KiB per connection; {:.1} KiB per connection after the load",
        rss_connected.saturating_sub(rss_idle),
        per(rss_connected, rss_idle),
        per(rss_loaded, rss_idle),
    );
    println!("  {connected}");
    println!("  {result}");
    let report = rt.block_on(server.shutdown(Duration::from_secs(5)));
    let stats = report.stats;
    println!("  server: {} accepted, {} refused, {} closed", stats.accepted, stats.refused, stats.closed);
}

/// The client process: open `n` connections, say so, wait for "go", then every connection makes
/// `calls` calls one at a time, all connections at once.
fn client(addr: &str, n: usize, calls: i64) {
    let rt = runtime();
    let rss_idle = rss_kib();
    let start = Instant::now();
    let conns: Vec<Connection> = rt.block_on(async {
        let connects = (0..n).map(|_| async {
            let conn = Connection::builder().connect_tcp(addr).await.expect("connect");
            let _: i64 = conn.handle().request("add", (1, 1)).await.expect("first call");
            conn
        });
        join_all(connects).await
    });
    let connect_time = start.elapsed();
    let rss_connected = rss_kib();
    println!(
        "client: {n} connected (and one call each) in {connect_time:?}; +{} KiB = {:.1} KiB per connection",
        rss_connected.saturating_sub(rss_idle),
        (rss_connected.saturating_sub(rss_idle)) as f64 / n as f64
    );
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).expect("wait for go");

    let elapsed = rt.block_on(async {
        let start = Instant::now();
        let work = conns.iter().enumerate().map(|(i, conn)| async move {
            for k in 0..calls {
                let r: i64 = conn.handle().request("add", (i as i64, k)).await.expect("call");
                assert_eq!(r, i as i64 + k);
            }
        });
        join_all(work).await;
        start.elapsed()
    });
    let total = n as u64 * calls as u64;
    println!(
        "calls: {total} ({n} connections x {calls}, each connection one call at a time, all at once) in {elapsed:.2?} = {:.0} calls/s; client RSS after: {} KiB",
        total as f64 / elapsed.as_secs_f64(),
        rss_kib()
    );
    std::io::stdout().flush().expect("flush");
    let mut rest = String::new();
    let _ = std::io::stdin().read_line(&mut rest);
    drop(conns);
}
