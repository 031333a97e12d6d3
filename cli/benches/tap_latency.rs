//! What `jrpc tap` adds to each message: the same request loop against the reference peer
//! (`examples/conformance_peer.rs`, built in release), once direct and once through the tap
//! (with and without a trace file), interleaved in rounds so that the machine's noise falls on
//! all of them alike.
//!
//! ```text
//! cargo bench -p jsonrpc-duplex-cli --bench tap_latency
//! TAP_LATENCY_CALLS=50000 TAP_LATENCY_ROUNDS=10 cargo bench -p jsonrpc-duplex-cli --bench tap_latency
//! ```
//!
//! Each call is one request and its answer: two messages, each crossing the tap once. The added
//! latency per message is half the added round trip.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jsonrpc_duplex_core::{Connection, Framing};
use tokio::process::Command;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Direct,
    Tap,
    TapWithTrace,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Tap => "through `jrpc tap`",
            Mode::TapWithTrace => "through `jrpc tap --out trace.jsonl`",
        }
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `target/release/` (this bench runs from `target/release/deps/`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's path");
    exe.parent().and_then(Path::parent).expect("a bench in target/<profile>/deps").to_owned()
}

/// The reference peer, built in release when missing.
fn conformance_peer() -> PathBuf {
    let path = profile_dir().join("examples").join(format!("conformance_peer{}", std::env::consts::EXE_SUFFIX));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--release", "-p", "jsonrpc-duplex", "--example", "conformance_peer"])
        .status()
        .expect("cargo can be run");
    assert!(status.success(), "building the conformance_peer example failed");
    assert!(path.is_file(), "no conformance_peer at {}", path.display());
    path
}

/// Latencies of `calls` sequential `echo` calls, after `warmup` unmeasured ones.
async fn run(mode: Mode, peer: &Path, trace: &Path, calls: usize, warmup: usize) -> Vec<Duration> {
    let mut command = match mode {
        Mode::Direct => Command::new(peer),
        Mode::Tap | Mode::TapWithTrace => {
            let mut command = Command::new(env!("CARGO_BIN_EXE_jrpc"));
            command.arg("tap");
            if mode == Mode::TapWithTrace {
                command.arg("--out").arg(trace);
            }
            command.arg("--").arg(peer);
            command
        }
    };
    command.env("RUST_LOG", "error");
    let conn = Connection::builder().framing(Framing::ContentLength).spawn_child(command).expect("the peer starts");
    let peer = conn.handle();
    let params =
        serde_json::json!({"textDocument": {"uri": "file:///tmp/a.py"}, "position": {"line": 8, "character": 24}});
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..warmup + calls {
        let started = Instant::now();
        let echoed: serde_json::Value = peer.request("echo", &params).await.expect("echo answers");
        let took = started.elapsed();
        assert_eq!(echoed, params);
        if i >= warmup {
            latencies.push(took);
        }
    }
    conn.close().await;
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that names another bench means: not this one.
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && !"tap_latency".contains(a.as_str())) {
        return;
    }
    let calls = env_number("TAP_LATENCY_CALLS", 20_000);
    let rounds = env_number("TAP_LATENCY_ROUNDS", 5).max(1);
    let peer = conformance_peer();
    let trace = std::env::temp_dir().join(format!("jrpc-tap-latency-{}.jsonl", std::process::id()));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let modes = [Mode::Direct, Mode::Tap, Mode::TapWithTrace];
    let mut all: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    println!("{rounds} rounds of {} sequential `echo` calls per mode, interleaved", calls / rounds);
    for round in 0..rounds {
        for k in 0..modes.len() {
            // Alternate the order so that no mode always runs first.
            let i = if round % 2 == 0 { k } else { modes.len() - 1 - k };
            all[i].extend(runtime.block_on(run(modes[i], &peer, &trace, calls / rounds, 200)));
        }
    }
    let _ = std::fs::remove_file(&trace);
    let mut medians = Vec::new();
    println!("{:<40} {:>12} {:>12}", "round trip (request + answer)", "p50", "p99");
    for (mode, latencies) in modes.iter().zip(&mut all) {
        latencies.sort();
        let (p50, p99) = (percentile(latencies, 0.5), percentile(latencies, 0.99));
        medians.push((p50, p99));
        println!("{:<40} {:>10.1}µs {:>10.1}µs", mode.name(), micros(p50), micros(p99));
    }
    println!();
    println!("{:<40} {:>12} {:>12}", "added per message (half the round trip)", "p50", "p99");
    for (i, mode) in modes.iter().enumerate().skip(1) {
        let added = |tap: Duration, direct: Duration| (micros(tap) - micros(direct)) / 2.0;
        println!(
            "{:<40} {:>10.1}µs {:>10.1}µs",
            mode.name(),
            added(medians[i].0, medians[0].0),
            added(medians[i].1, medians[0].1)
        );
    }
}
