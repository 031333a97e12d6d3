//! Shared pieces of the benchmark harness: timing, medians, and the table printer; and the
//! contenders of `benches/compare.rs`, one module each.

pub mod alloc;
pub mod handwritten;
pub mod harness;
pub mod ours;
pub mod peers;

use std::time::{Duration, Instant};

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

/// Operations per second for `ops` operations done in `d`.
pub fn per_sec(ops: usize, d: Duration) -> f64 {
    ops as f64 / d.as_secs_f64()
}
