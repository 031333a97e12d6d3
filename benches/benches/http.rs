//! JSON-RPC over HTTP/1.1 keep-alive: our server (`ServerBuilder::bind_http`) against jsonrpsee
//! 0.26's HTTP server, in the same run, interleaved: calls/s and the server's CPU time per call.
//!
//! A third contender is the floor: a **hand-written** minimal HTTP/1.1 keep-alive JSON-RPC server
//! ([`floor`]) on plain tokio sockets in the same runtime, one task per connection: it reads into
//! a buffer, finds each head's end (`\r\n\r\n`), takes `Content-Length` from it, parses the body
//! with serde_json into a minimal request struct, computes `add`, and answers with the status
//! line, two headers (`content-type`, `content-length`) and the body; every request complete in
//! the buffer is answered, in order, and their answers go out in one write (pipelining-correct:
//! a pipelined burst read at once is answered with one `write`, as hyper's `pipeline_flush`
//! would). No hyper, no tower, no `Date` header, no timers, no allow-lists, no error paths
//! beyond closing the connection on anything it does not expect. It is what any
//! implementation's throughput is bounded by on this kernel and runtime: the column
//! "hand-written ÷ jsonrpsee" is the most any server could gain over jsonrpsee here.
//!
//! The servers run in this process (a tokio runtime of 2 workers, on a thread of its own) and
//! serve `add`; the load
//! comes from this binary re-run as a client process (`--client`). A server's CPU time is that
//! of the runtime's worker threads over the run (each thread's `schedstat`, in nanoseconds; the
//! main thread, which starts the client processes, is left out), so it is the server's alone;
//! the client measures its own the same way, and the table shows it per call too (a load
//! generator that costs about what the server does takes the cores the server needs and pulls
//! every ratio toward 1). The client is the same hand-written HTTP/1.1 client for both, one
//! thread on plain tokio sockets (fixed request bytes, responses parsed by status line and
//! `Content-Length`, each checked to be a `200` with the right result):
//!
//! - `1 in flight`: one connection, one call at a time;
//! - `64 in flight, pipelined`: one connection, 64 requests written ahead (HTTP/1.1 pipelining);
//! - `64 connections`: 64 connections, one call at a time each (64 in flight);
//! - `100 connections`: 100 connections, one call at a time each.
//!
//! Then the HTTP clients: ours (`Builder::connect_http`) and jsonrpsee's `HttpClient`, each run
//! in a client process calling our server, 1 and 64 calls in flight: calls/s and the client
//! process's CPU per call (`HTTP_CLIENTS=off` leaves them out).
//!
//! `cargo bench -p jsonrpc-duplex-benches --bench http` (medians of 3; `BENCH_QUICK=1`: a
//! hundredth of the calls, once). For a profile of one server in one scenario (callgrind, perf):
//! `HTTP_ONLY=ours` (or `jsonrpsee`, `hand-written`), `HTTP_SCENARIO=100` (a part of the scenario's name) and
//! `HTTP_CALLS=N` (calls per run); `HTTP_TIMEOUTS=off` runs ours without its read timeouts;
//! `HTTP_WORKERS=current` (or a number) puts the three servers on a current-thread runtime (or that
//! many workers).

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

/// Run this binary as a client process with `args` and read what it reports: the seconds it
/// took and its own CPU seconds, with the CPU this process's other threads (the servers, all but
/// `main_thread`) spent meanwhile.
fn run_client(exe: &std::path::Path, args: &[&str], main_thread: u32) -> (f64, f64, Duration) {
    let cpu_before = threads_cpu(Some(main_thread));
    let out = Command::new(exe).args(args).output().expect("run the client");
    let cpu = threads_cpu(Some(main_thread)).saturating_sub(cpu_before);
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    let mut said = said.split_whitespace().map(|f| f.parse::<f64>().expect("seconds"));
    (said.next().expect("elapsed"), said.next().expect("client CPU"), cpu)
}

/// CPU time the threads of this process other than `skip` have run so far, in nanoseconds, from
/// each thread's `/proc/self/task/TID/schedstat` (the scheduler's own count, not 10 ms ticks).
/// The server side skips its main thread, which only starts the client processes: what remains
/// is the runtime's workers, the servers' own threads.
fn threads_cpu(skip: Option<u32>) -> Duration {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let tid: Option<u32> = task.file_name().to_str().and_then(|t| t.parse().ok());
        if tid.is_some() && tid == skip {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += stat.split_whitespace().next().and_then(|ns| ns.parse::<u64>().ok()).unwrap_or(0);
    }
    Duration::from_nanos(total)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--client") {
        let addr: SocketAddr = args[i + 1].parse().expect("addr");
        let (conns, depth, calls): (usize, usize, usize) =
            (args[i + 2].parse().unwrap(), args[i + 3].parse().unwrap(), args[i + 4].parse().unwrap());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let cpu_before = threads_cpu(None);
        let elapsed = rt.block_on(load(addr, conns, depth, calls));
        let cpu = threads_cpu(None).saturating_sub(cpu_before);
        println!("{} {}", elapsed.as_secs_f64(), cpu.as_secs_f64());
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--rpc-client") {
        let kind = args[i + 1].clone();
        let url = format!("http://{}/", args[i + 2]);
        let (in_flight, calls): (usize, usize) = (args[i + 3].parse().unwrap(), args[i + 4].parse().unwrap());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let cpu_before = threads_cpu(None);
        let elapsed = rt.block_on(rpc_load(&kind, &url, in_flight, calls));
        let cpu = threads_cpu(None).saturating_sub(cpu_before);
        println!("{} {}", elapsed.as_secs_f64(), cpu.as_secs_f64());
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    // The servers live on a thread of their own, on a runtime it drives: `HTTP_WORKERS=current`
    // a current-thread runtime (one thread: no workers waking each other), a number that many
    // workers (2 by default). The main thread only starts client processes.
    let (addrs_tx, addrs_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server_thread = std::thread::spawn(move || {
        let rt = match std::env::var("HTTP_WORKERS").ok().as_deref() {
            Some("current") => tokio::runtime::Builder::new_current_thread().enable_all().build(),
            workers => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers.and_then(|n| n.parse().ok()).unwrap_or(2))
                .enable_all()
                .build(),
        }
        .expect("runtime");
        rt.block_on(async {
            let router =
                Router::new().method("add", |(a, b): (i64, i64), _| async move { Ok::<_, ErrorObject>(a + b) });
            // `HTTP_TIMEOUTS=off`: ours without its header and body read timeouts (what they
            // cost; jsonrpsee's server has neither).
            let timeouts_off = std::env::var("HTTP_TIMEOUTS").is_ok_and(|v| v == "off");
            let builder = Server::builder().serve(router);
            let builder = if timeouts_off { builder.message_read_timeout(None) } else { builder };
            let ours = builder.bind_http("127.0.0.1:0").await.expect("bind ours");
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
            let theirs_addr = server.local_addr().expect("bound");
            let theirs = server.start(module);
            let floor_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind hand-written");
            let floor_addr = floor_listener.local_addr().expect("bound");
            let floor = tokio::spawn(floor::serve(floor_listener));
            addrs_tx.send((ours.local_addr(), theirs_addr, floor_addr)).expect("report the addresses");
            let _ = stop_rx.await;
            floor.abort();
            ours.shutdown(Duration::from_secs(1)).await;
            let _ = theirs.stop();
        });
    });
    let (ours_addr, theirs_addr, floor_addr) = addrs_rx.recv().expect("the servers started");
    let stop = move || {
        let _ = stop_tx.send(());
        server_thread.join().expect("the servers' thread");
    };
    let only = std::env::var("HTTP_ONLY").ok();
    let servers: Vec<_> = [("ours", ours_addr), ("jsonrpsee 0.26", theirs_addr), ("hand-written", floor_addr)]
        .into_iter()
        .filter(|(name, _)| only.as_deref().is_none_or(|only| name.starts_with(only)))
        .collect();
    let scenario_filter = std::env::var("HTTP_SCENARIO").ok();
    let calls_override: Option<usize> = std::env::var("HTTP_CALLS").ok().and_then(|n| n.parse().ok());
    let scenarios = [
        ("1 in flight (1 connection)", 1, 1, sized(20_000)),
        ("64 in flight, pipelined (1 connection)", 1, 64, sized(200_000)),
        ("64 connections, 1 in flight each", 64, 1, sized(100_000)),
        ("100 connections, 1 in flight each", 100, 1, sized(100_000)),
    ]
    .into_iter()
    .map(|(name, conns, depth, calls)| (name, conns, depth, calls_override.unwrap_or(calls)))
    .filter(|(name, ..)| scenario_filter.as_deref().is_none_or(|part| name.contains(part)));
    let exe = std::env::current_exe().expect("own path");
    let main_thread = std::process::id();
    println!(
        "JSON-RPC over HTTP/1.1 keep-alive, loopback; the server in this process (2 workers), the load from a client process."
    );
    println!(
        "Medians of {} runs, interleaved.{}\n",
        reps(3),
        if quick() { " QUICK: figures meaningless." } else { "" }
    );
    println!(
        "| scenario | ours calls/s | jsonrpsee calls/s | hand-written calls/s | ours ÷ jsonrpsee | hand-written ÷ jsonrpsee | ours server CPU/call | jsonrpsee server CPU/call | hand-written server CPU/call | ours ÷ jsonrpsee | hand-written ÷ jsonrpsee | client CPU/call (ours / jsonrpsee / hand-written runs) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, conns, depth, calls) in scenarios {
        let mut rates = vec![Vec::new(); servers.len()];
        let mut cpus = vec![Vec::new(); servers.len()];
        let mut client_cpus = vec![Vec::new(); servers.len()];
        for _ in 0..reps(3) {
            for (i, (_, addr)) in servers.iter().enumerate() {
                let (secs, client_secs, cpu) = run_client(
                    &exe,
                    &["--client", &addr.to_string(), &conns.to_string(), &depth.to_string(), &calls.to_string()],
                    main_thread,
                );
                rates[i].push(calls as f64 / secs);
                cpus[i].push(cpu.as_secs_f64() * 1e6 / calls as f64);
                client_cpus[i].push(client_secs * 1e6 / calls as f64);
            }
        }
        let rate: Vec<f64> = rates.into_iter().map(jsonrpc_duplex_benches::harness::median).collect();
        let cpu: Vec<f64> = cpus.into_iter().map(jsonrpc_duplex_benches::harness::median).collect();
        let client: Vec<f64> = client_cpus.into_iter().map(jsonrpc_duplex_benches::harness::median).collect();
        if let [rate0, rate1, rate2] = rate[..]
            && let [cpu0, cpu1, cpu2] = cpu[..]
            && let [client0, client1, client2] = client[..]
        {
            println!(
                "| {name} | {rate0:.0} | {rate1:.0} | {rate2:.0} | {:.2} | {:.2} | {cpu0:.2} µs | {cpu1:.2} µs | {cpu2:.2} µs | {:.2} | {:.2} | {client0:.2} / {client1:.2} / {client2:.2} µs |",
                rate0 / rate1,
                rate2 / rate1,
                cpu0 / cpu1,
                cpu2 / cpu1
            );
        } else {
            // Some of the servers (HTTP_ONLY): their figures alone.
            for (i, (server, _)) in servers.iter().enumerate() {
                println!(
                    "| {name} | {server} | {:.0} calls/s | {:.2} µs server CPU/call | {:.2} µs client CPU/call |",
                    rate[i], cpu[i], client[i]
                );
            }
        }
        let _ = std::io::stdout().flush();
    }
    if std::env::var("HTTP_CLIENTS").is_ok_and(|v| v == "off") {
        stop();
        return;
    }
    // The clients: ours (`Builder::connect_http`, a `Connection` whose calls are POSTs) and
    // jsonrpsee's `HttpClient`, each in a client process of its own calling our server.
    println!(
        "\nThe HTTP clients, calling our server: ours (`Connection::builder().connect_http`) and jsonrpsee 0.26's `HttpClient`, each in a client process (1 thread); CPU per call of the client process and of the server.\n"
    );
    println!(
        "| calls in flight | ours calls/s | jsonrpsee calls/s | ours ÷ jsonrpsee | ours client CPU/call | jsonrpsee client CPU/call | ours ÷ jsonrpsee | server CPU/call (ours / jsonrpsee runs) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let addr = ours_addr.to_string();
    for (in_flight, calls) in [(1, sized(10_000)), (64, sized(50_000))] {
        let calls = calls_override.unwrap_or(calls);
        if scenario_filter.as_deref().is_some_and(|part| !format!("client {in_flight}").contains(part)) {
            continue;
        }
        let mut figures = vec![(Vec::new(), Vec::new(), Vec::new()); 2];
        for _ in 0..reps(3) {
            for (kind, figures) in ["ours", "jsonrpsee"].into_iter().zip(figures.iter_mut()) {
                let (secs, client_secs, cpu) = run_client(
                    &exe,
                    &["--rpc-client", kind, &addr, &in_flight.to_string(), &calls.to_string()],
                    main_thread,
                );
                figures.0.push(calls as f64 / secs);
                figures.1.push(client_secs * 1e6 / calls as f64);
                figures.2.push(cpu.as_secs_f64() * 1e6 / calls as f64);
            }
        }
        let [ours_fig, theirs_fig] = [0, 1].map(|i| {
            let (rate, client, server) = figures[i].clone();
            use jsonrpc_duplex_benches::harness::median;
            (median(rate), median(client), median(server))
        });
        println!(
            "| {in_flight} | {:.0} | {:.0} | {:.2} | {:.2} µs | {:.2} µs | {:.2} | {:.2} / {:.2} µs |",
            ours_fig.0,
            theirs_fig.0,
            ours_fig.0 / theirs_fig.0,
            ours_fig.1,
            theirs_fig.1,
            ours_fig.1 / theirs_fig.1,
            ours_fig.2,
            theirs_fig.2
        );
        let _ = std::io::stdout().flush();
    }
    stop();
}

/// `calls` calls of `add` with `in_flight` at once, through the RPC client `kind`; how long
/// they took (each answer checked).
async fn rpc_load(kind: &str, url: &str, in_flight: usize, calls: usize) -> Duration {
    use futures::StreamExt;
    use jsonrpsee::core::client::ClientT;
    let started;
    if kind == "ours" {
        let client = jsonrpc_duplex::Connection::builder().connect_http(url).expect("url");
        let handle = client.handle();
        // One call first: the connection is made before the clock starts, as for jsonrpsee.
        assert_eq!(handle.request::<i64>("add", (1, 2)).await.expect("call"), 3);
        started = Instant::now();
        futures::stream::iter(0..calls)
            .map(|_| handle.request::<i64>("add", (1, 2)))
            .buffer_unordered(in_flight)
            .for_each(|sum| async move { assert_eq!(sum.expect("call"), 3) })
            .await;
    } else {
        let client = jsonrpsee_http_client::HttpClientBuilder::default().build(url).expect("url");
        let call = || client.request::<i64, _>("add", jsonrpsee::rpc_params![1, 2]);
        assert_eq!(call().await.expect("call"), 3);
        started = Instant::now();
        futures::stream::iter(0..calls)
            .map(|_| call())
            .buffer_unordered(in_flight)
            .for_each(|sum| async move { assert_eq!(sum.expect("call"), 3) })
            .await;
    }
    started.elapsed()
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

/// The floor: a hand-written minimal HTTP/1.1 keep-alive JSON-RPC server on plain tokio
/// sockets, serving `add` (see the module docs). Not a server to deploy: it trusts the client
/// (the bench's own), checks nothing the bench does not need, and closes the connection on
/// anything else.
mod floor {
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// A head longer than this, or a body declared longer, closes the connection.
    const MAX_HEAD: usize = 16 * 1024;
    const MAX_BODY: usize = 1024 * 1024;

    /// The request, as little of it as `add` needs (the id kept as spelled).
    #[derive(Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
        method: &'a str,
        params: (i64, i64),
    }

    /// Accept connections for ever, a task for each.
    pub(crate) async fn serve(listener: TcpListener) {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            tokio::spawn(connection(stream));
        }
    }

    /// One keep-alive connection: answer every complete request in the buffer, in order, in one
    /// write; then read more.
    async fn connection(mut stream: TcpStream) {
        let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
        let mut out: Vec<u8> = Vec::with_capacity(8 * 1024);
        loop {
            let mut at = 0;
            loop {
                match request(&buf[at..]) {
                    Parsed::Complete { head, body } => {
                        let Some(()) = answer(&buf[at + head..at + head + body], &mut out) else { return };
                        at += head + body;
                    }
                    Parsed::Partial => break,
                    Parsed::Refused => return,
                }
            }
            buf.drain(..at);
            if !out.is_empty() {
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                out.clear();
            }
            if buf.capacity() - buf.len() < 4096 {
                buf.reserve(8 * 1024);
            }
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }

    enum Parsed {
        /// A whole request: its head's length (with the blank line) and its body's.
        Complete { head: usize, body: usize },
        /// Not all there yet.
        Partial,
        /// Not a request this server takes: the connection closes.
        Refused,
    }

    /// The first request in `buf`, if it is all there.
    fn request(buf: &[u8]) -> Parsed {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            return if buf.len() > MAX_HEAD { Parsed::Refused } else { Parsed::Partial };
        };
        let head = &buf[..end];
        if !head.starts_with(b"POST ") {
            return Parsed::Refused;
        }
        let mut length = None;
        for line in head.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:") {
                length = std::str::from_utf8(&line[15..]).ok().and_then(|v| v.trim().parse::<usize>().ok());
            }
        }
        match length {
            Some(body) if body <= MAX_BODY => {
                let head = end + 4;
                if buf.len() >= head + body { Parsed::Complete { head, body } } else { Parsed::Partial }
            }
            _ => Parsed::Refused,
        }
    }

    /// Append the answer to `body` to `out`: status line, headers and body.
    fn answer(body: &[u8], out: &mut Vec<u8>) -> Option<()> {
        use std::io::Write;
        let call: Call<'_> = serde_json::from_slice(body).ok()?;
        if call.method != "add" {
            return None;
        }
        let sum = call.params.0.wrapping_add(call.params.1);
        // The sum's digits, on the stack (no allocation per call).
        let mut digits = [0u8; 20];
        let digits = {
            let mut free = &mut digits[..];
            write!(free, "{sum}").ok()?;
            let used = 20 - free.len();
            &digits[..used]
        };
        let id = call.id.get();
        let len = r#"{"jsonrpc":"2.0","id":,"result":}"#.len() + id.len() + digits.len();
        write!(out, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n").ok()?;
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(digits);
        out.push(b'}');
        Some(())
    }
}
