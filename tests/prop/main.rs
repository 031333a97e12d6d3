//! The `prop` area of the integration tests: one test binary (one link step) for the files
//! of `tests/prop/`, each a module. Run it alone with `cargo test --all-features --test prop`,
//! one file of it with `cargo test --all-features --test prop -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod framing;
pub mod fuzz_regressions;
pub mod messages;
pub mod model;
