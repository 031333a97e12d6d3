//! The `rpc` area of the integration tests: one test binary (one link step) for the files
//! of `tests/rpc/`, each a module. Run it alone with `cargo test --all-features --test rpc`,
//! one file of it with `cargo test --all-features --test rpc -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod duplex;
pub mod errors;
pub mod names;
pub mod openrpc;
pub mod params;
pub mod passthrough;
pub mod progress_in_params;
pub mod progress_wire;
pub mod service_arc;
pub mod sides;
