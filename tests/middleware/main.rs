//! The `middleware` area of the integration tests: one test binary (one link step) for the files
//! of `tests/middleware/`, each a module. Run it alone with `cargo test --all-features --test middleware`,
//! one file of it with `cargo test --all-features --test middleware -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod auth;
pub mod context;
pub mod hooks;
pub mod layers;
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
pub mod tower;
pub mod trace;
