//! The `net` area of the integration tests: one test binary (one link step) for the files
//! of `tests/net/`, each a module. Run it alone with `cargo test --all-features --test net`,
//! one file of it with `cargo test --all-features --test net -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod http;
pub mod http_attack;
pub mod http_client;
pub mod http_duplex;
pub mod http_order;
pub mod isolation;
pub mod kv_example_bounds;
pub mod load;
pub mod server;
pub mod timeouts;
pub mod transports;
pub mod ws_interop;
