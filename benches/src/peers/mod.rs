//! The peers, each through its own custom-method facility, doing the same work as ours: `add`,
//! `echo` and a counted `tick` notification.

pub mod async_lsp;
pub mod jsonrpsee;
pub mod tower_lsp;
