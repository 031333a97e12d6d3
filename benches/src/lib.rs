//! Shared pieces of the benchmark harness: timing, medians, and the table printer; and the
//! contenders of `benches/compare.rs`, one module each.

pub mod alloc;
pub mod handwritten;
pub mod harness;
pub mod ours;
pub mod peers;

use std::time::{Duration, Instant};

/// A quick run (`BENCH_QUICK=1`; what the README's tests run): every bench at a hundredth of
/// its sizes with one repetition, to prove that it runs to its end in seconds. Its figures mean
/// nothing.
pub fn quick() -> bool {
    std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `n`, or a hundredth of it (at least 1) in a [`quick`] run.
pub fn sized(n: usize) -> usize {
    if quick() { (n / 100).max(1) } else { n }
}

/// `reps` repetitions, or 1 in a [`quick`] run.
pub fn reps(reps: usize) -> usize {
    if quick() { 1 } else { reps }
}

/// Run `f` `reps` times (after one warm-up) and return the median duration.
pub fn median_of<F: FnMut() -> Duration>(reps: usize, mut f: F) -> Duration {
    let _ = f();
    let mut samples: Vec<Duration> = (0..reps).map(|_| f()).collect();
    samples.sort();
    samples[samples.len() / 2]
}

/// Time one closure.
pub fn time<F: FnOnce()>(f: F) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// The machine a table was measured on, for its heading: `cores: N, CPU: NAME`, the processor's
/// name being the first `model name` of `/proc/cpuinfo` (Linux; `unknown` where there is none).
/// A build's ratios to the hand-written loop move with the kind of processor (newline row A on
/// one worker thread read 1.04 to 1.07 on one host and 0.97 on an AMD EPYC host, the same source).
pub fn machine() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = info
        .lines()
        .find_map(|line| Some(line.strip_prefix("model name")?.split_once(':')?.1.trim().to_owned()))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("cores: {cores}, CPU: {cpu}")
}

/// Operations per second for `ops` operations done in `d`.
pub fn per_sec(ops: usize, d: Duration) -> f64 {
    ops as f64 / d.as_secs_f64()
}
