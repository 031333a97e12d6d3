//! The `jrpc` tool's integration tests: one test binary (one link step) for the files of
//! `cli/tests/jrpc/`, each a module for one subcommand. Run it alone with
//! `cargo test -p jsonrpc-duplex-cli --test jrpc`, one file of it with `-- NAME::`
//! (CONTRIBUTING.md). The README's `jrpc` lines are `readme.rs`, a binary of their own (CI runs
//! them with `--ignored`).

#[path = "../support/mod.rs"]
mod support;

pub mod call;
pub mod html;
pub mod replay;
pub mod show;
pub mod tap;
