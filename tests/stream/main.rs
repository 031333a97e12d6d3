//! The `stream` area of the integration tests: one test binary (one link step) for the files
//! of `tests/stream/`, each a module. Run it alone with `cargo test --all-features --test stream`,
//! one file of it with `cargo test --all-features --test stream -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod backpressure;
pub mod cancel;
pub mod macro_streams;
pub mod wire;
