//! JSON-RPC over HTTP/1.1 keep-alive: our server (`ServerBuilder::bind_http`) against jsonrpsee
//! 0.26's HTTP server, in the same run, interleaved: calls/s and the server's CPU time per call.
//!
//! Both servers run in this process (a tokio runtime of 2 workers) and serve `add`; the load
//! comes from this binary re-run as a client process (`--client`), so that the CPU time this
//! process spends (utime + stime from /proc/self/stat over the run) is the server's alone. The
//! client is the same hand-written HTTP/1.1 client for both (fixed request bytes, responses
//! parsed by `Content-Length`, each checked to be a `200` with the right result):
//!
//! - `1 in flight`: one connection, one call at a time;
//! - `64 in flight, pipelined`: one connection, 64 requests written ahead (HTTP/1.1 pipelining);
//! - `64 connections`: 64 connections, one call at a time each (64 in flight);
//! - `100 connections`: 100 connections, one call at a time each.
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench http` (medians of 3; `BENCH_QUICK=1`: a
//! hundredth of the calls, once). For a profile of one server in one scenario (callgrind, perf):
//! `HTTP_ONLY=ours` (or `jsonrpsee`) and `HTTP_SCENARIO=100` (a part of the scenario's name).

use std::io::Write;
use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use jsonrpc_duplex::server::Server;
use jsonrpc_duplex::{ErrorObject, Router};
use jsonrpc_duplex_benches::{quick, reps, sized};
use jsonrpsee::server::{RpcModule, Server as JServer, ServerConfig};
use jsonrpsee::types::ErrorObjectOwned;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;

/// CPU time of this process so far (user + system), from /proc/self/stat (clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // Fields 14 and 15 of the file; after the command name, 12 and 13 (0-based, from `state`).
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--client") {
        let addr: SocketAddr = args[i + 1].parse().expect("addr");
        let (conns, depth, calls): (usize, usize, usize) =
            (args[i + 2].parse().unwrap(), args[i + 3].parse().unwrap(), args[i + 4].parse().unwrap());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let elapsed = rt.block_on(load(addr, conns, depth, calls));
        println!("{}", elapsed.as_secs_f64());
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let (ours, theirs) = rt.block_on(async {
        let router = Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
        let ours = Server::builder().serve(router).bind_http("127.0.0.1:0").await.expect("bind ours");
        let mut module = RpcModule::new(());
        module
            .register_method("add", |p, _, _| {
                let (a, b): (i64, i64) = p.parse()?;
                Ok::<_, ErrorObjectOwned>(a + b)
            })
            .expect("register");
        let server = JServer::builder()
            .set_config(ServerConfig::builder().http_only().max_connections(10_000).build())
            .build("127.0.0.1:0")
            .await
            .expect("bind jsonrpsee");
        let addr = server.local_addr().expect("bound");
        (ours, (addr, server.start(module)))
    });
    let only = std::env::var("HTTP_ONLY").ok();
    let servers: Vec<_> = [("ours", ours.local_addr()), ("jsonrpsee 0.26", theirs.0)]
        .into_iter()
        .filter(|(name, _)| only.as_deref().is_none_or(|only| name.starts_with(only)))
        .collect();
    let scenario_filter = std::env::var("HTTP_SCENARIO").ok();
    let scenarios = [
        ("1 in flight (1 connection)", 1, 1, sized(20_000)),
        ("64 in flight, pipelined (1 connection)", 1, 64, sized(200_000)),
        ("64 connections, 1 in flight each", 64, 1, sized(100_000)),
        ("100 connections, 1 in flight each", 100, 1, sized(100_000)),
    ]
    .into_iter()
    .filter(|(name, ..)| scenario_filter.as_deref().is_none_or(|part| name.contains(part)));
    let exe = std::env::current_exe().expect("own path");
    println!(
        "JSON-RPC over HTTP/1.1 keep-alive, loopback; the server in this process (2 workers), the load from a client process."
    );
    println!(
        "Medians of {} runs, interleaved.{}\n",
        reps(3),
        if quick() { " QUICK: figures meaningless." } else { "" }
    );
    println!(
        "| scenario | ours calls/s | jsonrpsee calls/s | ours ÷ jsonrpsee | ours server CPU/call | jsonrpsee server CPU/call |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, conns, depth, calls) in scenarios {
        let mut rates = vec![Vec::new(); servers.len()];
        let mut cpus = vec![Vec::new(); servers.len()];
        for _ in 0..reps(3) {
            for (i, (_, addr)) in servers.iter().enumerate() {
                let cpu_before = cpu_time();
                let out = Command::new(&exe)
                    .args(["--client", &addr.to_string(), &conns.to_string(), &depth.to_string(), &calls.to_string()])
                    .output()
                    .expect("run the client");
                let cpu = cpu_time().saturating_sub(cpu_before);
                assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
                let secs: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("seconds");
                rates[i].push(calls as f64 / secs);
                cpus[i].push(cpu.as_secs_f64() * 1e6 / calls as f64);
            }
        }
        let rate: Vec<f64> = rates.into_iter().map(jsonrpc_duplex_benches::harness::median).collect();
        let cpu: Vec<f64> = cpus.into_iter().map(jsonrpc_duplex_benches::harness::median).collect();
        if let [rate0, rate1] = rate[..]
            && let [cpu0, cpu1] = cpu[..]
        {
            println!("| {name} | {rate0:.0} | {rate1:.0} | {:.2} | {cpu0:.1} µs | {cpu1:.1} µs |", rate0 / rate1);
        } else {
            // One server (HTTP_ONLY): its figures alone.
            println!("| {name} | {} | {:.0} calls/s | {:.1} µs |", servers[0].0, rate[0], cpu[0]);
        }
        let _ = std::io::stdout().flush();
    }
    rt.block_on(async {
        ours.shutdown(Duration::from_secs(1)).await;
        let _ = theirs.1.stop();
    });
}

/// `conns` connections, each keeping `depth` requests in flight, `calls` in all; how long it took.
async fn load(addr: SocketAddr, conns: usize, depth: usize, calls: usize) -> Duration {
    let request = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let mut streams = Vec::with_capacity(conns);
    for _ in 0..conns {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        streams.push(stream);
    }
    let per = calls / conns;
    let started = Instant::now();
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(i, stream)| {
            let n = if i == 0 { per + calls % conns } else { per };
            let request = request.clone();
            tokio::spawn(async move { run(stream, request.as_bytes(), depth, n).await })
        })
        .collect();
    for task in tasks {
        task.await.expect("client task");
    }
    started.elapsed()
}

async fn run(mut stream: TcpStream, request: &[u8], depth: usize, calls: usize) {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut sent, mut received) = (0, 0);
    let mut batch = Vec::new();
    while received < calls {
        let burst = (depth - (sent - received)).min(calls - sent);
        if burst > 0 {
            batch.clear();
            for _ in 0..burst {
                batch.extend_from_slice(request);
            }
            stream.write_all(&batch).await.expect("write");
            sent += burst;
        }
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection after {received} answers");
        buf.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        while let Some(len) = response_len(&buf[at..]) {
            let response = &buf[at..at + len];
            assert!(response.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(response));
            assert!(response.windows(10).any(|w| w == b"\"result\":3"), "{}", String::from_utf8_lossy(response));
            at += len;
            received += 1;
        }
        buf.drain(..at);
    }
}

/// The length of the first complete response in `buf`, if it is all there.
fn response_len(buf: &[u8]) -> Option<usize> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..head_end]).expect("ASCII headers");
    let len: usize = head
        .split("\r\n")
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
        })
        .expect("Content-Length");
    (buf.len() >= head_end + len).then_some(head_end + len)
}
