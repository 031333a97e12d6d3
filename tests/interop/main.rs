//! The `interop` area of the integration tests: one test binary (one link step) for the files
//! of `tests/interop/`, each a module. Run it alone with `cargo test --all-features --test interop`,
//! one file of it with `cargo test --all-features --test interop -- NAME::` (CONTRIBUTING.md).

#[path = "../support/mod.rs"]
mod support;

pub mod acp;
pub mod lsp;
pub mod lsp_server;
pub mod mcp;
pub mod mcp_everything;
pub mod mcp_http;
pub mod sdk_bridge;
pub mod vscode;
pub mod vscode_progress;
