//! The `fault` area of the integration tests: one test binary (one link step) for the files
//! of `tests/fault/`, each a module. Run it alone with `cargo test --all-features --test fault`,
//! one file of it with `cargo test --all-features --test fault -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod io;
pub mod limits;
pub mod load;
pub mod mcp_http;
pub mod mcp_http_modern;
pub mod mcp_http_stateless;
pub mod peer_death;
pub mod slow_peer;
