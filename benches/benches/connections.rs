//! What many simultaneous TCP connections cost a server, and the calls/s they sustain, on
//! loopback: ours (`Server`) against a hand-written server (one task per connection that reads,
//! handles and writes, over an 8 KiB reused buffer: `benches/src/handwritten.rs`), in the same run.
//!
//! Three processes per server: this one (the orchestrator, which prints the table) runs each
//! server in a process of its own (`--serve ours|handwritten`), and each server process runs its
//! clients in another (`--client`, our `Connection` for both servers), so that the server's RSS
//! (VmRSS from /proc/self/status) counts nothing else and each side has the whole open-files limit.
//! For each server, in order:
//!
//! 1. **Open/close rounds**: `ROUNDS` times (default 10), open `ROUND_CONNECTIONS` connections
//!    (default 1,000; one call each), close them all, and wait until the server counts none: its
//!    RSS above the listening server's after each round.
//! 2. **Idle connections**: open connections up to each count of `CONNECTIONS` (default
//!    `1000,10000,max`, `max` being the open-files limit less 64), one call each: the server's RSS
//!    above the listening server's, per connection. At the largest count every connection makes
//!    one more call (all still answer).
//! 3. **Load**: on the first `LOAD_CONNECTIONS` connections (default 1,000), 8 calls in flight on
//!    each (`IN_FLIGHT`), `CALLS` calls per connection (default 200): calls/s (wall clock: noisy on
//!    a loaded machine) and the server's CPU time per call (the on-CPU nanoseconds of all its
//!    threads, from /proc/self/task/*/schedstat).
//!
//! Then the load alone, `LOAD_REPEATS` more times per server (default 40), each in a server
//! process of its own with only the loaded connections open, the two servers alternating: the
//! table gives each server's median beside the single load above, and as their ratio the median
//! of the ratios of the pairs of loads run back to back, with its 95% interval.
//!
//! Our server serves `add` as a `Router::method`; `SERVE_API=rpc` serves it through an `#[rpc]`
//! trait instead, as its users write it (the same wire method and params).
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench connections`; `BENCH_QUICK=1` runs a hundredth
//! of the sizes (figures meaningless).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use jsonrpc_duplex::server::Server;
use jsonrpc_duplex::transport::PeerAddr;
use jsonrpc_duplex::{Connection, ErrorObject, Framing, Router, RpcError, rpc};
use jsonrpc_duplex_benches::harness::{Io, Tally};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Nanoseconds on CPU of all this process's threads so far.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// This process's user and system CPU time so far, in clock ticks (`/proc/self/stat`).
fn user_sys_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = rest.split_whitespace().skip(11).take(2).filter_map(|f| f.parse().ok()).collect();
    match fields[..] {
        [user, sys] => (user, sys),
        _ => (0, 0),
    }
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

/// The most connections one process may hold (its open-files limit, less some for the rest).
fn max_connections() -> usize {
    open_files_limit().saturating_sub(64).min(1_000_000) as usize
}

/// The idle counts to measure, ascending.
fn counts() -> Vec<usize> {
    let max = max_connections();
    let spec = std::env::var("CONNECTIONS").unwrap_or_else(|_| "1000,10000,max".into());
    let mut counts: Vec<usize> = spec
        .split(',')
        .filter_map(|c| if c.trim() == "max" { Some(max) } else { c.trim().parse().ok() })
        .map(|c| jsonrpc_duplex_benches::sized(c).min(max))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--client") {
        return client(&args[i + 1]);
    }
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        return serve(&args[i + 1]);
    }
    if args.iter().any(|a| a == "--bench" || a == "--test") && args.iter().any(|a| a == "--list") {
        return;
    }
    let results = ["ours", "handwritten"].map(|kind| serve_process(kind, &[], true));
    let loads = repeated_loads();
    table(&results[0], &results[1], &loads);
}

/// Run one server process with `env` set: its figures (its output printed if `echo`).
fn serve_process(kind: &str, env: &[(&str, String)], echo: bool) -> Figures {
    let out = Command::new(std::env::current_exe().expect("this binary"))
        .args(["--serve", kind])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stderr(Stdio::inherit())
        .output()
        .expect("the server process");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if echo {
        print!("{text}");
    }
    assert!(out.status.success(), "the {kind} server process failed: {text}");
    Figures::parse(&text)
}

/// The load alone, `LOAD_REPEATS` more times per server (default 40), the two servers' processes
/// alternating (each round starting with the other one): one load's CPU per call swings between
/// runs of the same build on two cores shared with the client process (3.95–6.83 µs in one
/// run's five loads of the hand-written server), more than the difference being measured: the
/// median of five moved the ratio between 0.94 and 1.18 from run to run, and the median of
/// fifteen still between 0.93 and 1.06 in four runs of one source. Forty, with the interval
/// their ranks give the median ([`median_interval`](jsonrpc_duplex_benches::harness::median_interval):
/// the 14th to the 27th of 40), say whether a ratio is under 1.0 or only near it. Per server:
/// [calls/s, CPU µs per call, of it in user space, in the kernel] of each run.
fn repeated_loads() -> [Vec<[f64; 4]>; 2] {
    let repeats = env_usize("LOAD_REPEATS", if jsonrpc_duplex_benches::quick() { 1 } else { 40 });
    let load = jsonrpc_duplex_benches::sized(env_usize("LOAD_CONNECTIONS", 1000));
    let env = [("CONNECTIONS", load.to_string()), ("ROUNDS", "0".to_owned())];
    let mut runs = [Vec::new(), Vec::new()];
    for r in 0..repeats {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let kind = ["ours", "handwritten"][i];
            let figures = serve_process(kind, &env, false);
            let figure =
                |name| figures.get(name).unwrap_or_else(|| panic!("the {kind} server's load reported no {name}"));
            let (per_s, cpu) = (figure("calls_per_s"), figure("cpu_us_per_call"));
            let (user, sys) = (figure("user_us_per_call"), figure("sys_us_per_call"));
            println!(
                "load run {}: {kind}: {per_s:.0} calls/s, server CPU {cpu:.2} µs per call (user {user:.2}, system {sys:.2})",
                r + 1
            );
            runs[i].push([per_s, cpu, user, sys]);
        }
    }
    runs
}

/// What one server process reported (its `figure NAME VALUE` lines).
#[derive(Default)]
struct Figures(Vec<(String, f64)>);

impl Figures {
    fn parse(text: &str) -> Self {
        Figures(
            text.lines()
                .filter_map(|l| l.strip_prefix("figure "))
                .filter_map(|l| {
                    let (name, value) = l.rsplit_once(' ')?;
                    Some((name.to_owned(), value.parse().ok()?))
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

fn table(ours: &Figures, hand: &Figures, loads: &[Vec<[f64; 4]>; 2]) {
    println!("\n{} (each server's process and its clients' share them)\n", jsonrpc_duplex_benches::machine());
    println!("| server, TCP on loopback | ours `Server` | hand-written | ours ÷ hand-written |");
    println!("|---|---:|---:|---:|");
    let row = |label: String, name: &str, unit: &str, digits: usize| {
        if let (Some(a), Some(b)) = (ours.get(name), hand.get(name)) {
            println!("| {label} | {a:.digits$} {unit} | {b:.digits$} {unit} | {:.2} |", a / b);
        }
    };
    for n in counts() {
        row(format!("RSS per idle connection, {n} connections"), &format!("idle_kib_per_conn {n}"), "KiB", 1);
    }
    let rounds = env_usize("ROUNDS", 10);
    for r in [1, rounds / 2, rounds] {
        row(format!("RSS above listening after open/close round {r}"), &format!("round_kib {r}"), "KiB", 0);
    }
    row("calls/s, 8 in flight × 1,000 connections (noisy)".into(), "calls_per_s", "", 0);
    row("server CPU per call".into(), "cpu_us_per_call", "µs", 2);
    let n = loads[0].len().min(loads[1].len());
    if n > 0 {
        let median = |runs: &[[f64; 4]], at: usize| {
            jsonrpc_duplex_benches::harness::median(runs.iter().map(|r| r[at]).collect())
        };
        let rows = [
            (0, "calls/s", "", 0),
            (1, "server CPU per call", " µs", 2),
            (2, "server CPU per call in user space", " µs", 2),
            (3, "server CPU per call in the kernel", " µs", 2),
        ];
        for (at, label, unit, digits) in rows {
            let (a, b) = (median(&loads[0], at), median(&loads[1], at));
            // The ratio of each pair of loads run back to back, then their median: what moved
            // both loads of a pair (the machine's own load, the kernel's share of the time) cancels
            // in the pair, while a ratio of the two medians keeps it (see `repeated_loads`).
            // With the interval its rank statistics give it (at least 95%): a ratio is under 1.0
            // only when all of its interval is.
            let ratios: Vec<f64> = loads[0].iter().zip(&loads[1]).map(|(o, h)| o[at] / h[at]).collect();
            let interval = jsonrpc_duplex_benches::harness::median_interval(ratios.clone())
                .map_or_else(String::new, |(lo, hi)| format!(" ({lo:.2}–{hi:.2})"));
            println!(
                "| {label}, the same load, median of {n} alternate runs (ratio: median of the {n} pairs' ratios, \
                 and its 95% interval) | {a:.digits$}{unit} | {b:.digits$}{unit} | {:.2}{interval} |",
                jsonrpc_duplex_benches::harness::median(ratios)
            );
        }
    }
    if let (Some(slope), Some(base)) = (ours.get("slope_kib_per_conn"), ours.get("listening_kib")) {
        println!(
            "ours, 100,000 connections projected: {:.0} MiB (the listening server's {:.0} MiB + 100,000 × the {slope:.2} KiB \
             per connection added between the smallest and the largest count)",
            (base + 100_000.0 * slope) / 1024.0,
            base / 1024.0
        );
    }
}

/// A server under test: where it listens and how many connections it counts.
struct Served {
    addr: String,
    active: Box<dyn Fn() -> usize>,
}

/// The `add` method as a user of `#[rpc]` writes it (`SERVE_API=rpc`).
#[rpc]
pub trait Adder {
    /// The sum of two numbers.
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError>;
}

struct Sums;

impl Adder for Sums {
    async fn add(&self, a: i64, b: i64) -> Result<i64, RpcError> {
        Ok(a + b)
    }
}

/// Our `Server` (the `add` method: a `Router::method`, or `#[rpc]` with `SERVE_API=rpc`).
fn start_ours(rt: &tokio::runtime::Runtime) -> (Served, Server) {
    let server = rt.block_on(async {
        let router = if std::env::var("SERVE_API").is_ok_and(|v| v == "rpc") {
            AdderServer::new(Sums).into_router()
        } else {
            Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) })
        };
        Server::builder()
            .max_connections(max_connections() + 16)
            .serve(router)
            .bind_tcp("127.0.0.1:0")
            .await
            .expect("bind")
    });
    let addr = server.local_addr().and_then(PeerAddr::socket_addr).expect("a TCP address").to_string();
    let stats = server.handle();
    (Served { addr, active: Box::new(move || stats.stats().active) }, server)
}

/// The hand-written server: one task per connection (`handwritten::serve`, Content-Length).
fn start_handwritten(rt: &tokio::runtime::Runtime) -> Served {
    let active = Arc::new(AtomicUsize::new(0));
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    let counted = active.clone();
    rt.spawn(async move {
        let tally = Tally::new();
        while let Ok((socket, _)) = listener.accept().await {
            socket.set_nodelay(true).expect("nodelay");
            counted.fetch_add(1, Ordering::SeqCst);
            let (tally, counted) = (tally.clone(), counted.clone());
            tokio::spawn(async move {
                jsonrpc_duplex_benches::handwritten::serve(Io::Tcp(socket), Framing::ContentLength, tally).await;
                counted.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Served { addr, active: Box::new(move || active.load(Ordering::SeqCst)) }
}

/// The client process, driven by lines on its stdin; it answers each with a line.
struct Clients {
    child: Child,
    to: ChildStdin,
    from: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Clients {
    fn start(addr: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().expect("this binary"))
            .args(["--client", addr])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the client process");
        let to = child.stdin.take().expect("stdin");
        let from = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Clients { child, to, from }
    }

    fn ask(&mut self, command: &str) -> String {
        writeln!(self.to, "{command}").expect("tell the client");
        self.from.next().expect("an answer from the client").expect("read")
    }
}

/// Wait (bounded) until the server counts `n` connections.
fn wait_active(served: &Served, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while (served.active)() != n {
        assert!(Instant::now() < deadline, "the server counts {} connections, not {n}", (served.active)());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One server process: start the server, its client process, and report `figure` lines.
fn serve(kind: &str) {
    let rt = runtime();
    let (served, ours) = match kind {
        "ours" => {
            let (served, server) = start_ours(&rt);
            (served, Some(server))
        }
        _ => (start_handwritten(&rt), None),
    };
    let name = if ours.is_some() { "ours" } else { "hand-written" };
    let listening = rss_kib();
    println!("{name}: RSS {listening} KiB listening");
    println!("figure listening_kib {listening}");
    let mut clients = Clients::start(&served.addr);

    let rounds = env_usize("ROUNDS", 10);
    let round_size = jsonrpc_duplex_benches::sized(env_usize("ROUND_CONNECTIONS", 1000)).min(max_connections());
    for r in 1..=rounds {
        clients.ask(&format!("open {round_size}"));
        wait_active(&served, round_size);
        let open = rss_kib();
        clients.ask("close");
        wait_active(&served, 0);
        let closed = rss_kib();
        println!(
            "{name}: round {r}: {round_size} opened: +{} KiB, all closed: +{} KiB",
            open.saturating_sub(listening),
            closed.saturating_sub(listening)
        );
        println!("figure round_kib {r} {}", closed.saturating_sub(listening));
    }

    let counts = counts();
    let mut first: Option<(usize, u64)> = None;
    let mut last = (0, 0);
    for &n in &counts {
        let answer = clients.ask(&format!("open {n}"));
        wait_active(&served, n);
        let rss = rss_kib();
        let above = rss.saturating_sub(listening);
        println!(
            "{name}: {n} idle connections: +{above} KiB = {:.2} KiB per connection ({answer})",
            above as f64 / n as f64
        );
        println!("figure idle_kib_per_conn {n} {:.3}", above as f64 / n as f64);
        first.get_or_insert((n, rss));
        last = (n, rss);
    }
    if let Some((n0, rss0)) = first
        && last.0 > n0
    {
        let slope = (last.1 as f64 - rss0 as f64) / (last.0 - n0) as f64;
        println!("{name}: {slope:.2} KiB per connection added from {n0} to {}", last.0);
        println!("figure slope_kib_per_conn {slope:.3}");
    }
    println!("{name}: {}", clients.ask("check"));

    let load = jsonrpc_duplex_benches::sized(env_usize("LOAD_CONNECTIONS", 1000));
    let in_flight = env_usize("IN_FLIGHT", 8);
    let calls = jsonrpc_duplex_benches::sized(env_usize("CALLS", 200)).max(in_flight);
    let cpu = cpu_ns();
    let ticks = user_sys_ticks();
    let answer = clients.ask(&format!("load {load} {calls} {in_flight}"));
    let cpu = cpu_ns() - cpu;
    let ticks_after = user_sys_ticks();
    let (total, per_s) = answer.split_once(' ').expect("load's answer");
    let total: f64 = total.parse().expect("calls");
    println!(
        "{name}: {total} calls ({load} connections × {calls}, {in_flight} in flight each): {per_s} calls/s (noisy), \
         server CPU {:.2} µs per call",
        cpu as f64 / 1000.0 / total
    );
    println!("figure calls_per_s {per_s}");
    println!("figure cpu_us_per_call {:.4}", cpu as f64 / 1000.0 / total);
    // Clock ticks of `/proc` are 10 ms (USER_HZ is 100 on Linux): the split is coarse on one
    // short load, and read as the median of the repeated loads.
    let tick_us = 10_000.0;
    println!("figure user_us_per_call {:.4}", (ticks_after.0 - ticks.0) as f64 * tick_us / total);
    println!("figure sys_us_per_call {:.4}", (ticks_after.1 - ticks.1) as f64 * tick_us / total);

    clients.ask("close");
    wait_active(&served, 0);
    println!("{name}: all closed: +{} KiB", rss_kib().saturating_sub(listening));
    drop(clients.to);
    let _ = clients.child.wait();
    if let Some(server) = ours {
        rt.block_on(server.shutdown(Duration::from_secs(5)));
    }
}

/// The client process: connections to `addr`, driven by commands on stdin (`open N`: open up
/// to N in all, one call each; `check`: one more call on each; `load CONNS CALLS IN_FLIGHT`;
/// `close`: close them all). Each command is answered with one line.
fn client(addr: &str) {
    let rt = runtime();
    let mut conns: Vec<Connection> = Vec::new();
    for line in std::io::stdin().lines() {
        let line = line.expect("a command");
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["open", n] => {
                let n: usize = n.parse().expect("a count");
                let start = Instant::now();
                let more = n.saturating_sub(conns.len());
                let opened: Vec<Connection> = rt.block_on(
                    futures::stream::iter(0..more)
                        .map(|_| async {
                            let conn = Connection::builder().connect_tcp(addr).await.expect("connect");
                            let _: i64 = conn.handle().request("add", (1, 1)).await.expect("first call");
                            conn
                        })
                        .buffer_unordered(256)
                        .collect(),
                );
                conns.extend(opened);
                format!("{} open, {more} opened (one call each) in {:.2?}", conns.len(), start.elapsed())
            }
            ["check"] => {
                let answered = rt.block_on(
                    futures::stream::iter(conns.iter().enumerate())
                        .map(|(i, c)| async move {
                            let r: i64 = c.handle().request("add", (i as i64, 1)).await.expect("a call");
                            assert_eq!(r, i as i64 + 1);
                        })
                        .buffer_unordered(1024)
                        .count(),
                );
                format!("every connection still answers: {answered} of {} answered a call", conns.len())
            }
            ["load", n, calls, in_flight] => {
                let (n, calls, in_flight): (usize, usize, usize) =
                    (n.parse().expect("n"), calls.parse().expect("calls"), in_flight.parse().expect("in flight"));
                let n = n.min(conns.len());
                let each = calls / in_flight;
                let elapsed = rt.block_on(async {
                    let start = Instant::now();
                    let work = conns[..n].iter().flat_map(|conn| {
                        (0..in_flight).map(move |w| async move {
                            for k in 0..each as i64 {
                                let r: i64 = conn.handle().request("add", (w as i64, k)).await.expect("call");
                                assert_eq!(r, w as i64 + k);
                            }
                        })
                    });
                    futures::future::join_all(work).await;
                    start.elapsed()
                });
                let total = n * in_flight * each;
                format!("{total} {:.0}", total as f64 / elapsed.as_secs_f64())
            }
            ["close"] => {
                let closing = std::mem::take(&mut conns);
                rt.block_on(futures::future::join_all(closing.into_iter().map(Connection::close)));
                "closed".to_owned()
            }
            other => panic!("unknown command {other:?}"),
        };
        println!("{answer}");
        std::io::stdout().flush().expect("flush");
    }
}
